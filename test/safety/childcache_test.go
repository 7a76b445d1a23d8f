package safety

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestForgedChildrenCostNoMemory: whoever may create a ConfigMap anywhere can
// label it app.kubernetes.io/managed-by=<the operator's field manager> and
// write a child's parent label and annotation on it, and the watch of the
// operator's children selects on that label. That watch kept every such
// object whole: 80 ConfigMaps of 1 MB that no parent owns took the operator
// from 40 to 181 MiB, a few hundred crashed it, and it listed them again at
// every start. The watch of every other object's metadata kept, of objects
// without the label, every owner reference and the whole value of the
// annotations a claim reads, which nothing bounds but the object's size.
//
// A tenant here creates, in a namespace of its own, forged ConfigMaps of
// about 1 MB, labelled as the operator's children: some name no parent (a
// 200 KB parent annotation, or a kind nobody serves), some the real parent
// with a wrong UID, some the real parent with its UID but outside its
// namespace. Then ConfigMaps without the label, each with a 250 KB parent
// annotation. After each batch the operator's resident memory may grow by at
// most maxGrowth; after a restart, which lists them all again, its resident
// and its peak memory too. Meanwhile the real parent's child converges, is
// repaired when deleted, costs no write at rest nor across the restart, and
// is read from the cache, never from the API server.
func TestForgedChildrenCostNoMemory(t *testing.T) {
	const (
		manager = "safety-childcache"
		// forged labelled ConfigMaps of forgedSize bytes of data each: the
		// growth before the fix is about forged MiB, several times maxGrowth.
		forged     = 60
		forgedSize = 1000 * 1000
		// unlabelled ConfigMaps with an annotation of annotationSize bytes.
		unlabelled     = 80
		annotationSize = 250 * 1024
		// maxGrowth bounds the growth of the operator's resident anonymous
		// memory over its baseline: the stubs (a few hundred bytes each),
		// and the garbage of decoding the objects (two copies of each, in
		// flight), which the collector lets grow to the live heap's size.
		maxGrowth = 20 << 20
		// maxPeakGrowth bounds the peak after a restart (VmHWM) over the
		// first process's baseline: the watch-list streams the objects one
		// by one, each dropped to its stub as it arrives.
		maxPeakGrowth = 32 << 20
	)
	p, kubeconfig := procProxy(t)
	op := procStart(t, manager, procTemplates(t, "childcache"), kubeconfig)
	procWaitServing(t, op, 1)
	ns, tenant := env.Namespace(t), env.Namespace(t)

	// The real parent, and one whose child's name a foreign ConfigMap
	// holds: its wake-up when that ConfigMap goes tells that the watch of
	// other objects' metadata has delivered everything created before.
	real := env.CreateSpec(t, procReal.res, procReal.kind, ns, "real", map[string]any{"value": "v1"})
	createConfigMap(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blocked", Namespace: ns}})
	env.CreateSpec(t, procReal.res, procReal.kind, ns, "blocked", map[string]any{"value": "v1"})
	waitReal(t, ns, "real", "v1")
	env.WaitCondition(t, procReal.res, ns, "blocked", "Reconciled", "False", "OwnershipConflict")
	time.Sleep(2 * time.Second) // the start's garbage collected, the heap at rest
	base := resident(t, op, "baseline")
	t.Logf("operator resident memory, anonymous, at rest: %.1f MiB", mib(base))

	// Forged children, labelled as the operator's.
	parentOf := ownership.Parent{GroupKind: procRealGK, Namespace: ns, Name: "real"}.String()
	for i := range forged {
		uid, parent := string(uuid.NewUUID()), ""
		switch i % 4 {
		case 0: // a parent annotation of 200 KB that names nothing
			parent = strings.Repeat("x", 200*1000)
		case 1: // a kind nobody serves
			parent = "Nothing.example.com/" + tenant + "/x"
		case 2: // the real parent, another UID
			parent = parentOf
		case 3: // the real parent and its UID, outside its namespace
			parent, uid = parentOf, string(real.GetUID())
		}
		createConfigMap(t, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("forged-%02d", i), Namespace: tenant,
				Labels:      map[string]string{ownership.LabelManagedBy: manager, ownership.LabelParentUID: uid},
				Annotations: map[string]string{ownership.AnnotationParent: parent},
			},
			Data: map[string]string{"payload": strings.Repeat("y", forgedSize-len(parent))},
		})
	}
	// The child's deletion comes after every forged object in the watch
	// of the operator's children: once the child is back, all of them
	// were delivered.
	repairChild(t, ns, "real", "v1")
	growth := resident(t, op, "after the forged children") - base
	t.Logf("operator resident memory after %d forged children of ~1 MB: %+.1f MiB over its baseline", forged, mib(growth))
	if growth > maxGrowth {
		t.Errorf("operator resident memory grew %.1f MiB with %d forged children of ~1 MB, want at most %d MiB: it keeps objects no parent of its owns", mib(growth), forged, maxGrowth>>20)
	}

	// The same with ConfigMaps that do not carry the label.
	for i := range unlabelled {
		createConfigMap(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("unlabelled-%02d", i), Namespace: tenant,
			Annotations: map[string]string{ownership.AnnotationParent: strings.Repeat("z", annotationSize)},
		}})
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "blocked", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReal(t, ns, "blocked", "v1")
	growth = resident(t, op, "after the unlabelled objects") - base
	t.Logf("operator resident memory after %d more objects with a %d KB annotation: %+.1f MiB over its baseline", unlabelled, annotationSize>>10, mib(growth))
	if growth > maxGrowth {
		t.Errorf("operator resident memory grew %.1f MiB with the forged objects, want at most %d MiB: it keeps what no claim reads of other objects", mib(growth), maxGrowth>>20)
	}

	// At rest: no write, and no read of the real child.
	mark := time.Now()
	time.Sleep(3 * time.Second)
	if n := procWrites(p, mark); n != 0 {
		t.Errorf("%d writes at rest, want 0:\n%s", n, procRequests(p, mark, harness.IsWrite))
	}

	// A restart lists every forged object again.
	procStop(t, op, 30*time.Second)
	mark = time.Now()
	op = procStart(t, manager, procTemplates(t, "childcache"), kubeconfig)
	procWaitServing(t, op, 1)
	// The restarted operator reconciles each parent once and finds the
	// child up to date in its cache: no write, no read of the child.
	realChild := func(r harness.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/namespaces/"+ns+"/configmaps/real")
	}
	time.Sleep(3 * time.Second)
	if n := procWrites(p, mark); n != 0 {
		t.Errorf("%d writes across the restart, want 0:\n%s", n, procRequests(p, mark, harness.IsWrite))
	}
	if n := p.Count(func(r harness.Request) bool { return !r.Time.Before(mark) && realChild(r) }); n != 0 {
		t.Errorf("the restarted operator read the real child from the API server %d times, want 0: it was not in its cache", n)
	}
	repairChild(t, ns, "real", "v1")
	growth = resident(t, op, "after the restart") - base
	peak, err := op.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	_, file, err := op.Resident()
	if err != nil {
		t.Fatal(err)
	}
	peakGrowth := peak - file - base
	streamed := p.Count(func(r harness.Request) bool {
		return !r.Time.Before(mark) && strings.HasSuffix(r.Path, "/configmaps") && strings.Contains(r.Query, "sendInitialEvents=true")
	}) > 0
	t.Logf("restarted operator: resident %+.1f MiB, peak %+.1f MiB (anonymous, over the first baseline); its ConfigMaps listed by a watch-list: %v",
		mib(growth), mib(peakGrowth), streamed)
	if growth > maxGrowth {
		t.Errorf("restarted operator's resident memory %.1f MiB over the baseline, want at most %d MiB", mib(growth), maxGrowth>>20)
	}
	if peakGrowth > maxPeakGrowth {
		t.Errorf("restarted operator's peak memory %.1f MiB over the baseline, want at most %d MiB: listing the forged objects costs what they hold (listed by a watch-list: %v)",
			mib(peakGrowth), maxPeakGrowth>>20, streamed)
	}

	// The real parent still reconciles: a spec change reaches its child.
	env.Patch(t, procReal.res, ns, "real", `{"spec":{"value":"v2"}}`)
	waitReal(t, ns, "real", "v2")
	procStop(t, op, 30*time.Second)
}

var (
	procReal   = procKind{safetyGVR("reals"), "Real"}
	procRealGK = schema.GroupKind{Group: procReal.res.Group, Kind: procReal.kind}
)

// createConfigMap creates cm as the test's admin, a tenant here.
func createConfigMap(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err)
	}
}

// waitReal waits until the Real ns/name and its child hold value.
func waitReal(t *testing.T, ns, name, value string) {
	t.Helper()
	cluster.Eventually(t, 60*time.Second, fmt.Sprintf("Real %s/%s converges on %q", ns, name, value), func(ctx context.Context) (bool, error) {
		return true, procConverged(ctx, procReal.res, ns, name, "value", value)
	})
}

// repairChild deletes the Real's child and waits for the operator to create
// it again: the operator has then received every event of its children's
// watch from before the deletion.
func repairChild(t *testing.T, ns, name, value string) {
	t.Helper()
	old, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 60*time.Second, fmt.Sprintf("the operator creates ConfigMap %s/%s again", ns, name), func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && cm.UID == old.UID {
			return false, fmt.Errorf("not re-created yet")
		}
		if err != nil {
			return false, err
		}
		if cm.Data["value"] != value {
			return false, fmt.Errorf("data.value %q, want %q", cm.Data["value"], value)
		}
		return true, nil
	})
}

// resident is the operator's resident anonymous memory (its heap, and
// what the runtime holds), which grows with what its caches keep.
func resident(t *testing.T, op *harness.Operator, when string) int64 {
	t.Helper()
	procAlive(t, op, when)
	anon, _, err := op.Resident()
	if err != nil {
		t.Fatal(err)
	}
	return anon
}

// procWrites counts the writes through p since mark.
func procWrites(p *harness.Proxy, mark time.Time) int {
	return p.Count(func(r harness.Request) bool { return harness.IsWrite(r) && !r.Time.Before(mark) })
}

// procRequests lists the requests through p since mark that match, for
// failure messages.
func procRequests(p *harness.Proxy, mark time.Time, match func(harness.Request) bool) string {
	var out []string
	for _, r := range p.Requests() {
		if match(r) && !r.Time.Before(mark) {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return strings.Join(out, "\n")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
