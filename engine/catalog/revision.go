package catalog

import (
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/render"
)

// FieldObservedRevision is the status field of the revision an object was
// last reconciled with (engine/status writes it, engine/crd declares it).
const FieldObservedRevision = "observedRevision"

// RecordsRevision reports whether the kind's objects can hold
// status.observedRevision: a CRD the engine generates declares it; the
// status of a built-in kind is not the engine's; a folder's own crd.yaml
// must declare it in the status schema of the version kind.yaml watches
// (or keep the status's unknown fields), else the API server strips it
// from every write, and writing it would be a request per reconcile that
// changes nothing.
func (k *Kind) RecordsRevision() bool {
	if k.BuiltIn() {
		return false
	}
	if k.CRD == nil {
		return true
	}
	type props struct {
		Properties map[string]any `json:"properties"`
		Preserve   bool           `json:"x-kubernetes-preserve-unknown-fields"`
	}
	var c struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]props `json:"properties"`
						Preserve   bool             `json:"x-kubernetes-preserve-unknown-fields"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	for _, d := range render.SplitDocuments(k.CRD) {
		if render.Blank(d.Text) {
			continue
		}
		if yaml.Unmarshal(d.Text, &c) != nil {
			return false
		}
		break
	}
	for _, v := range c.Spec.Versions {
		if v.Name != k.GVK.Version {
			continue
		}
		root := v.Schema.OpenAPIV3Schema
		st, ok := root.Properties["status"]
		if !ok {
			return root.Preserve
		}
		_, declared := st.Properties[FieldObservedRevision]
		return declared || st.Preserve
	}
	return false
}

// Staged reports whether a change of the kind's folder rolls out in steps
// (kind.yaml rollout: steps): each object is then rendered with the
// revision the kind's rollout gives it.
func (k *Kind) Staged() bool { return k.Spec.Rollout.Staged() }
