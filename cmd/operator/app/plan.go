package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/inventory"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/plan"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/revision"
)

type planFlags struct {
	templates      string
	folder         string
	kind           string
	namespace      string
	allNamespaces  bool
	kubeconfig     string
	fieldManager   string
	stateNamespace string
	watchNamespace string
	protected      []string
	asKindAccount  bool
	local          bool
	workers        int
	output         string
	color          string
	budget         render.Budget
	pruneDelay     time.Duration
}

// Exit codes of operator plan, as kubectl diff's.
const (
	planNoChanges = 0
	planChanges   = 1
	planFailed    = 2
)

// NewPlanCommand plans a folder against the live cluster, writing nothing.
func NewPlanCommand(out, errOut io.Writer) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan --templates DIR|FILE [--folder NAME|--kind KIND] [-n NS|-A] [NAME]",
		Short: "Show what serving these kind folders would change in the live cluster, writing nothing",
		Long: `plan renders the kind folders of --templates (a directory of folders, one folder, or a YAML file
of ConfigMaps each holding a folder, as run --configmap-selector reads them) for every object of
their kinds in the live cluster (one object, a namespace, or all), as run would, and compares each
child with the live one: created, changed (a unified diff of the fields that change; server-set
fields left out), unchanged, or pruned; and the status a reconcile would write. A changed child is
server-side applied with dryRun=All, so that defaults, admission and validation are the API
server's; nothing is written. An identity that may not apply (a read-only one) gets a local
comparison instead, marked "local". Exit code: 0 no change, 1 changes, 2 an error (kubectl diff's).
See docs/plan.md.`,
		Example: `  operator plan --templates templates --kind Memcached -A
  operator plan --templates templates/memcached -n default my-memcached
  operator plan --templates folders.yaml -A -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runPlan(cmd.Context(), out, errOut, f, name)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.templates, "templates", "templates", "a directory holding one folder per kind, one kind folder, or a YAML file of ConfigMaps each holding a folder")
	fl.StringVar(&f.folder, "folder", "", "plan only the folder of this name")
	fl.StringVar(&f.kind, "kind", "", "plan only this kind (Kind, or Kind.group)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "plan the objects of this namespace (default: the kubeconfig context's)")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "plan the objects of every namespace")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	fl.StringVar(&f.fieldManager, "field-manager", "operator", "the operator's run --field-manager: its children's managed-by label and the dry-run's manager")
	fl.StringVar(&f.stateNamespace, "state-namespace", "", "the operator's run --state-namespace, where its inventory of child kinds is (default: the kubeconfig context's namespace)")
	fl.StringVar(&f.watchNamespace, "watch-namespace", "", "the operator's run --namespace, if it watches only one")
	fl.StringSliceVar(&f.protected, "protected-namespaces", nil, "the operator's own namespaces, where no child may go (its --state-namespace when it reads ConfigMap folders, its Lease's)")
	fl.BoolVar(&f.asKindAccount, "as-kind-account", false, "impersonate the ServiceAccount kind.yaml names (serviceAccountName, in --state-namespace), as run does: admission and RBAC are the kind's own")
	fl.BoolVar(&f.local, "local", false, "compare locally only, with no dry-run request (what a read-only identity gets when a dry-run is forbidden)")
	fl.IntVar(&f.workers, "workers", plan.DefaultWorkers, "objects planned at once")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.StringVar(&f.color, "color", "auto", "colour the diffs: auto (on a terminal), always, never")
	fl.DurationVar(&f.budget.Timeout, "render-timeout", render.DefaultTimeout, "as run's: wall time of one render")
	fl.DurationVar(&f.pruneDelay, "prune-confirm-delay", reconcile.DefaultPruneConfirmDelay, "the operator's run --prune-confirm-delay: how long its deletion guard holds back a prune that would delete most of an object's children")
	return cmd
}

// exitCode is an exit code other than 1 for Main, with the error to print
// ("" for none).
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCode) Unwrap() error { return e.err }

// failed is err with plan's error exit code.
func failed(err error) error { return &exitCode{code: planFailed, err: err} }

// planReport is plan's JSON output.
type planReport struct {
	Objects []plan.Object `json:"objects"`
	// Errors are the kinds that could not be planned at all (not served,
	// their objects or children not readable).
	Errors []string `json:"errors,omitempty"`
	// Rollouts say, for each kind that rolls out in steps, which of its
	// objects the plan covers: those its rollout's next step renders with
	// the folder.
	Rollouts []string  `json:"rollouts,omitempty"`
	Total    planTotal `json:"total"`
}

type planTotal struct {
	plan.Counts
	Objects int `json:"objects"`
	// Changed are the objects a reconcile would write something for.
	Changed int `json:"changed"`
	Status  int `json:"status"`
	// Suspended are the objects suspended (nothing written for them);
	// Drifted those with a child edited by hand that the reconcile leaves
	// as it is (drift: warn).
	Suspended int `json:"suspended,omitempty"`
	Drifted   int `json:"drifted,omitempty"`
	// Seconds is how long the plan took.
	Seconds float64 `json:"seconds"`
}

// add counts o in t.
func (t *planTotal) add(o *plan.Object) {
	t.Objects++
	t.Add(o.Counts())
	if o.Status != nil {
		t.Status++
	}
	if o.Changed() {
		t.Changed++
	}
	if o.Suspended != "" {
		t.Suspended++
	}
	if o.DriftReported() {
		t.Drifted++
	}
}

func runPlan(ctx context.Context, out, errOut io.Writer, f *planFlags, name string) error {
	start := time.Now()
	if f.output != "text" && f.output != "json" {
		return failed(fmt.Errorf("--output %q: want text or json", f.output))
	}
	if f.allNamespaces && (f.namespace != "" || name != "") {
		return failed(errors.New("--all-namespaces plans every object: give no --namespace and no NAME with it"))
	}
	kinds, err := planKinds(f, errOut)
	if err != nil {
		return failed(err)
	}
	if name != "" && len(kinds) > 1 {
		return failed(fmt.Errorf("%d kinds in %s: pick one with --kind or --folder to plan the object %s", len(kinds), f.templates, name))
	}
	cfg, contextNS, err := restConfig(f.kubeconfig)
	if err != nil {
		return failed(err)
	}
	// The workers bound the requests in flight, as run's do.
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = "operator-plan/" + version
	base, err := kube.New(cfg, f.fieldManager)
	if err != nil {
		return failed(err)
	}
	if f.stateNamespace == "" {
		f.stateNamespace = contextNS
	}
	namespace := f.namespace
	if namespace == "" && !f.allNamespaces {
		namespace = contextNS
	}
	invName, err := inventory.Name(f.fieldManager)
	if err != nil {
		return failed(err)
	}
	warn := func(msg string) { fmt.Fprintln(errOut, "Warning:", msg) }
	inv := &readOnlyInventory{store: inventory.New(base, f.stateNamespace, invName), warn: warn}
	revisions := revision.New(base, f.stateNamespace, f.fieldManager)
	color := f.color == "always" || (f.color == "auto" && isTerminal(out) && os.Getenv("NO_COLOR") == "")
	progress := isTerminal(errOut) && f.output == "text"
	report := planReport{Objects: []plan.Object{}}
	for _, k := range kinds {
		client := base
		if f.asKindAccount && k.Spec.ServiceAccountName != "" {
			if client, err = base.Impersonating("system:serviceaccount:" + f.stateNamespace + ":" + k.Spec.ServiceAccountName); err != nil {
				return failed(fmt.Errorf("kind %s: %w", k.GVK.Kind, err))
			}
		}
		// A kind that cannot be planned is reported, and the others are
		// planned still.
		kindFailed := func(err error) {
			msg := fmt.Sprintf("folder %s (kind %s): %v", k.Name, k.GVK.GroupKind(), err)
			report.Errors = append(report.Errors, msg)
			report.Total.Errors++
			if f.output == "text" {
				fmt.Fprintln(errOut, "Error:", msg)
			}
		}
		objs, err := plan.Objects(ctx, client, k, namespace, name)
		if err != nil {
			kindFailed(err)
			continue
		}
		opts := plan.Options{
			Client: client, Manager: f.fieldManager, Budget: f.budget, Inventory: inv, Workers: f.workers, Local: f.local, PruneConfirmDelay: f.pruneDelay,
			Bounds: ownership.Bounds{Namespace: f.watchNamespace, Protected: f.protected}, Warn: warn,
		}
		opts.Revision = plannedRevision(ctx, revisions, client, k, warn)
		if k.Staged() {
			var note string
			if objs, note, err = stagedObjects(ctx, base, f.stateNamespace, f.fieldManager, k, opts.Revision, objs); err != nil {
				kindFailed(fmt.Errorf("read the kind's rollout: %w", err))
				continue
			}
			report.Rollouts = append(report.Rollouts, fmt.Sprintf("%s: %s", k.Name, note))
			if f.output == "text" {
				fmt.Fprintf(errOut, "Rollout: %s: %s\n", k.Name, note)
			}
		}
		if k.ReadsCluster() {
			v, apis, err := client.Cluster()
			if err != nil {
				kindFailed(fmt.Errorf("read the cluster's capabilities: %w", err))
				continue
			}
			opts.Cluster = catalog.Cluster{KubeVersion: v, APIVersions: apis}
		}
		if progress {
			opts.Progress = func(done, total int) {
				fmt.Fprintf(errOut, "\rplanning %s: %d/%d objects", k.Name, done, total)
				if done == total {
					fmt.Fprint(errOut, "\r\033[K")
				}
			}
		}
		planned, err := plan.Run(ctx, k, objs, opts)
		if err != nil {
			kindFailed(err)
			continue
		}
		for i := range planned {
			o := &planned[i]
			report.Total.add(o)
			if o.Changed() || o.Error != "" || o.Counts().Errors > 0 || o.Suspended != "" || o.DriftReported() {
				o.Children = slices.DeleteFunc(o.Children, func(c plan.Child) bool { return c.Action == plan.Unchanged && c.Error == "" && c.Note == "" })
				o.Kind = k.Name // the folder's name leads the summary line
				report.Objects = append(report.Objects, *o)
			}
		}
	}
	report.Total.Seconds = time.Since(start).Seconds()
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return failed(err)
		}
	} else {
		writePlan(out, report, color)
	}
	switch {
	case report.Total.Errors > 0:
		return &exitCode{code: planFailed}
	case report.Total.Changed > 0:
		return &exitCode{code: planChanges}
	}
	return nil
}

// planKinds loads the folders of --templates and picks those asked for.
func planKinds(f *planFlags, errOut io.Writer) ([]*catalog.Kind, error) {
	info, err := os.Stat(f.templates)
	if err != nil {
		return nil, err
	}
	var kinds []*catalog.Kind
	switch {
	case !info.IsDir():
		if kinds, err = configMapKinds(f.templates); err != nil {
			return nil, err
		}
	case catalog.IsFolder(f.templates):
		k, err := catalog.LoadKind(f.templates)
		if err != nil {
			return nil, err
		}
		kinds = []*catalog.Kind{k}
	default:
		var skipped []*catalog.FolderError
		if kinds, skipped, err = catalog.Load(f.templates); err != nil {
			return nil, err
		}
		for _, s := range skipped {
			if (f.folder == "" && f.kind == "") || filepath.Base(s.Dir) == f.folder {
				// A folder asked for that does not load is the plan's
				// error: run would not serve it either.
				return nil, s
			}
			fmt.Fprintln(errOut, "Warning:", s)
		}
	}
	kinds = slices.DeleteFunc(kinds, func(k *catalog.Kind) bool {
		return (f.folder != "" && k.Name != f.folder) || (f.kind != "" && !kindMatches(k.GVK.GroupKind(), f.kind))
	})
	if len(kinds) == 0 {
		return nil, fmt.Errorf("no kind folder in %s matches --folder %q --kind %q", f.templates, f.folder, f.kind)
	}
	return kinds, nil
}

func kindMatches(gk schema.GroupKind, want string) bool {
	return strings.EqualFold(gk.Kind, want) || strings.EqualFold(gk.String(), want)
}

// configMapKinds compiles the kind folders a YAML file of ConfigMaps holds,
// as run --configmap-selector compiles them: the keys are the files.
func configMapKinds(path string) ([]*catalog.Kind, error) {
	objs, err := readObjects(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var kinds []*catalog.Kind
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GroupVersionKind().Group != "" {
			return nil, fmt.Errorf("%s: %s %s is not a ConfigMap holding a kind folder", path, o.GetKind(), o.GetName())
		}
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cm); err != nil {
			return nil, fmt.Errorf("%s: ConfigMap %s: %w", path, o.GetName(), err)
		}
		files := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
		for n, d := range cm.Data {
			files[n] = []byte(d)
		}
		for n, d := range cm.BinaryData {
			files[n] = d
		}
		k, err := catalog.Compile(cm.Name, "configmap/"+cm.Namespace+"/"+cm.Name, layout.FromMap(files))
		if err != nil {
			return nil, fmt.Errorf("%s: ConfigMap %s: %w", path, cm.Name, err)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// readOnlyInventory reads the operator's inventory; an identity that may
// not read it plans the prune over the planned kinds only, and is told.
type readOnlyInventory struct {
	store *inventory.Store
	warn  func(string)
}

func (r *readOnlyInventory) ChildKinds(ctx context.Context, parent schema.GroupKind) ([]schema.GroupKind, error) {
	gks, err := r.store.ChildKinds(ctx, parent)
	if apierrors.IsForbidden(err) {
		r.warn(fmt.Sprintf("cannot read the operator's inventory (%v): children of kinds no template renders any more are not listed as pruned", err))
		return nil, nil
	}
	return gks, err
}

func (r *readOnlyInventory) Record(context.Context, schema.GroupKind, []schema.GroupKind) error {
	return errors.New("a plan records nothing")
}

// isTerminal reports whether w is a terminal (a character device), without
// a terminal library.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// plannedRevision is the revision k's folder is recorded as, or the one it
// would get at its first reconcile (the next number): what each object's
// reconcile writes to status.observedRevision. 0 when the kind's objects do
// not hold it or the records cannot be read (warned): the field is then
// planned as it is.
func plannedRevision(ctx context.Context, store *revision.Store, c *kube.Client, k *catalog.Kind, warn func(string)) int64 {
	if !k.RecordsRevision() {
		return 0
	}
	m, err := c.Mapping(k.GVK)
	if err != nil {
		return 0 // the kind's own planning reports it
	}
	revs, err := store.List(ctx, m.Resource.GroupResource())
	if err != nil {
		warn(fmt.Sprintf("kind %s: status.observedRevision planned as it is: %v", k.GVK.GroupKind(), err))
		return 0
	}
	var top int64
	for _, r := range revs {
		if r.Fingerprint == k.Fingerprint {
			return r.Number
		}
		top = max(top, r.Number)
	}
	return top + 1
}
