package cached

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// appliedDeployment is an apply's response as kube-apiserver sends it: the
// object with its managedFields.
const appliedDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns","uid":"4b7c9d39-0d5a-4a4e-9a6f-0d8f1c7f2a11","resourceVersion":"1234","generation":2,"creationTimestamp":"2026-11-26T09:00:00Z","labels":{"app":"web","app.kubernetes.io/managed-by":"operator","operator.tmplop.io/parent-uid":"8c2e"},"annotations":{"deployment.kubernetes.io/revision":"1","operator.tmplop.io/hash":"IKB6KakDCzxn5SOQvgiXbA","operator.tmplop.io/parent":"AppService.app.example.com/ns/web","operator.tmplop.io/template":"deployment.yaml"},"ownerReferences":[{"apiVersion":"app.example.com/v1","kind":"AppService","name":"web","uid":"8c2e","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"operator","operation":"Apply","apiVersion":"apps/v1","time":"2026-11-26T09:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:operator.tmplop.io/hash":{},"f:operator.tmplop.io/parent":{},"f:operator.tmplop.io/template":{}},"f:labels":{"f:app":{},"f:app.kubernetes.io/managed-by":{},"f:operator.tmplop.io/parent-uid":{}},"f:ownerReferences":{"k:{\"uid\":\"8c2e\"}":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}},{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","time":"2026-11-26T09:00:01Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:replicas":{}}},"subresource":"status"}]},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},"status":{"observedGeneration":2,"replicas":2,"conditions":[{"type":"Available","status":"False","lastUpdateTime":"2026-11-26T09:00:01Z","lastTransitionTime":"2026-11-26T09:00:01Z","reason":"MinimumReplicasUnavailable","message":"Deployment does not have minimum availability."}]}}`

// TestApplied: an apply's response decodes as the dynamic client decodes
// it, less the managedFields; Written reads the metadata a writer compares
// with what it read, the same as the full decode.
func TestApplied(t *testing.T) {
	full := &unstructured.Unstructured{}
	if err := full.UnmarshalJSON([]byte(appliedDeployment)); err != nil {
		t.Fatal(err)
	}
	got, err := Applied([]byte(appliedDeployment))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetManagedFields()) != 0 {
		t.Fatalf("managedFields kept: %v", got.GetManagedFields())
	}
	full.SetManagedFields(nil)
	if !equalJSON(t, full, got) {
		t.Fatalf("Applied differs from the full decode less managedFields:\n%v\n%v", full.Object, got.Object)
	}
	w, err := Written([]byte(appliedDeployment))
	if err != nil {
		t.Fatal(err)
	}
	if w.GetResourceVersion() != full.GetResourceVersion() || w.GetGeneration() != full.GetGeneration() ||
		!maps.Equal(w.GetLabels(), full.GetLabels()) || !maps.Equal(w.GetAnnotations(), full.GetAnnotations()) ||
		!slices.Equal(w.GetFinalizers(), full.GetFinalizers()) || w.GetDeletionTimestamp() != nil {
		t.Fatalf("Written = %+v; want the full decode's metadata", w)
	}
	if _, err := Applied([]byte(`{"apiVersion":"v1","kind":"Status","status":"Failure"}`)); err == nil {
		t.Fatal("a Status decoded as an applied object")
	}
}

func equalJSON(t *testing.T, a, b *unstructured.Unstructured) bool {
	t.Helper()
	ja, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	jb, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// BenchmarkApplyResponse compares what the engine pays to read an apply's
// response: the dynamic client's decode into maps, managedFields included,
// against Applied (children) and Written (status writes).
func BenchmarkApplyResponse(b *testing.B) {
	data := []byte(appliedDeployment)
	b.Run("dynamic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Applied", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Applied(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Written(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestApplyErrors: an apply the API server refuses gives the StatusError
// it sent (its reason and message), as the dynamic client does, so that
// the callers' marks and messages hold; a success gives the body.
func TestApplyErrors(t *testing.T) {
	forbidden := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"l1\" is forbidden: User \"system:serviceaccount:ns:sa\" cannot patch resource \"deployments\"","reason":"Forbidden","details":{"name":"l1","group":"apps","kind":"deployments"},"code":403}`
	var gotPath, gotType, gotQuery string
	c := applyServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotType, gotQuery = r.URL.Path, r.Header.Get("Content-Type"), r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/l1") {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(forbidden))
			return
		}
		_, _ = w.Write([]byte(appliedDeployment))
	})
	opts := metav1.PatchOptions{FieldManager: "op", Force: ptr.To(true)}
	_, err := c.Apply(t.Context(), deployments, "ns", "l1", "", []byte(`{}`), opts)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot patch resource "deployments"`) {
		t.Fatalf("err = %v, want the Forbidden StatusError", err)
	}
	body, err := c.Apply(t.Context(), deployments, "ns", "web", "status", []byte(`{}`), opts)
	if err != nil || string(body) != appliedDeployment {
		t.Fatalf("body %d bytes, err %v", len(body), err)
	}
	if gotPath != "/apis/apps/v1/namespaces/ns/deployments/web/status" || gotType != "application/apply-patch+yaml" ||
		!strings.Contains(gotQuery, "fieldManager=op") || !strings.Contains(gotQuery, "force=true") {
		t.Fatalf("request %s %s ?%s", gotPath, gotType, gotQuery)
	}
}

// TestApplyQuery: the options go on the wire as the parameter codec would
// put them, for every field of PatchOptions.
func TestApplyQuery(t *testing.T) {
	var got url.Values
	c := applyServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(appliedDeployment))
	})
	for _, opts := range []metav1.PatchOptions{
		{FieldManager: "op", Force: ptr.To(true)},
		{FieldManager: "op", Force: ptr.To(false)},
		{FieldManager: "op"},
		{},
		{FieldManager: "op", Force: ptr.To(true), DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"},
	} {
		want, err := metav1.ParameterCodec.EncodeParameters(&opts, optionsVersion)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Apply(t.Context(), deployments, "ns", "web", "", []byte(`{}`), opts); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("options %+v: query %v, want %v", opts, got, want)
		}
	}
}

// deployments is the resource the apply tests write.
var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// applyServer is a Client of an API server that answers with handler.
func applyServer(t *testing.T, handler http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	c, err := NewClient(&rest.Config{Host: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
