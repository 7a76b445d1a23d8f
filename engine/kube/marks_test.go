package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/tmplop/operator/engine/requeue"
)

// failing is a Client of fakes whose every request, of every client
// behind the door, fails with err; core is its core group's fake.
func failing(err error) (*Client, *fake.Clientset) {
	fail := func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err }
	failWatch := func(clienttesting.Action) (bool, watch.Interface, error) { return true, nil, err }
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapGVR: "ConfigMapList"})
	dyn.PrependReactor("*", "*", fail)
	core := fake.NewClientset()
	core.PrependReactor("*", "*", fail)
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	md.PrependReactor("*", "*", fail)
	md.PrependWatchReactor("*", failWatch)
	return NewForClients(Clients{Dynamic: dyn, Mapper: mapper, Metadata: md, Core: core.CoreV1(), Authorization: core.AuthorizationV1()}, "op"), core
}

// TestDoorMarksEveryCall: every call through the door comes back marked
// as the API server's answer says, whichever client is behind it (the
// dynamic one of the kinds' objects, the core group's of the inventory
// and the ServiceAccounts, the metadata one of the shard labels, the
// authorizer's), so that classify reads a refusal of the inventory as one
// of a child: terminal, tried again after a minute. Errors that retrying
// may fix stay unmarked, and every error still reads as the API server's.
func TestDoorMarksEveryCall(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op-inventory"}}
	mapping := &meta.RESTMapping{Resource: configMapGVR, GroupVersionKind: configMapGVK, Scope: meta.RESTScopeNamespace}
	calls := []struct {
		name string
		call func(context.Context, *Client) error
	}{
		{"Get", func(ctx context.Context, c *Client) error { _, err := c.Get(ctx, mapping, "a", "x"); return err }},
		{"List", func(ctx context.Context, c *Client) error {
			_, err := c.List(ctx, mapping, "a", metav1.ListOptions{})
			return err
		}},
		{"Apply (a child)", func(ctx context.Context, c *Client) error {
			_, err := c.Apply(ctx, configMap("a", "x", nil))
			return err
		}},
		{"ApplyStatus", func(ctx context.Context, c *Client) error {
			_, err := c.ApplyStatus(ctx, configMap("a", "x", nil))
			return err
		}},
		{"Delete", func(ctx context.Context, c *Client) error { return c.Delete(ctx, configMapGVK, "a", "x", "u") }},
		{"Patch (a finalizer)", func(ctx context.Context, c *Client) error {
			_, err := c.Patch(ctx, configMapGVK, "a", "x", types.MergePatchType, []byte(`{}`))
			return err
		}},
		{"PatchMapped (a CRD)", func(ctx context.Context, c *Client) error {
			_, err := c.PatchMapped(ctx, mapping, "a", "x", types.ApplyPatchType, []byte(`{}`))
			return err
		}},
		{"GetConfigMap (the inventory's read)", func(ctx context.Context, c *Client) error {
			_, err := c.GetConfigMap(ctx, "ops", "op-inventory")
			return err
		}},
		{"PatchConfigMap (the inventory's record)", func(ctx context.Context, c *Client) error {
			_, err := c.PatchConfigMap(ctx, "ops", "op-inventory", types.MergePatchType, []byte(`{}`))
			return err
		}},
		{"CreateConfigMap (the inventory's first record)", func(ctx context.Context, c *Client) error {
			_, err := c.CreateConfigMap(ctx, "ops", cm.DeepCopy())
			return err
		}},
		{"GetServiceAccount", func(ctx context.Context, c *Client) error {
			_, err := c.GetServiceAccount(ctx, "ops", "team-a")
			return err
		}},
		{"ListServiceAccounts", func(ctx context.Context, c *Client) error {
			_, err := c.ListServiceAccounts(ctx, "ops")
			return err
		}},
		{"ListMetadata (the sharder's list)", func(ctx context.Context, c *Client) error {
			_, err := c.ListMetadata(ctx, configMapGVR, "", metav1.ListOptions{})
			return err
		}},
		{"WatchMetadata (the sharder's watch)", func(ctx context.Context, c *Client) error {
			_, err := c.WatchMetadata(ctx, configMapGVR, "", metav1.ListOptions{})
			return err
		}},
		{"PatchMetadata (a shard label)", func(ctx context.Context, c *Client) error {
			_, err := c.PatchMetadata(ctx, configMapGVR, "a", "x", []byte(`{}`))
			return err
		}},
		{"MetadataListWatch (a metadata watch's list)", func(_ context.Context, c *Client) error {
			_, err := c.MetadataListWatch(configMapGVR, "a", "").List(metav1.ListOptions{})
			return err
		}},
		{"Allowed", func(ctx context.Context, c *Client) error {
			_, _, err := c.Allowed(ctx, Access{Verb: "list", Resource: configMapGVR.GroupResource()})
			return err
		}},
	}
	forbidden := requeue.Mark{Cause: requeue.CauseStep, Terminal: true, After: time.Minute}
	answers := []struct {
		name   string
		err    error
		marked bool
	}{
		{"forbidden", apierrors.NewForbidden(configMapGVR.GroupResource(), "x", errors.New("RBAC")), true},
		{"conflict", apierrors.NewConflict(configMapGVR.GroupResource(), "x", errors.New("changed")), false},
		{"server timeout", apierrors.NewServerTimeout(configMapGVR.GroupResource(), "get", 1), false},
	}
	for _, a := range answers {
		for _, call := range calls {
			t.Run(a.name+"/"+call.name, func(t *testing.T) {
				c, _ := failing(a.err)
				err := call.call(t.Context(), c)
				if err == nil {
					t.Fatal("the call succeeded; want the API server's error")
				}
				m, ok := requeue.Of(err)
				switch {
				case a.marked && (!ok || m != forbidden):
					t.Errorf("%v: mark %+v (marked %v), want %+v", err, m, ok, forbidden)
				case !a.marked && ok:
					t.Errorf("%v: marked %+v; retrying may fix it", err, m)
				}
				if apierrors.ReasonForError(err) != apierrors.ReasonForError(a.err) {
					t.Errorf("reads as %q, want the API server's %q", apierrors.ReasonForError(err), apierrors.ReasonForError(a.err))
				}
			})
		}
	}
}

// TestEventSinkUnmarked: the Event sink is the side door whose errors stay
// the API server's: client-go's broadcaster drops an Event the server
// refused (a *StatusError) after one try, and tries again only what did
// not reach it. A marked Forbidden would be tried 12 times.
func TestEventSinkUnmarked(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		tries int
	}{
		{name: "refused: dropped", err: apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "e", errors.New("RBAC")), tries: 1},
		{name: "not reached: tried again", err: errors.New("connection refused"), tries: 12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, core := failing(tc.err)
			creates := make(chan struct{}, 100)
			core.PrependReactor("create", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
				creates <- struct{}{}
				return true, nil, tc.err
			})
			b := record.NewBroadcaster(record.WithContext(t.Context()), record.WithSleepDuration(time.Millisecond))
			defer b.Shutdown()
			b.StartRecordingToSink(c.EventSink())
			rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "op"})
			rec.Event(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "a", UID: "u"}}, corev1.EventTypeWarning, "Failed", "message")
			// Tries come 1 ms apart: 300 ms without one is the end.
			tries := 0
			for quiet := time.NewTimer(2 * time.Second); ; {
				select {
				case <-creates:
					tries++
					quiet.Reset(300 * time.Millisecond)
					continue
				case <-quiet.C:
				}
				break
			}
			if tries != tc.tries {
				t.Errorf("the Event was sent %d times, want %d", tries, tc.tries)
			}
		})
	}
}
