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
//   - kind.yaml's version (the hub), served, and every version kind.yaml's
//     versions lists, each with its own schema (spec free-form without
//     one, status the hub's), printer columns, served, storage and
//     deprecation (docs/versions.md). A CRD of several versions converts
//     through the operator's webhook (spec.conversion, strategy Webhook),
//     which renders the folder's conversion templates (engine/convert):
//     the default Service (DefaultWebhookService) until whoever installs
//     the CRD says where the operator is (SetConversionClient).
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
// (group, kind, version, scope and plural must agree); one of several
// versions converts through the operator's webhook, as a generated one. A folder with
// neither has no CRD here: ErrNoSchema.
package crd
