package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
)

type rolloutFlags struct {
	kubeconfig     string
	stateNamespace string
	fieldManager   string
	output         string
}

// rolloutWriteAttempts bounds the re-reads after a Conflict: the
// controller writes the state at each step, and a write of ours that lost
// to it is computed again from what it wrote.
const rolloutWriteAttempts = 5

// NewRolloutCommand shows and drives a kind's staged rollout through the
// state the operator keeps on the kind's revision records.
func NewRolloutCommand(out, errOut io.Writer) *cobra.Command {
	f := &rolloutFlags{}
	cmd := &cobra.Command{
		Use:   "rollout status|pause|resume|undo RESOURCE",
		Short: "Show, pause, resume or undo the staged rollout of a kind's folder change",
		Long: `rollout reads and writes the state of a kind's staged rollout (kind.yaml rollout: steps), which
the operator keeps on the kind's revision records (ControllerRevisions in its --state-namespace):
the annotation ` + rollout.AnnotationState + ` and the label ` + rollout.LabelPhase + `.
RESOURCE is the kind's resource and group, as the records' label ` + revision.LabelKind + ` says
(memcacheds.cache.example.com). Pause holds a Progressing or Halted rollout where it is; resume lets
a Paused or Halted one go on, its step's deadline running from now; undo starts a rollout back to
the revision before, by the kind's steps, the objects that moved first going back first.
See docs/rollout.md.`,
		// A word that is no sub-command is an error, not the help.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		Example: `  operator rollout status memcacheds.cache.example.com --state-namespace operator-system
  operator rollout pause memcacheds.cache.example.com
  operator rollout undo memcacheds.cache.example.com`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	pf.StringVar(&f.stateNamespace, "state-namespace", "", "the operator's run --state-namespace, where the kinds' revision records are (default: the kubeconfig context's namespace)")
	pf.StringVar(&f.fieldManager, "field-manager", "operator", "the operator's run --field-manager: the managed-by label of its records, and the manager of the writes")

	status := &cobra.Command{
		Use:   "status RESOURCE",
		Short: "Show the kind's rollout: its revisions, phase and step, and its objects by revision and Ready",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.output != "text" && f.output != "json" {
				return fmt.Errorf("--output %q: want text or json", f.output)
			}
			t, err := connectRollout(f, args[0], "status")
			if err != nil {
				return err
			}
			return rolloutStatus(cmd.Context(), out, errOut, t, f.output, time.Now())
		},
	}
	status.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	cmd.AddCommand(status)
	for _, c := range []struct{ name, short string }{
		{"pause", "Hold the kind's Progressing or Halted rollout where it is"},
		{"resume", "Let the kind's Paused or Halted rollout go on, its step's deadline running from now"},
		{"undo", "Roll the kind back to the revision before, by its steps"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   c.name + " RESOURCE",
			Short: c.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				t, err := connectRollout(f, args[0], "rollout-"+c.name)
				if err != nil {
					return err
				}
				return rolloutChange(cmd.Context(), out, t, c.name, time.Now)
			},
		})
	}
	return cmd
}

// rolloutTarget is a kind whose rollout a command reads or writes.
type rolloutTarget struct {
	client *kube.Client
	store  *rollout.Store
	gr     schema.GroupResource
	// label is the records' revision.LabelKind value.
	label string
}

// parseKindResource reads RESOURCE: <resource>.<group>, or <resource> of
// the core group, as revision.LabelValue writes it.
func parseKindResource(s string) (schema.GroupResource, error) {
	const want = "RESOURCE is the kind's <resource>.<group>, as memcacheds.cache.example.com"
	switch {
	case s == "":
		return schema.GroupResource{}, errors.New(want)
	case strings.Contains(s, "/"):
		return schema.GroupResource{}, fmt.Errorf("RESOURCE %q: %s, without a version or a name", s, want)
	case strings.ToLower(s) != s:
		return schema.GroupResource{}, fmt.Errorf("RESOURCE %q: %s: the plural resource, in lower case, not the Kind", s, want)
	}
	if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
		return schema.GroupResource{}, fmt.Errorf("RESOURCE %q: %s: %s", s, want, strings.Join(errs, "; "))
	}
	return schema.ParseGroupResource(s), nil
}

// connectRollout parses RESOURCE and makes the client, as plan does.
func connectRollout(f *rolloutFlags, resource, agent string) (*rolloutTarget, error) {
	gr, err := parseKindResource(resource)
	if err != nil {
		return nil, err
	}
	cfg, contextNS, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "operator-" + agent + "/" + version
	c, err := kube.New(cfg, f.fieldManager)
	if err != nil {
		return nil, err
	}
	ns := f.stateNamespace
	if ns == "" {
		ns = contextNS
	}
	return newRolloutTarget(c, gr, ns, f.fieldManager), nil
}

func newRolloutTarget(c *kube.Client, gr schema.GroupResource, ns, manager string) *rolloutTarget {
	return &rolloutTarget{client: c, gr: gr, label: revision.LabelValue(gr), store: &rollout.Store{API: c, Namespace: ns, Manager: manager}}
}

// current reads the kind's records and its rollout; an error when it has
// none.
func (t *rolloutTarget) current(ctx context.Context) (*rollout.State, *metav1.PartialObjectMetadata, []metav1.PartialObjectMetadata, error) {
	recs, err := t.store.List(ctx, t.label)
	if err != nil {
		return nil, nil, nil, err
	}
	const none = "the kind has no staged rollout: kind.yaml rollout is all, or the operator has not served it"
	if len(recs) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: no revision record in namespace %s kept by field manager %s (--state-namespace, --field-manager): %s",
			t.gr, t.store.Namespace, t.store.Manager, none)
	}
	st, on, err := rollout.Current(recs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", t.gr, err)
	}
	if st == nil {
		return nil, nil, nil, fmt.Errorf("%s: none of its %d revision records in %s holds a rollout state: %s", t.gr, len(recs), t.store.Namespace, none)
	}
	return st, on, recs, nil
}

// rolloutChange pauses, resumes or undoes the kind's rollout: computed
// from the current state, written on the record of the state's To under
// the resourceVersion it was read at, and computed again from a fresh
// read when another writer (the controller) got there first.
func rolloutChange(ctx context.Context, out io.Writer, t *rolloutTarget, action string, now func() time.Time) error {
	for attempt := 1; ; attempt++ {
		cur, on, recs, err := t.current(ctx)
		if err != nil {
			return err
		}
		var next *rollout.State
		switch action {
		case "pause":
			next, err = rollout.Pause(cur)
		case "resume":
			next, err = rollout.Resume(cur, now())
		case "undo":
			next, err = rollout.Undo(cur, now())
		default:
			return fmt.Errorf("unknown rollout action %q", action)
		}
		if err != nil {
			return fmt.Errorf("%s the rollout of %s: %w", action, t.gr, err)
		}
		// Pause and resume stay on the record the state is on; undo's
		// state goes on the record of the revision it goes back to.
		rv := on.ResourceVersion
		if next.To.Record != on.Name {
			i := slices.IndexFunc(recs, func(r metav1.PartialObjectMetadata) bool { return r.Name == next.To.Record })
			if i < 0 {
				return fmt.Errorf("%s the rollout of %s: the record %s of revision %d is not among the kind's records in %s (pruned past revisionHistoryLimit?)",
					action, t.gr, next.To.Record, next.To.Number, t.store.Namespace)
			}
			rv = recs[i].ResourceVersion
		}
		_, err = t.store.Write(ctx, next.To.Record, rv, next)
		if apierrors.IsConflict(err) && attempt < rolloutWriteAttempts {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(out, changeLine(t, action, cur, next))
		return nil
	}
}

// changeLine is the one line a change prints.
func changeLine(t *rolloutTarget, action string, cur, next *rollout.State) string {
	where := fmt.Sprintf("(record %s/%s)", t.store.Namespace, next.To.Record)
	switch {
	case action == "pause":
		return fmt.Sprintf("%s: rollout from revision %d to %d paused at step %s %s", t.gr, cur.From.Number, cur.To.Number, cur.StepName(), where)
	case action == "resume":
		return fmt.Sprintf("%s: rollout from revision %d to %d resumed at step %s, its deadline running from now %s", t.gr, cur.From.Number, cur.To.Number, cur.StepName(), where)
	case next.Phase == rollout.Complete:
		return fmt.Sprintf("%s: rollout undone: no object had moved, every object is given revision %d %s", t.gr, next.To.Number, where)
	}
	return fmt.Sprintf("%s: undo started, back from revision %d to %d by the kind's steps %s", t.gr, next.From.Number, next.To.Number, where)
}

// rolloutReport is status's JSON output.
type rolloutReport struct {
	Resource  string         `json:"resource"`
	Namespace string         `json:"namespace"`
	Record    string         `json:"record"`
	State     *rollout.State `json:"state"`
	Objects   *objectCounts  `json:"objects,omitempty"`
	// ObjectsError is why the objects could not be counted.
	ObjectsError string `json:"objectsError,omitempty"`
	Wait         string `json:"wait"`
}

type objectCounts struct {
	Total    int `json:"total"`
	Ready    int `json:"ready"`
	Deleting int `json:"deleting,omitempty"`
	// ByRevision counts by status.observedRevision, highest first; 0: no
	// reconcile recorded one yet.
	ByRevision []revisionCount `json:"byRevision"`
}

type revisionCount struct {
	Revision int64 `json:"revision"`
	Objects  int   `json:"objects"`
	Ready    int   `json:"ready"`
}

func rolloutStatus(ctx context.Context, out, errOut io.Writer, t *rolloutTarget, output string, now time.Time) error {
	st, on, _, err := t.current(ctx)
	if err != nil {
		return err
	}
	r := rolloutReport{Resource: t.gr.String(), Namespace: t.store.Namespace, Record: on.Name, State: st,
		Wait: fmt.Sprintf(`kubectl wait -n %s controllerrevision/%s --for=jsonpath='{.metadata.labels.%s}'=Complete`,
			t.store.Namespace, on.Name, strings.ReplaceAll(rollout.LabelPhase, ".", `\.`))}
	counts, objErr := countObjects(ctx, t)
	if objErr != nil {
		r.ObjectsError = objErr.Error()
	} else {
		r.Objects = counts
	}
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		writeRolloutStatus(out, &r, now)
	}
	if objErr != nil {
		return fmt.Errorf("count the objects of %s: %w", t.gr, objErr)
	}
	return nil
}

func writeRolloutStatus(out io.Writer, r *rolloutReport, now time.Time) {
	st := r.State
	w := func(k, format string, a ...any) {
		fmt.Fprintf(out, "%-9s "+format+"\n", append([]any{k + ":"}, a...)...)
	}
	w("Kind", "%s", r.Resource)
	w("Record", "%s/%s", r.Namespace, r.Record)
	from := "none"
	if st.From.Number != 0 {
		from = fmt.Sprintf("revision %d (%s)", st.From.Number, st.From.Record)
	}
	w("From", "%s", from)
	w("To", "revision %d (%s)", st.To.Number, st.To.Record)
	phase := string(st.Phase)
	if st.Undo {
		phase += " (undo)"
	}
	w("Phase", "%s", phase)
	w("Step", "%s", st.StepName())
	if st.Reason != "" || st.Message != "" {
		w("Reason", "%s: %s", st.Reason, st.Message)
	}
	if !st.StepStarted.IsZero() {
		w("Since", "%s (%s ago)", st.StepStarted.UTC().Format(time.RFC3339), now.Sub(st.StepStarted).Truncate(time.Second))
	}
	if c := r.Objects; c != nil {
		deleting := ""
		if c.Deleting > 0 {
			deleting = fmt.Sprintf(", %d deleting", c.Deleting)
		}
		w("Objects", "%d, %d Ready%s", c.Total, c.Ready, deleting)
		for _, rc := range c.ByRevision {
			name := fmt.Sprintf("revision %d", rc.Revision)
			switch {
			case rc.Revision == 0:
				name = "no revision yet"
			case rc.Revision == st.To.Number:
				name += " (to)"
			case rc.Revision == st.From.Number:
				name += " (from)"
			}
			fmt.Fprintf(out, "  %-22s %d, %d Ready\n", name+":", rc.Objects, rc.Ready)
		}
	} else {
		w("Objects", "not counted: %s", r.ObjectsError)
	}
	fmt.Fprintln(out, "Wait for it:")
	fmt.Fprintln(out, "  "+r.Wait)
}

// countObjects lists the kind's objects in every namespace and counts them
// by status.observedRevision and by their Ready condition.
func countObjects(ctx context.Context, t *rolloutTarget) (*objectCounts, error) {
	m, err := t.client.ResourceMapping(t.gr)
	if err != nil {
		return nil, err
	}
	l, err := t.client.List(ctx, m, metav1.NamespaceAll, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t.gr, err)
	}
	c := &objectCounts{ByRevision: []revisionCount{}}
	by := map[int64]*revisionCount{}
	for i := range l.Items {
		o := &l.Items[i]
		p, err := objectProgress(o)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", t.gr, o.GetNamespace(), o.GetName(), err)
		}
		c.Total++
		if o.GetDeletionTimestamp() != nil {
			c.Deleting++
		}
		rc := by[p.revision]
		if rc == nil {
			rc = &revisionCount{Revision: p.revision}
			by[p.revision] = rc
		}
		rc.Objects++
		if p.ready {
			rc.Ready++
			c.Ready++
		}
	}
	for _, rc := range by {
		c.ByRevision = append(c.ByRevision, *rc)
	}
	slices.SortFunc(c.ByRevision, func(a, b revisionCount) int { return cmp.Compare(b.Revision, a.Revision) })
	return c, nil
}

type progress struct {
	revision int64
	ready    bool
}

// objectProgress reads what status counts of an object: the revision its
// last reconcile ran with, and its Ready condition, as the controller's
// rollout reads them (cached.Object.Progress).
func objectProgress(o *unstructured.Unstructured) (progress, error) {
	co, err := cached.FromUnstructured(o)
	if err != nil {
		return progress{}, err
	}
	p := co.Progress()
	return progress{revision: p.ObservedRevision, ready: p.Ready == "True"}, nil
}
