package crdinstall

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Owned reports whether the live CRD is this operator's: whether its
// managedFields hold a server-side apply entry of fieldManager for the CRD
// itself (not its status). The API server writes managedFields on every
// change, so the record is the cluster's, survives restarts and is the
// same for every replica; a folder cannot write it through the operator
// (Install applies only the name, labels, annotations and spec of the
// folder's CRD, and checks ownership before it applies anything). The
// entry is there when
//   - the operator created the CRD (Install withdraws a create that met a
//     CRD that someone else created meanwhile);
//   - someone took the CRD over for it explicitly, with
//     `kubectl apply --server-side --field-manager=<the operator's>`;
//   - an operator before this check applied the folder's CRD over an
//     existing one (nothing tells that case apart).
//
// It stays while the operator owns at least one field, whatever others do
// to the CRD later (kubectl label, edit, a server-side apply of their own).
// A CRD whose managedFields were cleared, or whose every field was taken
// over with --force-conflicts, is no longer the operator's.
func Owned(c *apiextensionsv1.CustomResourceDefinition, fieldManager string) bool {
	return slices.ContainsFunc(c.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == fieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
	})
}

// Managers are the field managers of the CRD itself in its managedFields,
// once each in the API server's order; the managers of its status only
// (the API server's, which sets the conditions of every CRD) are left out.
func Managers(c *apiextensionsv1.CustomResourceDefinition) []string {
	return managersOf(c.ManagedFields)
}

func managersOf(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		if e.Subresource == "" && !slices.Contains(out, e.Manager) {
			out = append(out, e.Manager)
		}
	}
	return out
}

// NotOwnedError is a live CRD that this operator did not create (Owned is
// false): Install leaves it as it is.
type NotOwnedError struct {
	// CRD is the CRD's name.
	CRD string
	// FieldManager is the operator's.
	FieldManager string
	// Managers are the CRD's managers (Managers), the operator's left out.
	Managers []string
	// Source is the folder's CRD, for the command that takes the CRD
	// over: a crd.yaml path, or "" for a CRD generated from kind.yaml.
	Source string
	// CreatedMeanwhile: the CRD was absent when read, and someone else
	// created it before the operator's create-apply, which was withdrawn.
	CreatedMeanwhile bool
}

func (e *NotOwnedError) Error() string {
	managers := "no field manager recorded"
	if len(e.Managers) > 0 {
		managers = "managed by " + strings.Join(e.Managers, ", ")
	}
	why := fmt.Sprintf("no server-side apply of field manager %s in its managedFields; %s", e.FieldManager, managers)
	if e.CreatedMeanwhile {
		why = fmt.Sprintf("someone else created it between the operator's read and its create, the operator's apply was withdrawn; %s", managers)
	}
	file := e.Source
	if file == "" {
		file = "<the CRD that operator crd writes for the folder>"
	}
	return fmt.Sprintf("CRD %s was not created by this operator (%s): left unchanged. Leave it to its owner: remove crd.yaml from the folder (or the schema from kind.yaml); "+
		"or take it over explicitly, once: kubectl apply --server-side --field-manager=%s -f %s (with --force-conflicts to take the fields the others set too)",
		e.CRD, why, e.FieldManager, file)
}
