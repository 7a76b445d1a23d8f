package app

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
)

// stagedObjects narrows the objects of a kind that rolls out in steps to
// those its rollout's next step renders with the planned folder (the
// folder's revision number folder, 0 when unknown): the step in progress
// and the next one of the folder's rollout, or the first step of the
// rollout serving the folder would start. The others stay on the
// revision they are on, and a reconcile would not render them with this
// folder. note says which, for the report.
func stagedObjects(ctx context.Context, c *kube.Client, stateNamespace, manager string, k *catalog.Kind, folder int64, objs []*unstructured.Unstructured) (planned []*unstructured.Unstructured, note string, err error) {
	if !k.Staged() {
		return objs, "", nil
	}
	m, err := c.Mapping(k.GVK)
	if err != nil {
		return nil, "", err
	}
	store := &rollout.Store{API: c, Namespace: stateNamespace, Manager: manager}
	recs, err := store.List(ctx, revision.LabelValue(m.Resource.GroupResource()))
	if err != nil {
		return nil, "", err
	}
	st, _, err := rollout.Current(recs)
	if err != nil {
		return nil, "", err
	}
	spec := k.Spec.Rollout
	if st != nil && st.Folder != folder {
		st = nil // the folder is not the one rolling out: a new rollout starts
	}
	if st != nil && st.To.Number != folder {
		return nil, fmt.Sprintf("the rollout of this folder was undone to revision %d (%s): no object is rendered with it", st.To.Number, st.Phase), nil
	}
	positions := make([]string, len(objs))
	for i, o := range objs {
		positions[i] = rollout.Position(o.GetNamespace(), o.GetName(), spec.Canaries(o.GetLabels()))
	}
	cutoff, step := rollout.NextCutoff(spec, st, positions)
	for i, o := range objs {
		given := positions[i] <= cutoff
		if st != nil {
			given = given || st.Revision(positions[i]).Number == folder
		}
		if given {
			planned = append(planned, o)
		}
	}
	held := len(objs) - len(planned)
	switch {
	case st == nil:
		note = fmt.Sprintf("serving this folder starts a rollout in %d steps: step 1 renders %d objects with it; %d stay on their revision until later steps", len(spec.Steps), len(planned), held)
	case st.Phase == rollout.Complete:
		note = fmt.Sprintf("rollout %d to revision %d is Complete", st.Seq, st.To.Number)
	default:
		note = fmt.Sprintf("rollout %d to revision %d is %s at step %s; planned through step %d/%d: %d objects on this folder's revision, %d stay on revision %d",
			st.Seq, st.To.Number, st.Phase, st.StepName(), step+1, len(spec.Steps), len(planned), held, st.From.Number)
	}
	return planned, note, nil
}
