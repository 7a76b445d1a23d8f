package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Status is a child's health.
type Status string

// The healths of a child.
const (
	// Current: the child is what its kind calls ready (a Deployment's
	// replicas are available, a Job completed, readyWhen printed true).
	Current Status = "Current"
	// InProgress: it is on its way (or being deleted).
	InProgress Status = "InProgress"
	// Failed: it failed and will not get better by itself (a Job that
	// failed, a Deployment past its progress deadline).
	Failed Status = "Failed"
	// Unknown: its health cannot be told (a readyWhen expression that
	// fails, a status kstatus cannot read).
	Unknown Status = "Unknown"
)

// Result is one child's health.
type Result struct {
	Status Status
	// Reason is a CamelCase word when one is known: the child's own (a
	// Job's BackoffLimitExceeded) or kstatus' (LessAvailable).
	Reason  string
	Message string
}

// Ready reports whether the child is Current.
func (r Result) Ready() bool { return r.Status == Current }

// Value is the result as status.yaml sees it under a child's health key.
func (r Result) Value() map[string]any {
	return map[string]any{"status": string(r.Status), "message": r.Message}
}

func (r Result) String() string {
	if r.Message == "" {
		return string(r.Status)
	}
	return string(r.Status) + ": " + r.Message
}

// Checker judges children, with a kind folder's readyWhen rules.
// The zero value and nil judge by kstatus alone.
type Checker struct {
	rules map[schema.GroupKind]*rule
}

// Rule is one readyWhen entry of kind.yaml: the child kind it judges (any
// version) and its expression.
type Rule struct {
	APIVersion string
	Kind       string
	Expression string
}

// NewChecker parses rules. Errors name the entry by its index and kind.
func NewChecker(rules []Rule) (*Checker, error) {
	c := &Checker{rules: map[schema.GroupKind]*rule{}}
	for i, r := range rules {
		gk := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind).GroupKind()
		if _, dup := c.rules[gk]; dup {
			return nil, fmt.Errorf("readyWhen[%d]: %s is already judged by another entry", i, gk)
		}
		parsed, err := parse(r.Expression)
		if err != nil {
			return nil, fmt.Errorf("readyWhen[%d] (%s): %w", i, gk, err)
		}
		c.rules[gk] = parsed
	}
	return c, nil
}

// Check judges obj, a live child as the API server returned it. It reads
// nothing else and does not modify obj.
func (c *Checker) Check(obj *unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Status: Unknown, Message: "not observed yet"}
	}
	if obj.GetDeletionTimestamp() != nil {
		return Result{Status: InProgress, Reason: "Terminating", Message: "being deleted"}
	}
	gk := obj.GroupVersionKind().GroupKind()
	if c != nil {
		if r, ok := c.rules[gk]; ok {
			return r.eval(obj)
		}
	}
	switch gk {
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		return job(obj)
	case schema.GroupKind{Kind: "Pod"}:
		if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase == "Failed" {
			reason, _, _ := unstructured.NestedString(obj.Object, "status", "reason")
			msg, _, _ := unstructured.NestedString(obj.Object, "status", "message")
			if msg == "" {
				msg = "failed"
			}
			return Result{Status: Failed, Reason: or(reason, "PodFailed"), Message: msg}
		}
	}
	res := compute(obj)
	if res.Status == InProgress {
		res.Message = replicas(obj, gk, res.Message)
	}
	return res
}

// compute is kstatus' verdict, in this package's four states.
func compute(obj *unstructured.Unstructured) (out Result) {
	defer func() {
		// kstatus asserts on the shapes it reads; a child with an odd
		// status must not take a worker down.
		if p := recover(); p != nil {
			out = Result{Status: Unknown, Message: fmt.Sprintf("cannot read its status: %v", p)}
		}
	}()
	res, err := kstatus.Compute(obj)
	if err != nil {
		return Result{Status: Unknown, Message: err.Error()}
	}
	out = Result{Message: res.Message}
	for _, c := range res.Conditions {
		if c.Reason != "" {
			out.Reason = c.Reason
			break
		}
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		out.Status = Current
	case kstatus.InProgressStatus:
		out.Status = InProgress
	case kstatus.FailedStatus:
		out.Status = Failed
	case kstatus.TerminatingStatus:
		out.Status, out.Reason = InProgress, "Terminating"
	default:
		out.Status = Unknown
	}
	return out
}

// job judges a Job by what a parent waits for: its completion. kstatus
// calls a Job that has started Current; a migration that a Deployment
// depends on is not done until it completed.
func job(obj *unstructured.Unstructured) Result {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, it := range conds {
		c, _ := it.(map[string]any)
		if c["status"] != "True" {
			continue
		}
		reason, _ := c["reason"].(string)
		msg, _ := c["message"].(string)
		switch c["type"] {
		case "Failed":
			return Result{Status: Failed, Reason: or(reason, "JobFailed"), Message: or(msg, "failed")}
		case "Complete":
			return Result{Status: Current, Message: "completed"}
		}
	}
	if suspended, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); suspended {
		return Result{Status: InProgress, Reason: "JobSuspended", Message: "suspended"}
	}
	if start, _, _ := unstructured.NestedString(obj.Object, "status", "startTime"); start == "" {
		return Result{Status: InProgress, Reason: "JobNotStarted", Message: "not started"}
	}
	succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
	active, _, _ := unstructured.NestedInt64(obj.Object, "status", "active")
	failed, _, _ := unstructured.NestedInt64(obj.Object, "status", "failed")
	return Result{Status: InProgress, Reason: "JobRunning",
		Message: fmt.Sprintf("running: %d succeeded, %d active, %d failed", succeeded, active, failed)}
}

// replicas says how many replicas of a workload are available, which is
// what a user asks of it ("1/2 available"), and keeps kstatus' message
// when it is about something else (a generation not observed yet).
func replicas(obj *unstructured.Unstructured, gk schema.GroupKind, msg string) string {
	var avail, want int64
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		want = 1
		if n, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); found {
			want = toInt(n)
		}
		v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "availableReplicas")
		avail = toInt(v)
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "numberAvailable")
		avail = toInt(v)
		w, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "desiredNumberScheduled")
		want = toInt(w)
	default:
		return msg
	}
	counts := fmt.Sprintf("%d/%d available", avail, want)
	if isCountMessage(msg) {
		return counts
	}
	return counts + " (" + msg + ")"
}

// isCountMessage reports whether msg is one of kstatus' replica counts,
// which "n/m available" says better.
func isCountMessage(msg string) bool {
	for _, p := range []string{"Replicas: ", "Updated: ", "Available: ", "Ready: ", "Pending termination: "} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	return msg == ""
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case int32:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
