package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

type renderFlags struct {
	templates    string
	file         string
	children     string
	fieldManager string
	kubeVersion  string
	apiVersions  []string
}

// cluster is what a chart's templates see as .Capabilities offline, as
// helm template's --kube-version and --api-versions give it.
func (f *renderFlags) cluster() catalog.Cluster {
	return chart.Offline(f.kubeVersion, f.apiVersions)
}

// placeholderUID stands in for the UID of a custom resource read from a file
// without one, so that owner references and labels are complete.
const placeholderUID = "00000000-0000-0000-0000-000000000000"

// NewRenderCommand renders offline what run would apply.
func NewRenderCommand(out io.Writer) *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render --templates DIR -f CR.yaml [--children LIVE.yaml]",
		Short: "Render the children and status of custom resources offline, as run would apply them",
		Long: `render prints, without a cluster, the child manifests that run would apply for each custom
resource in the file (with the namespace, owner reference and labels the engine adds), then the
status it would write. --children gives live children (a List or YAML documents) for status.yaml
to read; without it, status.yaml sees the rendered children. Lookups read nothing offline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return renderCmd(cmd.Context(), out, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.templates, "templates", "templates", "directory holding one folder per kind")
	fl.StringVarP(&f.file, "filename", "f", "", "custom resources to render (YAML; '-' for stdin)")
	fl.StringVar(&f.children, "children", "", "live children for status.yaml (YAML)")
	fl.StringVar(&f.fieldManager, "field-manager", "operator", "as for run: the children's managed-by label")
	fl.StringVar(&f.kubeVersion, "kube-version", "", "charts: the Kubernetes version .Capabilities reports (default: Helm's)")
	fl.StringSliceVarP(&f.apiVersions, "api-versions", "a", nil, "charts: API versions .Capabilities reports besides Helm's defaults, as group/version or group/version/Kind")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func renderCmd(ctx context.Context, out io.Writer, f *renderFlags) error {
	kinds, skipped, err := catalog.Load(f.templates)
	if err != nil {
		return err
	}
	byGK := map[schema.GroupKind]*catalog.Kind{}
	for _, k := range kinds {
		byGK[k.GVK.GroupKind()] = k
	}
	objs, err := readObjects(f.file)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.file, err)
	}
	var live []*unstructured.Unstructured
	if f.children != "" {
		if live, err = readObjects(f.children); err != nil {
			return fmt.Errorf("read %s: %w", f.children, err)
		}
	}
	var buf bytes.Buffer
	for _, obj := range objs {
		k := byGK[obj.GroupVersionKind().GroupKind()]
		if k == nil {
			for _, s := range skipped {
				fmt.Fprintln(os.Stderr, "warning:", s)
			}
			return fmt.Errorf("%s %q: no kind folder in %s serves %s", obj.GetKind(), obj.GetName(), f.templates, obj.GroupVersionKind().GroupKind())
		}
		if err := renderOne(ctx, &buf, k, obj, live, f); err != nil {
			return fmt.Errorf("%s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	_, err = out.Write(buf.Bytes())
	return err
}

func renderOne(ctx context.Context, w io.Writer, k *catalog.Kind, obj *unstructured.Unstructured, live []*unstructured.Unstructured, f *renderFlags) error {
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	if obj.GetUID() == "" {
		obj.SetUID(placeholderUID)
	}
	now := time.Now()
	budget := k.RenderBudget(render.Budget{})
	plan, err := reconcile.MakePlan(ctx, k, obj, render.Input{Now: now, Budget: budget}, f.cluster(), kube.OfflineNamespaced, ownership.Policy{Manager: f.fieldManager})
	if err != nil {
		return err
	}
	var planned []*unstructured.Unstructured
	for _, c := range plan.Children {
		data, err := yaml.Marshal(c.Object.Object)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n# Source: %s\n%s", filepath.Join(k.Name, c.Template), data)
		planned = append(planned, c.Object)
	}
	if live == nil {
		live = planned
	}
	rendered, conds, requeue, err := reconcile.Preview(ctx, k, obj, live, nil, now, budget)
	if err != nil {
		return err
	}
	st, err := status.Desired(obj, rendered, conds, now)
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "---\n# Status of %s %s/%s (preview)\n%s", obj.GetKind(), obj.GetNamespace(), obj.GetName(), data)
	if d := reconcile.Soonest(plan.RequeueAfter, requeue); d > 0 {
		fmt.Fprintf(w, "# requeueAfter: %s\n", d.Round(time.Second))
	}
	return nil
}

// readObjects reads YAML documents, unrolling List objects.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		// Through JSON, so that whole numbers are int64 as the API server
		// returns them (generation included), not float64.
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
}
