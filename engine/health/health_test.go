package health

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name, obj   string
		want        Status
		wantMessage string // substring
		wantReason  string
	}{
		{name: "Deployment just created", want: InProgress, wantMessage: "0/2 available", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 2}`},
		{name: "Deployment with one of two available", want: InProgress, wantMessage: "1/2 available", wantReason: "LessAvailable", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1}`},
		{name: "Deployment available", want: Current, obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}`},
		{name: "Deployment whose new spec is not observed yet", want: InProgress, wantMessage: "2/2 available (Deployment generation is 2", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}`},
		{name: "Deployment past its progress deadline", want: Failed, wantReason: "ProgressDeadlineExceeded", obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]`},
		{name: "StatefulSet short of ready", want: InProgress, wantMessage: "1/3 available", obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, currentReplicas: 3, updatedReplicas: 3, readyReplicas: 1, availableReplicas: 1}`},
		{name: "DaemonSet scheduling", want: InProgress, wantMessage: "0/4 available", obj: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 4, currentNumberScheduled: 1, numberAvailable: 0}`},
		{name: "Job not started", want: InProgress, wantMessage: "not started", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}`},
		{name: "Job running is not done", want: InProgress, wantMessage: "running: 0 succeeded, 1 active", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status: {startTime: "2026-01-01T00:00:00Z", active: 1}`},
		{name: "Job suspended", want: InProgress, wantReason: "JobSuspended", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {suspend: true}`},
		{name: "Job complete", want: Current, obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status:
  succeeded: 1
  conditions: [{type: SuccessCriteriaMet, status: "True"}, {type: Complete, status: "True"}]`},
		{name: "Job failed, with its own reason", want: Failed, wantReason: "BackoffLimitExceeded", wantMessage: "backoff limit", obj: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status:
  failed: 7
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}`},
		{name: "Pod running and ready", want: Current, obj: `
apiVersion: v1
kind: Pod
metadata: {name: p}
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}`},
		{name: "Pod failed", want: Failed, wantReason: "PodFailed", obj: `
apiVersion: v1
kind: Pod
metadata: {name: p}
status: {phase: Failed}`},
		{name: "Service", want: Current, obj: `
apiVersion: v1
kind: Service
metadata: {name: s}
spec: {type: NodePort, clusterIP: 10.0.0.1}`},
		{name: "PVC pending", want: InProgress, obj: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
status: {phase: Pending}`},
		{name: "PVC bound", want: Current, obj: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
status: {phase: Bound}`},
		{name: "CRD established", want: Current, obj: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.e.io}
status: {conditions: [{type: NamesAccepted, status: "True"}, {type: Established, status: "True"}]}`},
		{name: "CRD installing", want: InProgress, obj: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.e.io}
status: {conditions: [{type: NamesAccepted, status: "True"}, {type: Established, status: "False", reason: Installing}]}`},
		{name: "ConfigMap", want: Current, obj: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}`},
		{name: "custom resource, generation not observed", want: InProgress, wantReason: "LatestGenerationNotObserved", obj: `
apiVersion: e.io/v1
kind: Database
metadata: {name: d, generation: 3}
status: {observedGeneration: 2}`},
		{name: "custom resource Ready=False", want: InProgress, wantMessage: "disk full", obj: `
apiVersion: e.io/v1
kind: Database
metadata: {name: d, generation: 3}
status: {observedGeneration: 3, conditions: [{type: Ready, status: "False", reason: Waiting, message: disk full}]}`},
		{name: "custom resource Stalled", want: Failed, wantReason: "BadConfig", obj: `
apiVersion: e.io/v1
kind: Database
metadata: {name: d}
status: {conditions: [{type: Stalled, status: "True", reason: BadConfig, message: no such version}]}`},
		{name: "custom resource without conditions", want: Current, obj: `
apiVersion: e.io/v1
kind: Database
metadata: {name: d}`},
		{name: "being deleted", want: InProgress, wantReason: "Terminating", obj: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, deletionTimestamp: "2026-01-01T00:00:00Z"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.obj)
			before := runtime.DeepCopyJSON(obj.Object)
			got := (*Checker)(nil).Check(obj)
			if got.Status != tc.want || !strings.Contains(got.Message, tc.wantMessage) || (tc.wantReason != "" && got.Reason != tc.wantReason) {
				t.Errorf("Check = %+v, want %s with message ~%q, reason %q", got, tc.want, tc.wantMessage, tc.wantReason)
			}
			if !equalJSON(before, obj.Object) {
				t.Error("Check modified the object")
			}
		})
	}
}

func TestReadyWhen(t *testing.T) {
	c, err := NewChecker([]Rule{
		{APIVersion: "e.io/v1", Kind: "Database", Expression: `{{ eq (dig "status" "phase" "" .) "Running" }}`},
		{APIVersion: "v1", Kind: "ConfigMap", Expression: `{{ if eq .data.state "done" }}true{{ else }}state is {{ .data.state }}{{ end }}`},
		{APIVersion: "e.io/v1", Kind: "Broken", Expression: `{{ index .status.list 5 }}`},
		{APIVersion: "e.io/v1", Kind: "Mutator", Expression: `{{ $_ := set .metadata "name" "changed" }}true`},
		{APIVersion: "e.io/v1", Kind: "Loud", Expression: `{{ repeat 2000 "x" }}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, obj string
		want      Status
		message   string
	}{
		{name: "expression true", want: Current, obj: "apiVersion: e.io/v2\nkind: Database\nmetadata: {name: d}\nstatus: {phase: Running}"},
		{name: "expression false", want: InProgress, message: "false", obj: "apiVersion: e.io/v1\nkind: Database\nmetadata: {name: d}\nstatus: {phase: Creating}"},
		{name: "overrides kstatus and its generation check", want: Current,
			obj: "apiVersion: e.io/v1\nkind: Database\nmetadata: {name: d, generation: 2}\nstatus: {observedGeneration: 1, phase: Running}"},
		{name: "output is the message", want: InProgress, message: "state is copying",
			obj: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {state: copying}"},
		{name: "overrides kstatus for a built-in kind", want: Current, obj: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {state: done}"},
		{name: "template error is Unknown", want: Unknown, message: "readyWhen: ", obj: "apiVersion: e.io/v1\nkind: Broken\nmetadata: {name: b}\nstatus: {list: [1]}"},
		{name: "output cap", want: Unknown, message: "output over 1024 bytes", obj: "apiVersion: e.io/v1\nkind: Loud\nmetadata: {name: l}"},
		{name: "deleting wins", want: InProgress, message: "being deleted",
			obj: "apiVersion: e.io/v1\nkind: Database\nmetadata: {name: d, deletionTimestamp: \"2026-01-01T00:00:00Z\"}\nstatus: {phase: Running}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Check(object(t, tc.obj))
			if got.Status != tc.want || !strings.Contains(got.Message, tc.message) {
				t.Errorf("Check = %+v, want %s with message ~%q", got, tc.want, tc.message)
			}
		})
	}
	t.Run("the child is not modified", func(t *testing.T) {
		obj := object(t, "apiVersion: e.io/v1\nkind: Mutator\nmetadata: {name: m}")
		if got := c.Check(obj); got.Status != Current || obj.GetName() != "m" {
			t.Errorf("Check = %+v, name now %q", got, obj.GetName())
		}
	})
}

// TestReadyWhenBudget: an expression runs under a budget, as a render does:
// one that loops or builds without bound is stopped, Unknown, within its
// time budget plus a grace period.
func TestReadyWhenBudget(t *testing.T) {
	c, err := NewChecker([]Rule{
		{APIVersion: "e.io/v1", Kind: "Slow", Expression: `{{ range until 50 }}{{ $k := genPrivateKey "rsa" }}{{ end }}true`},
		{APIVersion: "e.io/v1", Kind: "Growing", Expression: `{{ $s := "ab" }}{{ range until 60 }}{{ $s = cat $s $s }}{{ end }}true`},
	})
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]string{"Slow": "readyWhen: did not finish within 1s", "Growing": "render budget exceeded: output"} {
		start := time.Now()
		got := c.Check(object(t, "apiVersion: e.io/v1\nkind: "+kind+"\nmetadata: {name: x}"))
		if got.Status != Unknown || got.Reason != "ReadyWhenFailed" || !strings.Contains(got.Message, want) {
			t.Errorf("%s: Check = %+v, want Unknown with message ~%q", kind, got, want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: took %s", kind, d)
		}
	}
}

func TestNewCheckerErrors(t *testing.T) {
	for _, tc := range []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{{APIVersion: "v1", Kind: "ConfigMap", Expression: "{{ if }}"}}, "readyWhen[0] (ConfigMap): template: readyWhen:1: missing value for if"},
		{[]Rule{{APIVersion: "v1", Kind: "ConfigMap", Expression: "{{ nosuchfunc . }}"}}, `function "nosuchfunc" not defined`},
		{[]Rule{{APIVersion: "v1", Kind: "ConfigMap", Expression: "  "}}, "readyWhen[0] (ConfigMap): expression is empty"},
		{[]Rule{{APIVersion: "e.io/v1", Kind: "A", Expression: "true"}, {APIVersion: "e.io/v2", Kind: "A", Expression: "true"}}, "readyWhen[1]: A.e.io is already judged"},
		{[]Rule{{APIVersion: "v1", Kind: "ConfigMap", Expression: `{{ env "HOME" }}`}}, `function "env" not defined`},
	} {
		if _, err := NewChecker(tc.rules); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewChecker(%v) = %v, want %q", tc.rules, err, tc.want)
		}
	}
}

func equalJSON(a, b map[string]any) bool {
	ja, _ := yaml.Marshal(a)
	jb, _ := yaml.Marshal(b)
	return string(ja) == string(jb)
}
