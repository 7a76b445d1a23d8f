package examples_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// Fixtures under testdata/.
const (
	// clusterFixture holds what the fake Lookup serves to every folder: a
	// Node and the Pods that Deployments would have made.
	clusterFixture = "testdata/cluster.yaml"
	// liveFixture (per folder) holds the live children status.yaml sees,
	// as the API server returns them after apply.
	liveFixture = "live.yaml"
	goldenFile  = "golden.yaml"
)

// TestGolden renders every folder's children and status for its sample and
// compares them with testdata/<folder>/golden.yaml.
func TestGolden(t *testing.T) {
	cluster := readObjects(t, clusterFixture)
	for _, ex := range loadExamples(t) {
		t.Run(ex.name, func(t *testing.T) {
			live := readObjects(t, filepath.Join("testdata", ex.name, liveFixture))
			if live == nil {
				t.Fatalf("testdata/%s/%s is missing: status.yaml needs live children to render against", ex.name, liveFixture)
			}
			in := ex.input(ex.object(nil), cluster, live)

			children, err := ex.set.Children(t.Context(), in)
			if err != nil {
				t.Fatalf("children: %v", err)
			}
			checkChildren(t, children.Manifests)
			status, err := ex.set.Status(t.Context(), in)
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			checkStatus(t, ex, status.Status)

			golden.Check(t, filepath.Join("testdata", ex.name, goldenFile), formatResults(t, ex.set, children, status))
		})
	}
}

// TestStatusWithoutChildren renders every status.yaml as on a first
// reconcile whose children are not there (yet): it must still render a
// status the CRD accepts, with zeros and empty lists, not fail.
func TestStatusWithoutChildren(t *testing.T) {
	for _, ex := range loadExamples(t) {
		t.Run(ex.name, func(t *testing.T) {
			res, err := ex.set.Status(t.Context(), ex.input(ex.object(nil), nil, nil))
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			checkStatus(t, ex, res.Status)
		})
	}
}

// formatResults prints a render the way `helm template` prints a release:
// documents marked with their source.
func formatResults(t *testing.T, set kindRenderer, children, status *render.Result) []byte {
	t.Helper()
	var docs []golden.Doc
	for _, m := range children.Manifests {
		docs = append(docs, golden.Doc{Header: "Source: " + m.Template, Value: m.Object.Object})
	}
	if set.HasStatus() {
		docs = append(docs, golden.Doc{Header: "Status: status.yaml", Value: status.Status})
	}
	if children.RequeueAfter != 0 || status.RequeueAfter != 0 {
		docs = append(docs, golden.Doc{Header: fmt.Sprintf("RequeueAfter: children %v, status %v", children.RequeueAfter, status.RequeueAfter)})
	}
	return golden.YAML(t, docs...)
}

// checkChildren checks the rendered children against the folder contract:
// what the engine adds is not set by templates, and every child decodes
// strictly into its Kubernetes type, so a misspelt or misplaced field fails
// here rather than being dropped by the API server.
func checkChildren(t *testing.T, ms []render.Manifest) {
	t.Helper()
	for _, m := range ms {
		obj := m.Object
		where := fmt.Sprintf("%s document %d (%s %s)", m.Template, m.Index, obj.GetKind(), obj.GetName())
		if obj.GetNamespace() != "" {
			t.Errorf("%s sets metadata.namespace: the engine sets the parent's", where)
		}
		if len(obj.GetOwnerReferences()) > 0 {
			t.Errorf("%s sets ownerReferences: the engine sets the controller reference", where)
		}
		if _, ok := obj.GetLabels()["app.kubernetes.io/managed-by"]; ok {
			t.Errorf("%s sets the app.kubernetes.io/managed-by label: the engine sets it", where)
		}
		typed, err := scheme.Scheme.New(obj.GroupVersionKind())
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, typed, true); err != nil {
			t.Errorf("%s does not decode strictly as a %s: %v", where, obj.GroupVersionKind(), err)
		}
	}
}

// checkStatus checks a rendered status: it leaves the engine's fields alone
// and has only what the CRD's status schema allows.
func checkStatus(t *testing.T, ex *example, status map[string]any) {
	t.Helper()
	if !ex.set.HasStatus() {
		return
	}
	if status == nil {
		t.Fatal("status.yaml rendered nothing")
	}
	if _, ok := status["observedGeneration"]; ok {
		t.Error("status.yaml renders observedGeneration: the engine owns it")
	}
	if _, ok := status["conditions"]; ok {
		t.Error("status.yaml renders conditions: the examples leave them to the engine")
	}
	root := ex.crd.version(strings.Split(ex.kind.APIVersion, "/")[1]).Schema.OpenAPIV3Schema
	if errs := root.Properties["status"].validate("status", status); len(errs) > 0 {
		t.Errorf("the rendered status does not match the CRD:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBadInput checks what a custom resource missing a field gets: a
// *render.Error naming the file and line of the template's `required` (the
// engine puts it in the Reconciled condition, reason RenderFailed), and
// whether the CRD's schema already rejects it at `kubectl apply`.
func TestBadInput(t *testing.T) {
	examples := map[string]*example{}
	for _, ex := range loadExamples(t) {
		examples[ex.name] = ex
	}
	tests := []struct {
		name   string
		folder string
		edit   func(obj map[string]any)
		// The error: file, the line holding lineText, and the message.
		file, lineText, message string
		// schemaRejects: the CRD already refuses such an object, so the
		// render error is a second line of defence.
		schemaRejects bool
	}{
		{
			name: "Memcached without spec.size", folder: "memcached",
			edit: func(o map[string]any) { deleteNested(o, "spec", "size") },
			file: "deployment.yaml", lineText: `required "spec.size is required"`, message: "spec.size is required",
		},
		{
			name: "Memcached without spec", folder: "memcached",
			edit: func(o map[string]any) { delete(o, "spec") },
			file: "deployment.yaml", lineText: `required "spec.size is required"`, message: "spec.size is required",
		},
		{
			name: "HelloWorld without spec.size", folder: "helloworld",
			edit: func(o map[string]any) { deleteNested(o, "spec", "size") },
			file: "deployment.yaml", lineText: `required "spec.size is required"`, message: "spec.size is required",
			schemaRejects: true,
		},
		{
			name: "AppService without spec.image", folder: "appservice",
			edit: func(o map[string]any) { deleteNested(o, "spec", "image") },
			file: "deployment.yaml", lineText: `required "spec.image is required"`, message: "spec.image is required",
			schemaRejects: true,
		},
		{
			name: "AppService without spec.size", folder: "appservice",
			edit: func(o map[string]any) { deleteNested(o, "spec", "size") },
			file: "deployment.yaml", lineText: `required "spec.size is required"`, message: "spec.size is required",
			schemaRejects: true,
		},
		{
			name: "AppService without spec.ports", folder: "appservice",
			edit: func(o map[string]any) { deleteNested(o, "spec", "ports") },
			file: "service.yaml", lineText: `required "spec.ports is required`,
			message: "spec.ports is required: a NodePort Service needs at least one port",
		},
		{
			name: "At without spec.schedule", folder: "at",
			edit: func(o map[string]any) { deleteNested(o, "spec", "schedule") },
			file: "pod.yaml", lineText: `required "spec.schedule is required"`, message: "spec.schedule is required",
			schemaRejects: true,
		},
		{
			name: "At without spec.command", folder: "at",
			edit: func(o map[string]any) { deleteNested(o, "spec", "command") },
			file: "pod.yaml", lineText: `required "spec.command is required"`, message: "spec.command is required",
			schemaRejects: true,
		},
		{
			name: "At with a schedule that is not RFC 3339", folder: "at",
			edit: func(o map[string]any) { o["spec"].(map[string]any)["schedule"] = "2019-04-12 10:12" },
			file: "pod.yaml", lineText: `$wait := durationUntil`,
			message:       `durationUntil: "2019-04-12 10:12" is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)`,
			schemaRejects: true,
		},
		{
			name: "MyDaemonSet without spec.image", folder: "mydaemonset",
			edit: func(o map[string]any) { deleteNested(o, "spec", "image") },
			file: "pods.yaml", lineText: `required "spec.image is required"`, message: "spec.image is required",
			schemaRejects: true,
		},
	}
	cluster := readObjects(t, clusterFixture)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := examples[tt.folder]
			if ex == nil {
				t.Fatalf("no folder %s", tt.folder)
			}
			obj := ex.object(tt.edit)

			res, err := ex.set.Children(t.Context(), ex.input(obj, cluster, nil))
			var rerr *render.Error
			if !errors.As(err, &rerr) {
				t.Fatalf("Children() = %v, %v; want a *render.Error", res, err)
			}
			want := render.Error{Template: tt.file, Line: lineOf(t, filepath.Join(ex.dir, tt.file), tt.lineText), Message: tt.message}
			if rerr.Template != want.Template || rerr.Line != want.Line || rerr.Message != want.Message {
				t.Errorf("error = %q, want %q", rerr.Error(), want.Error())
			}

			root := ex.crd.version(strings.Split(ex.kind.APIVersion, "/")[1]).Schema.OpenAPIV3Schema
			errs := validateObject(root, obj)
			if rejected := len(errs) > 0; rejected != tt.schemaRejects {
				t.Errorf("the CRD schema rejects it: %v (%v), want %v", rejected, errs, tt.schemaRejects)
			}
		})
	}
}

// TestLookupsAreEnforced checks the fake Lookup itself, so that the golden
// tests' silence means the templates read only what kind.yaml declares.
func TestLookupsAreEnforced(t *testing.T) {
	ex := loadExample(t, "memcached") // declares v1 Pod only
	l := ex.lookup(nil)
	if _, err := l.List("v1", "Pod", sampleNamespace, ""); err != nil {
		t.Errorf("declared kind in the parent's namespace: %v", err)
	}
	if _, err := l.List("v1", "Secret", sampleNamespace, ""); err == nil {
		t.Error("undeclared kind: no error")
	}
	if _, err := l.Get("v1", "Pod", "kube-system", "x"); err == nil {
		t.Error("declared kind in another namespace: no error")
	}
}

// The At sample's schedule.
var atSchedule = time.Date(2019, 4, 12, 10, 12, 0, 0, time.UTC)

// atPod is a live Pod of the At sample, as the operator created it.
func atPod(command, phase string) map[string]any {
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": "example-at-pod", "namespace": sampleNamespace},
		"spec": map[string]any{
			"restartPolicy": "Never",
			"containers": []any{map[string]any{
				"name": "busybox", "image": "busybox", "command": []any{"sh", "-c", command},
			}},
		},
	}
	if phase != "" {
		pod["status"] = map[string]any{"phase": phase}
	}
	return pod
}

// TestAtSchedule follows an At through time: nothing and one requeue at the
// scheduled time before it, then the Pod, kept as it was created.
func TestAtSchedule(t *testing.T) {
	ex := loadExample(t, "at")
	setPhase := func(phase string) func(map[string]any) {
		return func(o map[string]any) { o["status"] = map[string]any{"phase": phase} }
	}
	tests := []struct {
		name    string
		now     time.Time
		edit    func(map[string]any)
		cluster []map[string]any
		// wantCommand is the Pod's command; nil: no Pod.
		wantCommand []any
		wantRequeue time.Duration
	}{
		{name: "an hour before the schedule", now: atSchedule.Add(-time.Hour), wantRequeue: time.Hour},
		{name: "a second before the schedule", now: atSchedule.Add(-time.Second), wantRequeue: time.Second},
		{name: "at the schedule", now: atSchedule, wantCommand: []any{"sh", "-c", "echo YAY"}},
		{name: "after the schedule", now: atSchedule.Add(time.Minute), wantCommand: []any{"sh", "-c", "echo YAY"}},
		{
			name: "a zone offset is honoured", now: atSchedule.Add(-time.Minute),
			edit:        func(o map[string]any) { o["spec"].(map[string]any)["schedule"] = "2019-04-12T12:12:00+02:00" },
			wantRequeue: time.Minute,
		},
		{
			name: "running, command edited since: the Pod stays as created", now: atSchedule.Add(time.Minute),
			edit:        func(o map[string]any) { o["spec"].(map[string]any)["command"] = "echo edited" },
			cluster:     []map[string]any{atPod("echo YAY", "Running")},
			wantCommand: []any{"sh", "-c", "echo YAY"},
		},
		{
			name: "running, schedule moved to the future: the Pod is not pruned", now: atSchedule.Add(time.Minute),
			edit:        func(o map[string]any) { o["spec"].(map[string]any)["schedule"] = "2030-01-01T00:00:00Z" },
			cluster:     []map[string]any{atPod("echo YAY", "Running")},
			wantCommand: []any{"sh", "-c", "echo YAY"},
		},
		{
			name: "done, Pod still there: kept", now: atSchedule.Add(time.Hour), edit: setPhase("DONE"),
			cluster:     []map[string]any{atPod("echo YAY", "Succeeded")},
			wantCommand: []any{"sh", "-c", "echo YAY"},
		},
		{name: "done, Pod deleted: not run again", now: atSchedule.Add(time.Hour), edit: setPhase("DONE")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ex.input(ex.object(tt.edit), tt.cluster, nil)
			in.Now = tt.now
			res, err := ex.set.Children(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkChildren(t, res.Manifests)
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, tt.wantRequeue)
			}
			if tt.wantCommand == nil {
				if len(res.Manifests) != 0 {
					t.Errorf("got %d children, want none", len(res.Manifests))
				}
				return
			}
			if len(res.Manifests) != 1 || res.Manifests[0].Object.GetKind() != "Pod" {
				t.Fatalf("got %d children, want the Pod", len(res.Manifests))
			}
			pod := res.Manifests[0].Object
			if pod.GetName() != "example-at-pod" {
				t.Errorf("Pod name %q, want example-at-pod", pod.GetName())
			}
			if policy := nestedString(pod.Object, "spec", "restartPolicy"); policy != "Never" {
				t.Errorf("restartPolicy %q, want Never", policy)
			}
			container := nested(pod.Object, "spec", "containers").([]any)[0].(map[string]any)
			if got := container["command"].([]any); !slices.Equal(got, tt.wantCommand) {
				t.Errorf("command %v, want %v", got, tt.wantCommand)
			}
		})
	}
}

// TestAtPhase checks the book's phases from the At's live Pod.
func TestAtPhase(t *testing.T) {
	ex := loadExample(t, "at")
	tests := []struct {
		name      string
		current   string         // status.phase before this render
		pod       map[string]any // live child; nil: none
		wantPhase string
	}{
		{name: "no Pod yet", wantPhase: "PENDING"},
		{name: "Pod just created, no status yet", current: "PENDING", pod: atPod("echo YAY", ""), wantPhase: "RUNNING"},
		{name: "Pod Pending", current: "PENDING", pod: atPod("echo YAY", "Pending"), wantPhase: "RUNNING"},
		{name: "Pod Running", current: "RUNNING", pod: atPod("echo YAY", "Running"), wantPhase: "RUNNING"},
		{name: "Pod Succeeded", current: "RUNNING", pod: atPod("echo YAY", "Succeeded"), wantPhase: "DONE"},
		{name: "Pod Failed", current: "RUNNING", pod: atPod("echo YAY", "Failed"), wantPhase: "DONE"},
		{name: "done, Pod deleted since", current: "DONE", wantPhase: "DONE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := ex.object(func(o map[string]any) {
				if tt.current != "" {
					o["status"] = map[string]any{"phase": tt.current}
				}
			})
			var live []map[string]any
			if tt.pod != nil {
				live = append(live, tt.pod)
			}
			res, err := ex.set.Status(t.Context(), ex.input(obj, nil, live))
			if err != nil {
				t.Fatal(err)
			}
			checkStatus(t, ex, res.Status)
			if got := res.Status["phase"]; got != tt.wantPhase {
				t.Errorf("phase %v, want %s", got, tt.wantPhase)
			}
		})
	}
}

func node(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}}
}

// TestMyDaemonSetPodPerNode checks one Pod per Node, bound to it.
func TestMyDaemonSetPodPerNode(t *testing.T) {
	ex := loadExample(t, "mydaemonset")
	tests := []struct {
		name  string
		nodes []map[string]any
		want  map[string]string // Pod name -> nodeName
	}{
		{name: "no Node", want: map[string]string{}},
		{
			name:  "two Nodes",
			nodes: []map[string]any{node("worker-a"), node("worker-b")},
			want:  map[string]string{"mydaemonset-sample-worker-a": "worker-a", "mydaemonset-sample-worker-b": "worker-b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ex.set.Children(t.Context(), ex.input(ex.object(nil), tt.nodes, nil))
			if err != nil {
				t.Fatal(err)
			}
			checkChildren(t, res.Manifests)
			got := map[string]string{}
			for _, m := range res.Manifests {
				got[m.Object.GetName()] = nestedString(m.Object.Object, "spec", "nodeName")
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Pods %v, want %v", got, tt.want)
			}
		})
	}
}

// livePod is a live child Pod of the MyDaemonSet sample.
func livePod(name, phase, ready string) map[string]any {
	status := map[string]any{"phase": phase}
	if ready != "" {
		status["conditions"] = []any{
			map[string]any{"type": "PodScheduled", "status": "True"},
			map[string]any{"type": "Ready", "status": ready},
		}
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": sampleNamespace},
		"status":   status,
	}
}

// TestMyDaemonSetAvailable checks availableReplicas: Pods Running and Ready.
func TestMyDaemonSetAvailable(t *testing.T) {
	ex := loadExample(t, "mydaemonset")
	tests := []struct {
		name string
		pods []map[string]any
		want int64
	}{
		{name: "no Pod", want: 0},
		{name: "one Running and Ready", pods: []map[string]any{livePod("a", "Running", "True")}, want: 1},
		{
			name: "mixed",
			pods: []map[string]any{
				livePod("a", "Running", "True"),
				livePod("b", "Running", "False"), // not ready yet
				livePod("c", "Pending", ""),      // not started
				livePod("d", "Failed", "True"),   // stale condition on an ended Pod
				livePod("e", "Running", "True"),
			},
			want: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ex.set.Status(t.Context(), ex.input(ex.object(nil), nil, tt.pods))
			if err != nil {
				t.Fatal(err)
			}
			checkStatus(t, ex, res.Status)
			if got := res.Status["availableReplicas"]; got != tt.want {
				t.Errorf("availableReplicas = %v (%T), want %d", got, got, tt.want)
			}
		})
	}
}

// TestAppServiceOptionalFields renders an AppService using every optional
// field of the tutorial's spec, and checks what reaches the Deployment and
// the Service, decoded into their Go types.
func TestAppServiceOptionalFields(t *testing.T) {
	ex := loadExample(t, "appservice")
	var spec map[string]any
	if err := decodeLikeAPI([]byte(`
size: 3
image: registry.example.com/web:2.1
resources:
  limits: {cpu: 500m, memory: 128Mi}
  requests: {cpu: 100m, memory: 64Mi}
envs:
  - {name: MODE, value: production}
  - name: POD_NAME
    valueFrom: {fieldRef: {fieldPath: metadata.name}}
ports:
  - {name: http, port: 80, targetPort: web, nodePort: 30080}
  - {name: metrics, port: 9090, targetPort: 9091}
  - {name: dns, port: 53, protocol: UDP}
`), &spec); err != nil {
		t.Fatal(err)
	}
	obj := ex.object(func(o map[string]any) { o["spec"] = spec })
	root := ex.crd.version("v1").Schema.OpenAPIV3Schema
	if errs := validateObject(root, obj); len(errs) > 0 {
		t.Fatalf("the CRD rejects the test's AppService:\n%s", strings.Join(errs, "\n"))
	}

	res, err := ex.set.Children(t.Context(), ex.input(obj, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkChildren(t, res.Manifests)
	var deployment appsv1.Deployment
	var service corev1.Service
	for _, m := range res.Manifests {
		var target any = &deployment
		if m.Object.GetKind() == "Service" {
			target = &service
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object.Object, target); err != nil {
			t.Fatal(err)
		}
	}

	c := deployment.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example.com/web:2.1" || *deployment.Spec.Replicas != 3 {
		t.Errorf("image %q, replicas %d", c.Image, *deployment.Spec.Replicas)
	}
	if c.Resources.Limits.Cpu().String() != "500m" || c.Resources.Requests.Memory().String() != "64Mi" {
		t.Errorf("resources %v", c.Resources)
	}
	if len(c.Env) != 2 || c.Env[1].ValueFrom == nil || c.Env[1].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("env %v", c.Env)
	}
	// A named targetPort names the container port, numbered as the Service
	// port; a numbered one is the container port; none means the Service
	// port. Protocols follow.
	wantPorts := []corev1.ContainerPort{
		{Name: "web", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
		{ContainerPort: 9091, Protocol: corev1.ProtocolTCP},
		{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
	}
	if fmt.Sprint(c.Ports) != fmt.Sprint(wantPorts) {
		t.Errorf("container ports\n got %v\nwant %v", c.Ports, wantPorts)
	}

	if service.Spec.Type != corev1.ServiceTypeNodePort || len(service.Spec.Ports) != 3 {
		t.Fatalf("service %v", service.Spec)
	}
	if p := service.Spec.Ports[0]; p.NodePort != 30080 || p.TargetPort.String() != "web" {
		t.Errorf("service port %v: want nodePort 30080 and targetPort web kept", p)
	}
	if p := service.Spec.Ports[2]; p.Protocol != corev1.ProtocolUDP || p.NodePort != 0 {
		t.Errorf("service port %v: want UDP, nodePort left to the API server", p)
	}
}
