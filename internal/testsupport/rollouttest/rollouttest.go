// Package rollouttest reads a kind's rollout state as the tests on a
// control plane see it: from the kind's revision records, as an admin.
package rollouttest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tmplop/operator/engine/rollout"
)

// State is the rollout of the kind whose records in ns match selector (by
// revision.LabelKind); an error when none of them holds one.
func State(ctx context.Context, cs kubernetes.Interface, ns, selector string) (*rollout.State, error) {
	l, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	md := make([]metav1.PartialObjectMetadata, 0, len(l.Items))
	for _, r := range l.Items {
		md = append(md, metav1.PartialObjectMetadata{ObjectMeta: r.ObjectMeta})
	}
	st, _, err := rollout.Current(md)
	if err == nil && st == nil {
		err = fmt.Errorf("no rollout state on the %d records of %s in %s", len(l.Items), selector, ns)
	}
	return st, err
}
