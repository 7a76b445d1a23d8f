package rollouttest

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tmplop/operator/engine/rollout"
)

// TestState: the state of the highest Seq among the kind's records, and
// an error when none holds one.
func TestState(t *testing.T) {
	rec := func(name string, st *rollout.State) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"k": "v"}}}
		if st != nil {
			r.Annotations = map[string]string{rollout.AnnotationState: st.Encode()}
		}
		return r
	}
	cs := fake.NewClientset(
		rec("a", &rollout.State{Seq: 1, Phase: rollout.Complete}),
		rec("b", &rollout.State{Seq: 2, Phase: rollout.Halted}),
		rec("c", nil))
	st, err := State(t.Context(), cs, "ns", "k=v")
	if err != nil || st.Seq != 2 || st.Phase != rollout.Halted {
		t.Fatalf("State = %+v, %v; want rollout 2, Halted", st, err)
	}
	if _, err := State(t.Context(), cs, "ns", "k=other"); err == nil || !strings.Contains(err.Error(), "no rollout state") {
		t.Errorf("no records: err %v, want one saying there is no rollout state", err)
	}
}
