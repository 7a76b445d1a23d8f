package convert

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// Converter converts the objects of one kind between its versions. It is
// immutable and safe for concurrent use.
type Converter struct {
	hub      string
	versions map[string]bool // every version, the hub included
	lossy    map[string]bool
	set      *render.Set
	budget   render.Budget
}

// Compile checks and parses the conversion templates of a kind whose hub
// is hub, served also as versions (the hub may be among them), where a
// version of lossy drops what its conversions lose instead of keeping it.
// templates are the folder's conversion files and, optionally, its helpers
// (`_*`), by name; every render has budget.
//
// Its errors are *render.Error at the file they are about, with
// render.CodeFolder when a file is missing or not wanted, else the parse's
// render.CodeParse.
func Compile(hub string, versions []string, lossy map[string]bool, templates map[string]string, budget render.Budget) (*Converter, error) {
	c := &Converter{hub: hub, versions: map[string]bool{hub: true}, lossy: map[string]bool{}, budget: budget}
	for _, v := range append([]string{hub}, versions...) {
		if errs := validation.IsDNS1035Label(v); len(errs) > 0 {
			return nil, fmt.Errorf("version %q: %s", v, strings.Join(errs, "; "))
		}
		c.versions[v] = true
	}
	for v, l := range lossy {
		if l {
			if !c.versions[v] {
				return nil, fmt.Errorf("lossy version %s is not a version of the kind", v)
			}
			c.lossy[v] = true
		}
	}
	src := render.Source{}
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		switch layout.RoleOf(name) {
		case layout.Helper:
		case layout.Conversion:
			from, to, _ := layout.ParseConversion(name)
			if err := c.wanted(from, to); err != nil {
				return nil, render.At(name, 0, render.CodeFolder, err)
			}
		default:
			return nil, render.At(name, 0, render.CodeFolder, errors.New("not a conversion template (convert.<from>.<to>.yaml) nor a helper"))
		}
		src.Files = append(src.Files, render.SourceFile{Name: name, Text: templates[name]})
	}
	for _, v := range c.Versions() {
		if v == hub {
			continue
		}
		for _, name := range []string{layout.ConversionFile(v, hub), layout.ConversionFile(hub, v)} {
			if _, ok := templates[name]; !ok {
				return nil, render.At(name, 0, render.CodeFolder,
					fmt.Errorf("missing: version %s needs a conversion to the hub %s and one from it (%s, %s)",
						v, hub, layout.ConversionFile(v, hub), layout.ConversionFile(hub, v)))
			}
		}
	}
	set, err := render.ParseSource(src)
	if err != nil {
		return nil, err
	}
	c.set = set
	return c, nil
}

// wanted reports why a conversion file from -> to has no place, or nil.
func (c *Converter) wanted(from, to string) error {
	switch {
	case from == to:
		return fmt.Errorf("converts version %s to itself", from)
	case !c.versions[from]:
		return fmt.Errorf("version %s is not a version of the kind (%s)", from, strings.Join(c.Versions(), ", "))
	case !c.versions[to]:
		return fmt.Errorf("version %s is not a version of the kind (%s)", to, strings.Join(c.Versions(), ", "))
	case from != c.hub && to != c.hub:
		return fmt.Errorf("neither %s nor %s is the hub %s: every conversion goes to or from the hub, and one between two other versions goes through it", from, to, c.hub)
	}
	return nil
}

// WithBudget is c with every render under budget: the kind's budget over
// the operator's flags (catalog.Kind.RenderBudget), where c was compiled
// with the folder's alone.
func (c *Converter) WithBudget(budget render.Budget) *Converter {
	cc := *c
	cc.budget = budget
	return &cc
}

// Hub is the version every conversion goes to or from.
func (c *Converter) Hub() string { return c.hub }

// Versions are the kind's versions, sorted.
func (c *Converter) Versions() []string { return slices.Sorted(maps.Keys(c.versions)) }

// Convert returns obj, an object of the kind at any of its versions, at
// the version of toAPIVersion (the same group). obj is not changed. Its
// errors are *render.Error naming the conversion template (and its line
// when the render gives one), possibly wrapped.
func (c *Converter) Convert(ctx context.Context, obj map[string]any, toAPIVersion string) (map[string]any, error) {
	src, err := c.parseFrom(obj)
	if err != nil {
		return nil, err
	}
	to, err := schema.ParseGroupVersion(toAPIVersion)
	if err != nil {
		return nil, fmt.Errorf("convert to %q: %w", toAPIVersion, err)
	}
	if to.Group != src.Group {
		return nil, fmt.Errorf("convert %s to %s: not the same group", src, to)
	}
	if !c.versions[to.Version] {
		return nil, fmt.Errorf("convert to %s: version %s is not a version of the kind (%s)", to, to.Version, strings.Join(c.Versions(), ", "))
	}
	if src.Version == to.Version {
		return deepCopyMap(obj), nil
	}
	cur := obj
	if src.Version != c.hub && to.Version != c.hub {
		hub := schema.GroupVersion{Group: src.Group, Version: c.hub}
		if cur, err = c.step(ctx, cur, src, hub); err != nil {
			return nil, err
		}
		src = hub
	}
	return c.step(ctx, cur, src, to)
}

// ConvertList converts every object of objs to toAPIVersion, all or
// nothing: the error of the first object (in order) that fails, naming
// it. Objects are converted on as many goroutines as there are CPUs: a
// ConversionReview brings a whole list, and its client waits for all of
// it.
func (c *Converter) ConvertList(ctx context.Context, objs []map[string]any, toAPIVersion string) ([]map[string]any, error) {
	out := make([]map[string]any, len(objs))
	errs := make([]error, len(objs))
	workers := min(runtime.GOMAXPROCS(0), (len(objs)+minPerWorker-1)/minPerWorker)
	// Objects are taken in order; once one fails no other is started
	// (all or nothing), and those under way finish, so that every object
	// before the failing one was converted and the error reported is the
	// first in order, whatever the goroutines' timing.
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for !failed.Load() && ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(objs) {
					return
				}
				o, err := c.Convert(ctx, objs[i], toAPIVersion)
				if err != nil {
					errs[i] = fmt.Errorf("object %d (%s): %w", i, objectName(objs[i]), err)
					failed.Store(true)
					return
				}
				out[i] = o
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for i := range out {
		if out[i] == nil {
			// Stopped before its turn: the caller's ctx is done.
			return nil, fmt.Errorf("object %d (%s): %w", i, objectName(objs[i]), context.Cause(ctx))
		}
	}
	return out, nil
}

// minPerWorker is the fewest objects worth a goroutine of ConvertList.
const minPerWorker = 8

// parseFrom reads the version obj is at, which must be one of the kind's.
func (c *Converter) parseFrom(obj map[string]any) (schema.GroupVersion, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || apiVersion == "" {
		return gv, fmt.Errorf("convert %s: apiVersion %q: want group/version", objectName(obj), apiVersion)
	}
	if !c.versions[gv.Version] {
		return gv, fmt.Errorf("convert %s: version %s is not a version of the kind (%s)", objectName(obj), gv.Version, strings.Join(c.Versions(), ", "))
	}
	return gv, nil
}

// step converts src, at from, to the version to, one of them the hub
// (package doc).
func (c *Converter) step(ctx context.Context, src map[string]any, from, to schema.GroupVersion) (map[string]any, error) {
	forward, back := layout.ConversionFile(from.Version, to.Version), layout.ConversionFile(to.Version, from.Version)
	out, err := c.render(ctx, forward, src, to)
	if err != nil {
		return nil, err
	}
	// What to held that from could not comes back, and the engine owns
	// the kept annotations: what src carried for other versions goes on.
	srcAnn := annotations(src)
	if k, ok := srcAnn[KeptAnnotation(to.Version)]; ok {
		applyKept(out, k)
	}
	setKept(out, srcAnn, to.Version)
	if c.lossy[from.Version] || c.lossy[to.Version] {
		return out, nil
	}
	again, err := c.render(ctx, back, out, from)
	if err != nil {
		return nil, err
	}
	kept, err := diff(comparable(src), comparable(again))
	if err != nil {
		return nil, render.At(back, 0, "", err)
	}
	if kept != "" {
		if len(kept) > MaxKept {
			return nil, render.At(forward, 0, "", fmt.Errorf("what version %s cannot hold of %s is %d bytes, over the %d bytes the annotation %s may take: convert those fields, or mark a version lossy in kind.yaml",
				to.Version, from.Version, len(kept), MaxKept, KeptAnnotation(from.Version)))
		}
		metadataOf(out)["annotations"] = withAnnotation(out, KeptAnnotation(from.Version), kept)
	}
	return out, nil
}

// render renders file over obj and makes the result an object of the
// kind at to: apiVersion and kind filled in or checked, metadata the
// source's or differing from it only in labels and annotations.
func (c *Converter) render(ctx context.Context, file string, obj map[string]any, to schema.GroupVersion) (map[string]any, error) {
	out, err := c.set.Document(ctx, render.Input{Object: obj, Budget: c.budget}, file)
	if err != nil {
		return nil, err
	}
	if out == nil {
		// An object with nothing but apiVersion, kind and metadata, which
		// normalize fills in: what an object without spec converts to.
		out = map[string]any{}
	}
	if err := normalize(out, obj, to); err != nil {
		return nil, render.At(file, 0, "", err)
	}
	return out, nil
}

// objectName names obj in messages: namespace/name, or name.
func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}
