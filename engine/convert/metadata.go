package convert

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// normalize makes out, a conversion's output for an object of src's kind,
// the object at version to: apiVersion and kind are filled in when out
// leaves them out and checked when it gives them; metadata is src's when
// out has none, else it may differ from src's only in labels and
// annotations, as the API server requires of a conversion (a webhook's
// response that changes anything else of metadata is refused whole).
func normalize(out, src map[string]any, to schema.GroupVersion) error {
	switch v, ok := out["apiVersion"]; {
	case !ok || v == nil || v == "":
		out["apiVersion"] = to.String()
	case v != to.String():
		return fmt.Errorf("apiVersion %v: a conversion to %s renders the object at %s (or leaves apiVersion out)", v, to.Version, to)
	}
	kind, _ := src["kind"].(string)
	switch v, ok := out["kind"]; {
	case !ok || v == nil || v == "":
		if kind != "" {
			out["kind"] = kind
		}
	case v != kind:
		return fmt.Errorf("kind %v: a conversion keeps the kind %s (or leaves kind out)", v, kind)
	}
	srcMeta, _ := src["metadata"].(map[string]any)
	v, ok := out["metadata"]
	if !ok || v == nil {
		if srcMeta != nil {
			out["metadata"] = deepCopyMap(srcMeta)
		}
		return nil
	}
	meta, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("metadata must be a mapping, got %T", v)
	}
	defer func() {
		// Empty labels or annotations are none, as the API server stores
		// them.
		for _, f := range []string{"labels", "annotations"} {
			if m, ok := meta[f].(map[string]any); ok && len(m) == 0 {
				delete(meta, f)
			}
		}
	}()
	keys := map[string]bool{}
	for k := range meta {
		keys[k] = true
	}
	for k := range srcMeta {
		keys[k] = true
	}
	// The identity first, for the clearest message, then the rest in order.
	order := []string{"name", "namespace", "uid"}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		if k == "labels" || k == "annotations" {
			if err := stringMap(meta, k); err != nil {
				return err
			}
			continue
		}
		if !equal(meta[k], srcMeta[k]) {
			return fmt.Errorf("metadata.%s changed: a conversion may change only labels and annotations", k)
		}
	}
	return nil
}

// stringMap checks that metadata's field (labels, annotations) is a
// mapping of strings, as the API server requires; null reads as absent.
func stringMap(meta map[string]any, field string) error {
	v, ok := meta[field]
	if !ok {
		return nil
	}
	if v == nil {
		delete(meta, field)
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("metadata.%s must be a mapping of strings, got %T", field, v)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, ok := m[k].(string); !ok {
			return fmt.Errorf("metadata.%s[%q] must be a string, got %v (%T): quote it", field, k, m[k], m[k])
		}
	}
	return nil
}

// metadataOf is obj's metadata, made when it has none.
func metadataOf(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	return meta
}

// annotations are obj's annotations, nil when it has none.
func annotations(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return ann
}

// withAnnotation is out's annotations, a copy, with key set to value.
func withAnnotation(out map[string]any, key, value string) map[string]any {
	ann := maps.Clone(annotations(out))
	if ann == nil {
		ann = map[string]any{}
	}
	ann[key] = value
	return ann
}

// setKept makes out's kept annotations src's (srcAnn), less the one of
// version to, which the step consumed: the engine owns them, whatever the
// template did with the annotations.
func setKept(out map[string]any, srcAnn map[string]any, to string) {
	ann := maps.Clone(annotations(out))
	changed := false
	for k := range ann {
		if isKept(k) {
			delete(ann, k)
			changed = true
		}
	}
	for k, v := range srcAnn {
		if isKept(k) && k != KeptAnnotation(to) {
			if ann == nil {
				ann = map[string]any{}
			}
			ann[k] = v
			changed = true
		}
	}
	if !changed {
		return
	}
	meta := metadataOf(out)
	if len(ann) == 0 {
		// The API server stores no empty annotations either.
		delete(meta, "annotations")
		return
	}
	meta["annotations"] = ann
}

func isKept(annotation string) bool { return strings.HasPrefix(annotation, keptPrefix) }

// comparable is what a round trip must give back of obj: everything but
// metadata, and of metadata its labels and annotations (empty ones as
// absent, kept annotations left out). A shallow copy.
func comparable(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "metadata" {
			out[k] = v
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	cm := map[string]any{}
	if labels, _ := meta["labels"].(map[string]any); len(labels) > 0 {
		cm["labels"] = labels
	}
	ann := map[string]any{}
	for k, v := range annotations(obj) {
		if !isKept(k) {
			ann[k] = v
		}
	}
	if len(ann) > 0 {
		cm["annotations"] = ann
	}
	// Always a mapping, so that a difference in labels is kept as the
	// labels', never as the whole metadata's.
	out["metadata"] = cm
	return out
}
