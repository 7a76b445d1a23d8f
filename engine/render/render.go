package render

import (
	"bytes"
	"fmt"
	"reflect"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Input is what one render reads. The render deep-copies Object, Children
// and what Lookup returns, so callers may pass informer-cache objects.
// Values must be unstructured content (int64, not int, for whole numbers);
// a Children entry may also be an *unstructured.Unstructured.
type Input struct {
	Object   map[string]any            // the custom resource, as the API returned it (unstructured content)
	Children map[string]map[string]any // status only: kind -> name -> live child object
	Lookup   Lookup                    // nil: lookups return empty results (offline rendering, like `helm template`)
	Now      time.Time                 // zero: time.Now(); used by durationUntil (lets tests be deterministic)
}

// Manifest is one child object rendered from a template.
type Manifest struct {
	Template string                     // file it came from, e.g. "deployment.yaml"
	Index    int                        // 0-based document index within that file's output (counting only non-empty documents)
	Object   *unstructured.Unstructured // k8s.io/apimachinery/pkg/apis/meta/v1/unstructured
}

// Result is the outcome of one render.
type Result struct {
	Manifests    []Manifest     // children, in file-name order then document order
	Status       map[string]any // status.yaml output (nil when there is no status.yaml or it rendered empty)
	RequeueAfter time.Duration  // the soonest positive duration passed to requeueAfter during this render; 0 if none
}

// noValue is what text/template prints for a missing key even with
// missingkey=zero; Helm removes it so optional fields read as empty.
const noValue = "<no value>"

// Children renders every child template. If any template fails, it returns an error and no manifests.
func (s *Set) Children(in Input) (*Result, error) {
	r, err := s.newRender(in, false)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, name := range s.children {
		out, err := r.execute(name)
		if err != nil {
			return nil, err
		}
		if res.Manifests, err = appendManifests(res.Manifests, name, out); err != nil {
			return nil, err
		}
	}
	res.RequeueAfter = r.state.requeue
	return res, nil
}

// Status renders status.yaml (Result.Status; nil Status and no error when there is none).
// in.Children are the live children as they are after apply, so that the
// status can report what the cluster made of them (readyReplicas...).
func (s *Set) Status(in Input) (*Result, error) {
	if !s.status {
		return &Result{}, nil
	}
	r, err := s.newRender(in, true)
	if err != nil {
		return nil, err
	}
	out, err := r.execute(statusFile)
	if err != nil {
		return nil, err
	}
	status, err := decodeStatus(out)
	if err != nil {
		return nil, err
	}
	return &Result{Status: status, RequeueAfter: r.state.requeue}, nil
}

// render is one call of Children or Status.
type render struct {
	set   *Set
	tmpl  *template.Template // this render's clone of set.tmpl
	state *renderState
	data  map[string]any
	buf   bytes.Buffer // reused across the files of the render
}

func (s *Set) newRender(in Input, withChildren bool) (*render, error) {
	data, err := templateData(in, withChildren)
	if err != nil {
		return nil, err
	}
	// Clone shares the parse trees and copies only the name and function
	// tables, so binding per-render functions to it leaves s untouched for
	// concurrent renders.
	tmpl, err := s.tmpl.Clone()
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("clone templates: %v", err), err: err}
	}
	st := newRenderState(in)
	st.bind(tmpl)
	return &render{set: s, tmpl: tmpl, state: st, data: data}, nil
}

// execute runs one file of the set and returns its output, which stays
// valid until the next call.
func (r *render) execute(file string) (out []byte, err error) {
	defer func() {
		// text/template re-panics runtime errors of its own; a template
		// folder written by a user must not be able to crash the operator.
		if p := recover(); p != nil {
			out, err = nil, &Error{Template: file, Message: fmt.Sprintf("panic while rendering: %v", p)}
		}
	}()
	r.buf.Reset()
	if err := r.tmpl.ExecuteTemplate(&r.buf, file, r.data); err != nil {
		return nil, r.set.execError(file, err)
	}
	out = r.buf.Bytes()
	if bytes.Contains(out, []byte(noValue)) {
		out = bytes.ReplaceAll(out, []byte(noValue), nil)
	}
	return out, nil
}

// templateData builds the dot of every template. The object is deep-copied
// once per render: sprig's set, unset and merge mutate maps in place, and
// the caller's object (often straight from an informer cache) must not
// change.
func templateData(in Input, withChildren bool) (map[string]any, error) {
	obj, err := copyJSONMap(in.Object)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("input object: %v", err), err: err}
	}
	meta := mapOrEmpty(obj["metadata"])
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	data := map[string]any{
		"Object":      obj,
		"Name":        name,
		"Namespace":   namespace,
		"Spec":        mapOrEmpty(obj["spec"]),
		"Status":      mapOrEmpty(obj["status"]),
		"Labels":      mapOrEmpty(meta["labels"]),
		"Annotations": mapOrEmpty(meta["annotations"]),
	}
	if withChildren {
		// map[string]any at every level, as Helm's values, so that sprig's
		// map functions work on it: dig "Deployment" .Name "status" "x" 0 .Children
		children := make(map[string]any, len(in.Children))
		for kind, byName := range in.Children {
			copies := make(map[string]any, len(byName))
			for childName, child := range byName {
				c, err := childContent(child)
				if err == nil {
					c, err = copyJSONMap(c)
				}
				if err != nil {
					return nil, &Error{Message: fmt.Sprintf("input child %s %s: %v", kind, childName, err), err: err}
				}
				copies[childName] = c
			}
			children[kind] = copies
		}
		data["Children"] = children
	}
	return data, nil
}

// childContent accepts a live child as unstructured content or as the
// *unstructured.Unstructured that apply steps usually hold.
func childContent(child any) (map[string]any, error) {
	switch c := child.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return c, nil
	case interface{ UnstructuredContent() map[string]any }:
		if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
			return nil, nil
		}
		return c.UnstructuredContent(), nil
	}
	return nil, fmt.Errorf("want unstructured content (map[string]any), got %T", child)
}

// mapOrEmpty returns v as a mapping, or a new empty one, so that templates
// can write .Spec.size on an object without spec and read it as empty.
func mapOrEmpty(v any) map[string]any {
	if m, ok := v.(map[string]any); ok && m != nil {
		return m
	}
	return map[string]any{}
}
