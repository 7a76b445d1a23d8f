package safety

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/test/cluster"
)

func appService(name, image string) string {
	return fmt.Sprintf(`apiVersion: app.example.com/v1
kind: AppService
metadata:
  name: %s
spec:
  size: 1
  image: %s
  ports:
  - port: 80
`, name, image)
}

// event returns the message of the last Event with reason on the object.
func event(ctx context.Context, ns, name, reason string) (string, error) {
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return "", err
	}
	for _, e := range list.Items {
		if e.Reason == reason {
			return e.Message, nil
		}
	}
	return "", fmt.Errorf("no %s Event on %s", reason, name)
}

// TestNoTakeover: an AppService named like a Deployment it did not create
// (kubectl create deployment web, then an AppService web) must not rewrite
// it, own it, or get it garbage-collected: the confused deputy of kro's
// CVE-2025-48710. Before the ownership guard, server-side apply with force
// rewrote the image and added the AppService's controller reference.
// With the owner's consent (an annotation naming the AppService), the same
// AppService adopts it.
func TestNoTakeover(t *testing.T) {
	ns := env.Namespace(t)
	theirs := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			// The labels the AppService template selects on: a selector
			// cannot change, so only a compatible object can be adopted.
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "theirs:1"}}},
			},
		},
	}
	dep, err := cs.AppsV1().Deployments(ns).Create(t.Context(), theirs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mark := time.Now()
	env.Create(t, appserviceGVR, ns, appService("web", "nginx:1.27"))

	o := env.WaitCondition(t, appserviceGVR, ns, "web", "Reconciled", "False", "OwnershipConflict",
		"exists and is not owned by this AppService")
	t.Logf("condition: %s", cluster.Condition(o, "Reconciled").Message)
	cluster.Eventually(t, 10*time.Second, "an OwnershipConflict Event", func(ctx context.Context) (bool, error) {
		_, err := event(ctx, ns, "web", "OwnershipConflict")
		return err == nil, err
	})
	unchanged := func() {
		t.Helper()
		d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "theirs:1" || len(d.OwnerReferences) != 0 || d.UID != dep.UID {
			t.Fatalf("the Deployment was touched: image %s, owners %v, uid %s", img, d.OwnerReferences, d.UID)
		}
	}
	unchanged()
	if env.Exists(t, cluster.GVR("", "v1", "services"), ns, "web") {
		t.Fatal("a Service was applied although the plan had a conflict: nothing must be applied")
	}
	if n := writesTo(mark, "/deployments/web"); n != 0 {
		t.Fatalf("%d writes to the Deployment:\n%s", n, writesSince(mark))
	}

	t.Run("deleting the AppService leaves the Deployment", func(t *testing.T) {
		env.Delete(t, appserviceGVR, ns, "web")
		time.Sleep(3 * time.Second) // time for the garbage collector, had there been an owner reference
		unchanged()
	})

	t.Run("adoption with the owner's consent", func(t *testing.T) {
		as := env.Create(t, appserviceGVR, ns, appService("web", "nginx:1.27"))
		env.WaitCondition(t, appserviceGVR, ns, "web", "Reconciled", "False", "OwnershipConflict")
		env.Patch(t, deployGVR, ns, "web", `{"metadata":{"annotations":{"operator.tmplop.io/parent":"AppService.app.example.com/`+ns+`/web"}}}`)
		// The consent is an event on the occupied name: the AppService is
		// reconciled again at once, not after a backoff.
		env.WaitReconciled(t, appserviceGVR, ns, "web")
		d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owner := metav1.GetControllerOf(d)
		if owner == nil || owner.UID != as.GetUID() || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
			t.Fatalf("not adopted: owner %v, image %s", owner, d.Spec.Template.Spec.Containers[0].Image)
		}
	})
}

// TestTwoParentsOneChild: a second parent rendering the same child as a
// first is refused, and the first keeps it. Before the guard, the two
// applied in turn, each taking the child over from the other on every
// reconcile. When the first parent goes, the second gets the name.
func TestTwoParentsOneChild(t *testing.T) {
	ns := env.Namespace(t)
	shared := safetyGVR("shareds")
	a := env.Create(t, shared, ns, "apiVersion: safety.tmplop.io/v1\nkind: Shared\nmetadata: {name: a}\nspec: {child: x}\n")
	env.WaitReconciled(t, shared, ns, "a")
	env.Create(t, shared, ns, "apiVersion: safety.tmplop.io/v1\nkind: Shared\nmetadata: {name: b}\nspec: {child: x}\n")
	env.WaitCondition(t, shared, ns, "b", "Reconciled", "False", "OwnershipConflict",
		"belongs to Shared.safety.tmplop.io/"+ns+"/a: two objects render the same child")
	time.Sleep(2 * time.Second)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != a.GetUID() || cm.Data["from"] != "a" {
		t.Fatalf("the child changed hands: owner %v, data %v", owner, cm.Data)
	}

	env.Delete(t, shared, ns, "a")
	// The garbage collector deletes x; that event wakes b, which waited.
	env.WaitReconciled(t, shared, ns, "b")
	cluster.Eventually(t, 30*time.Second, "x re-created for b", func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "x", metav1.GetOptions{})
		return err == nil && cm.Data["from"] == "b", err
	})
}
