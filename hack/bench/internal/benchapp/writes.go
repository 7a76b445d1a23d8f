package benchapp

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/ownership"
)

// What the limit writes is what the operator writes for a BenchApp of
// either kind (hack/bench/templates/benchapp or hack/bench/charts/benchapp;
// `operator render --field-manager limit` shows it; writes_test.go
// compares the two): the same fields, labels, annotations, owner reference
// and status, written by hand instead of rendered, because the limit is the
// cost of the requests alone.

// Manager is the limit's field manager, and so its children's
// managed-by label, as --field-manager would make it for the operator.
const Manager = "limit"

// childMeta is the metadata the engine gives every child: its managed-by
// and parent-uid labels, the parent and template annotations, and a
// controller owner reference to the parent.
func childMeta(app *unstructured.Unstructured, template string) map[string]any {
	return map[string]any{
		"name":      app.GetName(),
		"namespace": app.GetNamespace(),
		"labels": map[string]any{
			"app.kubernetes.io/managed-by":  Manager,
			"operator.tmplop.io/parent-uid": string(app.GetUID()),
		},
		"annotations": map[string]any{
			"operator.tmplop.io/parent":   "BenchApp.bench.tmplop.io/" + app.GetNamespace() + "/" + app.GetName(),
			"operator.tmplop.io/template": template,
		},
		"ownerReferences": []any{map[string]any{
			"apiVersion":         "bench.tmplop.io/v1",
			"kind":               "BenchApp",
			"name":               app.GetName(),
			"uid":                string(app.GetUID()),
			"controller":         true,
			"blockOwnerDeletion": true,
		}},
	}
}

// withHash adds the engine's hash annotation, computed as the engine does
// (ownership.Hash of the child without it): the operator writes it to skip
// applies across restarts, so its bytes are part of the work.
func withHash(child *unstructured.Unstructured) *unstructured.Unstructured {
	ann := child.GetAnnotations()
	ann[ownership.AnnotationHash] = ownership.Hash(child)
	child.SetAnnotations(ann)
	return child
}

// Deployment is deployment.yaml's Deployment for app.
func Deployment(k Kind, app *unstructured.Unstructured) *unstructured.Unstructured {
	size, _, _ := unstructured.NestedInt64(app.Object, "spec", "size")
	image, _, _ := unstructured.NestedString(app.Object, "spec", "image")
	ports, _, _ := unstructured.NestedSlice(app.Object, "spec", "ports")
	selector := map[string]any{"app": app.GetName()}
	container := map[string]any{
		"name":            app.GetName(),
		"image":           image,
		"imagePullPolicy": "IfNotPresent",
	}
	if len(ports) > 0 {
		var cports []any
		for _, p := range ports {
			p, _ := p.(map[string]any)
			protocol := "TCP"
			if s, ok := p["protocol"].(string); ok && s != "" {
				protocol = s
			}
			// As the template: a named targetPort names the container
			// port, numbered as the Service port; else targetPort or port.
			switch t := p["targetPort"].(type) {
			case string:
				cports = append(cports, map[string]any{"name": t, "containerPort": p["port"], "protocol": protocol})
			case nil:
				cports = append(cports, map[string]any{"containerPort": p["port"], "protocol": protocol})
			default:
				cports = append(cports, map[string]any{"containerPort": t, "protocol": protocol})
			}
		}
		container["ports"] = cports
	}
	return withHash(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   childMeta(app, k.Template("deployment.yaml")),
		"spec": map[string]any{
			"replicas": size,
			"selector": map[string]any{"matchLabels": selector},
			"template": map[string]any{
				"metadata": map[string]any{"labels": selector},
				"spec":     map[string]any{"containers": []any{container}},
			},
		},
	}})
}

// Service is service.yaml's ClusterIP Service for app: its ports are
// spec.ports as they are.
func Service(k Kind, app *unstructured.Unstructured) *unstructured.Unstructured {
	ports, _, _ := unstructured.NestedSlice(app.Object, "spec", "ports")
	return withHash(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   childMeta(app, k.Template("service.yaml")),
		"spec": map[string]any{
			"type":     "ClusterIP",
			"selector": map[string]any{"app": app.GetName()},
			"ports":    ports,
		},
	}})
}

// Status is the status the operator writes for app: observedGeneration
// and the engine's conditions, and status.yaml's replica counts for the
// folder, status.chart for the chart. Nothing runs the Deployments on this
// control plane: the replica counts are 0, and the Deployment, 0/size
// available, keeps the object not Ready and Reconciling (the Service, a
// ClusterIP one, is Current). A condition keeps its transition time while
// its status stays.
func Status(k Kind, app *unstructured.Unstructured, now time.Time) *unstructured.Unstructured {
	gen := app.GetGeneration()
	size, _, _ := unstructured.NestedInt64(app.Object, "spec", "size")
	notReady := fmt.Sprintf("Deployment/%s 0/%d available", app.GetName(), size)
	current, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	condition := func(typ string, st metav1.ConditionStatus, reason, message string) any {
		transition := now.UTC().Truncate(time.Second).Format(time.RFC3339)
		for _, c := range current {
			if c, ok := c.(map[string]any); ok && c["type"] == typ && c["status"] == string(st) {
				if t, ok := c["lastTransitionTime"].(string); ok {
					transition = t
				}
			}
		}
		return map[string]any{"type": typ, "status": string(st), "reason": reason, "message": message,
			"observedGeneration": gen, "lastTransitionTime": transition}
	}
	status := map[string]any{
		"observedGeneration": gen,
		"conditions": []any{
			condition("Reconciled", metav1.ConditionTrue, "Reconciled", "Reconciled"),
			condition("Ready", metav1.ConditionFalse, "ChildrenNotReady", notReady),
			condition("Reconciling", metav1.ConditionTrue, "Progressing", notReady),
		},
	}
	if k.Chart != nil {
		status["chart"] = k.Chart
	} else {
		status["replicas"], status["readyReplicas"], status["availableReplicas"] = int64(0), int64(0), int64(0)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.tmplop.io/v1",
		"kind":       "BenchApp",
		"metadata":   map[string]any{"name": app.GetName(), "namespace": app.GetNamespace()},
		"status":     status,
	}}
}
