package cached

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestListWatchRequests: the paths and query parameters the informers'
// requests carry, and what comes back of a LIST and of a watch.
func TestListWatchRequests(t *testing.T) {
	var mu sync.Mutex
	var got []*url.URL
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			_, _ = w.Write([]byte(`{"type":"ADDED","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns","resourceVersion":"5","managedFields":[{"manager":"m"}]}}}` + "\n" +
				`{"type":"BOOKMARK","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"resourceVersion":"6","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n" +
				`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Expired","code":410}}` + "\n"))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"4"},"items":[{"metadata":{"name":"a","namespace":"ns"}}]}`))
	}))
	defer srv.Close()

	c, err := NewClient(&rest.Config{Host: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	lw := c.ListWatch(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "ns",
		func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })

	list, err := lw.List(metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	l, ok := list.(*List)
	if !ok || l.ResourceVersion != "4" || len(l.Items) != 1 || l.Items[0].Kind != "Deployment" {
		t.Fatalf("list: %#v", list)
	}

	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: "4", AllowWatchBookmarks: true, SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var types []watch.EventType
	for ev := range w.ResultChan() {
		types = append(types, ev.Type)
		switch ev.Type {
		case watch.Added:
			o := ev.Object.(*Object)
			if o.Name != "a" || o.ResourceVersion != "5" || o.ManagedFields != nil {
				t.Errorf("added: %+v", o)
			}
		case watch.Bookmark:
			o := ev.Object.(*Object)
			if o.GetAnnotations()["k8s.io/initial-events-end"] != "true" || o.ResourceVersion != "6" {
				t.Errorf("bookmark: %+v", o)
			}
		case watch.Error:
			if st, ok := ev.Object.(*metav1.Status); !ok || st.Code != 410 {
				t.Errorf("error event: %#v", ev.Object)
			}
		}
		if len(types) == 3 {
			break
		}
	}
	if len(types) != 3 {
		t.Fatalf("events: %v", types)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []map[string]string{
		{"labelSelector": "app=x", "resourceVersion": "0", "limit": "500"},
		{"labelSelector": "app=x", "resourceVersion": "4", "watch": "true", "allowWatchBookmarks": "true",
			"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"},
	}
	if len(got) != 2 {
		t.Fatalf("requests: %v", got)
	}
	for i, u := range got {
		if u.Path != "/apis/apps/v1/namespaces/ns/deployments" {
			t.Errorf("request %d: path %s", i, u.Path)
		}
		for k, v := range want[i] {
			if u.Query().Get(k) != v {
				t.Errorf("request %d: %s=%q, want %q (%s)", i, k, u.Query().Get(k), v, u.RawQuery)
			}
		}
	}
}
