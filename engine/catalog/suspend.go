package catalog

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/ownership"
)

// suspendPathRE is a dotted path of field names: what kind.yaml's suspend
// may name ("spec.suspend", "spec.paused").
var suspendPathRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// validSuspend checks kind.yaml's suspend: a dotted path into the object,
// outside status (the operator's own: nobody else writes it) and metadata
// (it holds no booleans; the annotation is the per-object switch).
func (s *Spec) validSuspend() error {
	if s.Suspend == "" {
		return nil
	}
	if !suspendPathRE.MatchString(s.Suspend) {
		return fieldErr(fmt.Errorf("suspend %q: want a dotted path of field names, such as spec.suspend", s.Suspend), "suspend")
	}
	path := strings.Split(s.Suspend, ".")
	switch path[0] {
	case "status", "metadata", "apiVersion", "kind":
		return fieldErr(fmt.Errorf("suspend %q: the field must be in the object's spec (or another field its author writes), not %s; to suspend one object, annotate it %s: \"true\"",
			s.Suspend, path[0], ownership.AnnotationSuspend), "suspend")
	}
	if len(path) < 2 && path[0] == "spec" {
		return fieldErr(fmt.Errorf("suspend %q: name a boolean field of the spec, such as spec.suspend", s.Suspend), "suspend")
	}
	s.suspendPath = path
	return nil
}

// The ways an object is suspended (SuspendedBy).
const (
	SuspendedByAnnotation = "annotation"
	SuspendedByField      = "field"
)

// SuspendedBy reports whether obj is suspended, and how: by the annotation
// operator.tmplop.io/suspend: "true", or by the kind's suspend field set
// to the boolean true; "" when it is not. Any other value of either (a
// string "true" in the field, "yes" in the annotation) does not suspend.
func (k *Kind) SuspendedBy(obj *unstructured.Unstructured) (by, what string) {
	if obj.GetAnnotations()[ownership.AnnotationSuspend] == "true" {
		return SuspendedByAnnotation, "the annotation " + ownership.AnnotationSuspend + ": \"true\""
	}
	if p := k.Spec.suspendPath; len(p) > 0 {
		if v, ok, err := unstructured.NestedBool(obj.Object, p...); ok && err == nil && v {
			return SuspendedByField, k.Spec.Suspend + ": true"
		}
	}
	return "", ""
}
