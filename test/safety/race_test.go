package safety

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestWritesRacingAReconcile: what someone else writes while a reconcile
// is in flight is never taken as reconciled. The operator runs behind a
// proxy that, on the request named, first does the racing write straight
// to the API server and then forwards (or fails) the operator's request,
// so that the race happens every run:
//
//   - a spec change lands just before the operator's status write: the
//     write's answer is the newest object, with the new generation; the
//     change must still be applied;
//   - a child apply fails, the reconcile writes ApplyFailed, and its retry
//     succeeds: the failure must not stay on the object whatever the
//     cache showed the retry.
//
// The chaos run of test/sharding found both, in most of its runs, when
// the reconciler kept a memory of its own between reconciles (the memo,
// removed 2026-11-28; now nothing is remembered, and the first cannot
// happen). The second fails only when the retry, 5 ms after the failure,
// runs before the watch brings the failure's status to the cache, which a
// watch on this machine rarely lets happen: TestStatusWriteSeenDuringItsRetry
// (engine/controller) makes that race certain; here the path runs whole on
// the API server.
func TestWritesRacingAReconcile(t *testing.T) {
	cases := []struct {
		name string
		// on is the operator's request the racing write comes before.
		on func(r *http.Request, name string) bool
		// race is the racing write; fail: the operator's request then
		// fails with a 500 instead of reaching the API server.
		race func(ctx context.Context, ns, name string) error
		fail bool
		// prepare, if set, runs once the object converged on v1, before
		// the race is armed: the event that makes the operator send the
		// request.
		prepare func(t *testing.T, ns, name string)
		want    string
	}{
		{
			name: "a spec change lands during the status write",
			on: func(r *http.Request, name string) bool {
				return r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/faults/"+name+"/status")
			},
			race: func(ctx context.Context, ns, name string) error {
				_, err := env.Resource(procFault.res, ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"value":"v2"}}`), metav1.PatchOptions{})
				return err
			},
			want: "v2",
		},
		{
			name: "a child apply fails, then its retry succeeds",
			on: func(r *http.Request, name string) bool {
				return r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/configmaps/"+name)
			},
			fail: true,
			prepare: func(t *testing.T, ns, name string) {
				// The child goes: its event reconciles the parent, whose
				// status is Reconciled already, and the apply that puts the
				// child back is the one that fails.
				if err := env.Resource(configMapGVR, ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want: "v1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, kubeconfig := procProxy(t)
			op := procStart(t, "safety-race", procTemplates(t, "outage"), kubeconfig)
			ns := env.Namespace(t)
			const name = "racy"

			var (
				mu      sync.Mutex
				armed   bool
				raced   int
				raceErr error
			)
			// Once armed, the first matching request: the racing write,
			// then the request failed or forwarded.
			p.FailRequests(func(r *http.Request) bool {
				mu.Lock()
				defer mu.Unlock()
				if !armed || raced > 0 || !tc.on(r, name) {
					return false
				}
				raced++
				if tc.race != nil {
					raceErr = tc.race(context.Background(), ns, name)
				}
				return tc.fail
			}, http.StatusInternalServerError)

			if tc.prepare == nil {
				// The race is on the object's first status write.
				mu.Lock()
				armed = true
				mu.Unlock()
			}
			env.CreateSpec(t, procFault.res, procFault.kind, ns, name, map[string]any{"value": "v1"})
			if tc.prepare != nil {
				procWaitAll(t, ns, map[string]string{name: "v1"}, 30*time.Second, "before the race")
				mu.Lock()
				armed = true
				mu.Unlock()
				tc.prepare(t, ns, name)
			}
			procWaitAll(t, ns, map[string]string{name: tc.want}, 30*time.Second, "after the race")
			mu.Lock()
			defer mu.Unlock()
			if raced != 1 || raceErr != nil {
				t.Fatalf("the race ran %d times (error %v); want once, without error", raced, raceErr)
			}
			procAlive(t, op, "after the race")
			// Still so a moment later: nothing undoes it at rest.
			time.Sleep(2 * time.Second)
			if lost := procLost(t.Context(), ns, map[string]string{name: tc.want}); len(lost) > 0 {
				t.Errorf("after 2 s at rest: %s", strings.Join(lost, "; "))
			}
			t.Logf("converged on %s after the race", tc.want)
		})
	}
}
