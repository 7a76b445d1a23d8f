// Package crd makes the CustomResourceDefinition of a kind folder, so that a
// folder is the one source of truth of its kind: `operator crd` writes it
// (crds/ is generated), and the tests apply it.
//
//	catalog: kind.yaml (short schema, printerColumns, validation) or crd.yaml -> Kind
//	  -> schema: the short schema -> OpenAPI
//	  -> crd (this package): ForKind -> CustomResourceDefinition -> YAML
//
// # What a generated CRD always has, and why
//
//   - One version, kind.yaml's, served and stored: a folder serves one
//     version; conversion between versions is out of the operator's scope.
//   - The status subresource: the engine writes .status through it, and a
//     spec change then bumps metadata.generation, which observedGeneration
//     reports on.
//   - status.observedGeneration and status.conditions (metav1.Conditions, a
//     map list keyed by type, as kubebuilder generates them): the engine
//     writes them on every kind, whatever status.yaml renders; without them
//     in the schema the API server would prune them.
//   - The printer columns Ready, Reason (with -o wide) and Age after the
//     folder's own, unless the folder names columns so: `kubectl get`
//     shows at once whether each object is up, and why not.
//
// A folder with a crd.yaml gets that CRD instead, checked against kind.yaml
// (group, kind, version, scope and plural must agree). A folder with
// neither has no CRD here: ErrNoSchema.
package crd
