package catalog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/ownership"
)

// The values of kind.yaml's drift.
const (
	// DriftRepair applies a drifted child again (the default): its fields
	// are back as rendered, and the repair is told in an Event.
	DriftRepair = "repair"
	// DriftWarn leaves a drifted child as it is and reports it in the
	// parent's Drifted condition, with the paths, and an Event.
	DriftWarn = "warn"
)

// DriftIgnoreSpec is one driftIgnore rule: the child kind it holds for
// (apiVersion and kind, or group and kind: any version of the kind) and the
// JSON pointers (RFC 6901) of the fields the operator leaves to others.
type DriftIgnoreSpec struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Group      string   `json:"group,omitempty"`
	Kind       string   `json:"kind"`
	Paths      []string `json:"paths"`
}

// DriftWarns reports whether drift is reported rather than repaired.
func (k *Kind) DriftWarns() bool { return k.Spec.Drift == DriftWarn }

// validDrift checks drift and driftIgnore at load: each rule's kind, and
// each path a JSON pointer to a field the operator may leave to others.
func (s *Spec) validDrift() error {
	switch s.Drift {
	case "", DriftRepair, DriftWarn:
	default:
		return fieldErr(fmt.Errorf("drift %q: want repair (the default) or warn", s.Drift), "drift")
	}
	for i, r := range s.DriftIgnore {
		item := fmt.Sprintf("driftIgnore[%d]", i)
		group := r.Group
		switch {
		case r.Kind == "":
			return fieldErr(fmt.Errorf("%s: kind is required", item), item)
		case r.APIVersion != "" && r.Group != "":
			return fieldErr(fmt.Errorf("%s: give apiVersion or group, not both", item), item, "group")
		case r.APIVersion != "":
			gv, err := schema.ParseGroupVersion(r.APIVersion)
			if err != nil {
				return fieldErr(fmt.Errorf("%s: apiVersion %q: %w", item, r.APIVersion, err), item, "apiVersion")
			}
			group = gv.Group
		}
		if len(r.Paths) == 0 {
			return fieldErr(fmt.Errorf("%s: paths is empty", item), item)
		}
		gk := schema.GroupKind{Group: group, Kind: r.Kind}
		for j, p := range r.Paths {
			tokens, err := ignorablePointer(p)
			if err != nil {
				return fieldErr(fmt.Errorf("%s.paths[%d] %q: %w", item, j, p, err), item, fmt.Sprintf("paths[%d]", j))
			}
			if s.driftIgnore == nil {
				s.driftIgnore = map[schema.GroupKind][][]string{}
			}
			s.driftIgnore[gk] = append(s.driftIgnore[gk], tokens)
		}
	}
	return nil
}

// ParsePointer splits a JSON pointer (RFC 6901) into its reference tokens,
// unescaped: "/metadata/annotations/a~1b" -> metadata, annotations, a/b.
func ParsePointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' {
		return nil, errors.New(`a JSON pointer starts with "/"`)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, errors.New(`"~" must be followed by 0 or 1 ("~0" is ~, "~1" is /)`)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// ignorablePointer parses p and refuses what the operator cannot leave to
// others: the object's identity (apiVersion, kind, name, namespace), and
// the metadata that makes it the parent's child (its owner references,
// labels and annotations of the operator's own), which pruning, the
// watches and the hash need; a whole of metadata, labels or annotations.
func ignorablePointer(p string) ([]string, error) {
	tokens, err := ParsePointer(p)
	if err != nil {
		return nil, err
	}
	for _, t := range tokens {
		if t == "" || t == "-" {
			return nil, errors.New(`every token must name a field or a list index ("", "-" do not)`)
		}
	}
	switch tokens[0] {
	case "apiVersion", "kind":
		return nil, errors.New("the child's apiVersion and kind are its identity")
	case "metadata":
		if len(tokens) != 3 || (tokens[1] != "labels" && tokens[1] != "annotations") {
			return nil, errors.New("of metadata, only one label (/metadata/labels/<key>) or one annotation (/metadata/annotations/<key>) may be ignored")
		}
		if tokens[2] == ownership.LabelManagedBy || strings.HasPrefix(tokens[2], "operator.tmplop.io/") || strings.HasPrefix(tokens[2], "shard.tmplop.io/") {
			return nil, fmt.Errorf("%s is the operator's own: it makes the object the parent's child", tokens[2])
		}
	}
	return tokens, nil
}

// StripIgnored removes from child, a rendered child before it is adopted,
// the fields kind.yaml's driftIgnore leaves to others, so that they are
// never applied: never reported as drift, never repaired. A child of a kind
// with no rule is left as it is (and its hash with it: a folder without
// driftIgnore applies what it applied before).
func (k *Kind) StripIgnored(child *unstructured.Unstructured) {
	rules := k.Spec.driftIgnore[child.GroupVersionKind().GroupKind()]
	for _, tokens := range rules {
		removePath(child.Object, tokens)
	}
}

// removePath deletes the field at tokens from v, walking maps by key and
// lists by index (an index as the last token removes that item); a path
// that is not there is nothing to remove. It returns v, changed in place
// but for a list that lost an item, which is a new slice.
func removePath(v any, tokens []string) any {
	switch t := v.(type) {
	case map[string]any:
		if len(tokens) == 1 {
			delete(t, tokens[0])
		} else if c, ok := t[tokens[0]]; ok {
			t[tokens[0]] = removePath(c, tokens[1:])
		}
		return t
	case []any:
		i, err := strconv.Atoi(tokens[0])
		if err != nil || i < 0 || i >= len(t) {
			return t
		}
		if len(tokens) == 1 {
			return append(t[:i:i], t[i+1:]...)
		}
		t[i] = removePath(t[i], tokens[1:])
		return t
	}
	return v
}
