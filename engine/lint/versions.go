package lint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// servedVersion reports whether the folder's kind serves version: its hub
// or one of its other served versions, whose objects the API server
// converts to the hub before the operator reads them.
func (f *folder) servedVersion(version string) bool {
	for _, v := range f.kind.Versions() {
		if v.Name == version {
			return v.Served
		}
	}
	return false
}

// toHub converts a sample written at another version than the hub, as
// the API server would before the operator reads it, and checks that it
// comes back from the hub as it was written. nil and the findings when
// it does not convert.
func (f *folder) toHub(ctx context.Context, s sample) (*unstructured.Unstructured, []Finding) {
	return f.toHubFrom(ctx, s.obj.Object, fmt.Sprintf("sample %s", s.where()))
}

// toHubFrom converts obj, at another version than the hub, to the hub and
// back, and checks that it comes back as it was. what says what obj is,
// for messages. nil and the findings when it does not convert.
func (f *folder) toHubFrom(ctx context.Context, obj map[string]any, what string) (*unstructured.Unstructured, []Finding) {
	k := f.kind
	hub, err := k.Converter().Convert(ctx, obj, k.Spec.APIVersion)
	if err != nil {
		return nil, []Finding{f.conversionFailed(err, what, false)}
	}
	from, _, _ := unstructured.NestedString(obj, "apiVersion")
	back, err := k.Converter().Convert(ctx, hub, from)
	if err != nil {
		return nil, []Finding{f.conversionFailed(err, what, false)}
	}
	if f.lossy(versionOf(from)) {
		return &unstructured.Unstructured{Object: hub}, nil // its conversions may drop what they lose
	}
	if out := f.sameAfterTrip(obj, back, layout.ConversionFile(k.Hub(), versionOf(from)), what, from, k.Spec.APIVersion); out != nil {
		return nil, out
	}
	return &unstructured.Unstructured{Object: hub}, nil
}

// lossy reports whether the kind's version is marked lossy: its
// conversions drop what the target cannot hold.
func (f *folder) lossy(version string) bool {
	for _, v := range f.kind.Versions() {
		if v.Name == version {
			return v.Lossy
		}
	}
	return false
}

// roundTrips converts obj, at the hub, to each of the kind's other
// versions and back, and reports a conversion that fails (at its
// template's line) or does not give obj back. empty: obj is the empty
// spec, where a failing required is expected (LNT100).
func (f *folder) roundTrips(ctx context.Context, obj map[string]any, what string, empty bool) []Finding {
	k := f.kind
	if k.Converter() == nil {
		return nil
	}
	gv := schema.FromAPIVersionAndKind(k.Spec.APIVersion, k.Spec.Kind).GroupVersion()
	var out []Finding
	for _, v := range k.Versions() {
		if v.Hub || !v.Served {
			continue
		}
		to := gv.Group + "/" + v.Name
		at, err := k.Converter().Convert(ctx, obj, to)
		if err == nil {
			var back map[string]any
			if back, err = k.Converter().Convert(ctx, at, k.Spec.APIVersion); err == nil {
				if v.Lossy {
					continue // its conversions may drop what they lose
				}
				out = append(out, f.sameAfterTrip(obj, back, layout.ConversionFile(v.Name, k.Hub()), what, k.Spec.APIVersion, to)...)
				continue
			}
		}
		out = append(out, f.conversionFailed(err, what, empty))
	}
	return out
}

// sameAfterTrip reports, at file (the conversion back), a round trip from
// -> via -> from that did not give obj back.
func (f *folder) sameAfterTrip(obj, back map[string]any, file, what, from, via string) []Finding {
	if p, ok := firstDiff("", obj, back); ok {
		return []Finding{f.at(file, 0, CodeConversion, "%s -> %s -> %s does not give the object back: %s differs (%s)",
			versionOf(from), versionOf(via), versionOf(from), p, what)}
	}
	return nil
}

// conversionFailed is the finding of a conversion that failed: at the
// template's line, a budget's as LNT102, the empty spec's as LNT100.
func (f *folder) conversionFailed(err error, what string, empty bool) Finding {
	re, ok := errors.AsType[*render.Error](err)
	if !ok {
		return f.at("", 0, CodeConversion, "%v (%s)", err, what)
	}
	code := CodeConversion
	switch {
	case errors.As(err, new(*render.BudgetError)):
		code = CodeBudget
	case empty:
		code = CodeEmptySpec
	}
	return f.at(re.Template, re.Line, code, "%s (%s)", re.Message, what)
}

// versionOf is the version of apiVersion.
func versionOf(apiVersion string) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.Version
}

// firstDiff is the JSON Pointer of the first place where a and b differ,
// in key order.
func firstDiff(at string, a, b any) (string, bool) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if reflect.DeepEqual(a, b) {
			return "", false
		}
		if at == "" {
			at = "/"
		}
		return at, true
	}
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		p := at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
		av, aok := am[k]
		bv, bok := bm[k]
		if aok != bok {
			return p, true
		}
		if d, ok := firstDiff(p, av, bv); ok {
			return d, true
		}
	}
	return "", false
}
