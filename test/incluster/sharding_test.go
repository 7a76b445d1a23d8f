package incluster

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

const (
	shardLabel  = "shard.tmplop.io/shard"
	heldByLabel = "shard.tmplop.io/held-by"
)

// startShard runs the operator as deploy/sharded does (--sharding instead
// of --leader-elect; every shard serves the conversion webhook), as
// deploy/'s ServiceAccount.
func startShard(t *testing.T, id string) *harness.Operator {
	t.Helper()
	_, webhookFlags := webhookArgs()
	args := []string{"run", "--kubeconfig", saKubeconfig,
		"--configmap-selector", folderLabel + "=true",
		"--default-service-account", defaultAccount,
		"--sharding", "--shard-id", id,
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", (leaseDuration * 2 / 3).String(),
		"--leader-elect-retry-period", "500ms",
		"-v", "1"}
	return harness.StartOperator(t, bin, append(args, webhookFlags...)...)
}

// testSharding: with deploy/'s RBAC, shards assign, hand over and take
// over Memcacheds, whose Deployments move with them; every write is the
// kind's account's or the operator's own, and none is refused.
func testSharding(t *testing.T) {
	// The leader-elected replicas of the earlier subtests stop first: the
	// two modes never serve the same kinds at once.
	for _, r := range replicas {
		if r != nil && r.Alive() {
			if err := r.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code, _, err := r.Wait(30 * time.Second); err != nil || code != 0 {
				t.Fatalf("a leader-elected replica's exit: code %d, %v", code, err)
			}
		}
	}
	testNS := env.Namespace(t)
	memcacheds := cluster.GVR("cache.example.com", "v1alpha1", "memcacheds")
	shards := map[string]*harness.Operator{"s1": startShard(t, "s1"), "s2": startShard(t, "s2")}
	const n = 30
	for i := range n {
		env.CreateSpec(t, memcacheds, "Memcached", testNS, fmt.Sprintf("m%d", i), map[string]any{"size": int64(1)})
	}
	// held maps each Memcached to its shard once it and its Deployment
	// agree on it, and the Deployment has the size asked.
	held := func(ctx context.Context, size int32) (map[string]string, error) {
		out := map[string]string{}
		for i := range n {
			name := fmt.Sprintf("m%d", i)
			m, err := env.Get(ctx, memcacheds, testNS, name)
			if err != nil {
				return nil, err
			}
			d, err := cs.AppsV1().Deployments(testNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			owner := m.GetLabels()[shardLabel]
			if owner == "" || d.Labels[heldByLabel] != owner || d.Spec.Replicas == nil || *d.Spec.Replicas != size {
				return nil, fmt.Errorf("%s: shard %q, its Deployment held by %q with %v replicas", name, owner, d.Labels[heldByLabel], d.Spec.Replicas)
			}
			out[name] = owner
		}
		return out, nil
	}
	count := func(m map[string]string) map[string]int {
		c := map[string]int{}
		for _, s := range m {
			c[s]++
		}
		return c
	}
	// ringOf is where the ring of ids puts each Memcached.
	ringOf := func(ids ...string) map[string]string {
		r := shard.NewRing(ids)
		out := map[string]string{}
		for i := range n {
			name := fmt.Sprintf("m%d", i)
			out[name] = r.Owner(shard.Key("cache.example.com", "Memcached", testNS, name))
		}
		return out
	}
	var before map[string]string
	cluster.Eventually(t, 60*time.Second, "two shards hold every Memcached and its Deployment, as the ring says", func(ctx context.Context) (bool, error) {
		var err error
		before, err = held(ctx, 1)
		return err == nil && maps.Equal(before, ringOf("s1", "s2")), err
	})
	t.Logf("two shards: %v", count(before))

	shards["s3"] = startShard(t, "s3")
	var after map[string]string
	cluster.Eventually(t, 60*time.Second, "a third shard takes its share as the ring says, Deployments with it", func(ctx context.Context) (bool, error) {
		var err error
		after, err = held(ctx, 1)
		return err == nil && maps.Equal(after, ringOf("s1", "s2", "s3")), err
	})
	for name, s := range after {
		if s != before[name] && s != "s3" {
			t.Errorf("%s moved from %s to %s, not to the new shard", name, before[name], s)
		}
	}
	t.Logf("three shards: %v", count(after))

	if err := shards["s3"].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for name, s := range after {
		if s == "s3" {
			env.Patch(t, memcacheds, testNS, name, `{"spec":{"size":2}}`)
		}
	}
	cluster.Eventually(t, 60*time.Second, "the killed shard's Memcacheds converge on the others", func(ctx context.Context) (bool, error) {
		for name, s := range after {
			size := int32(1)
			if s == "s3" {
				size = 2
			}
			d, err := cs.AppsV1().Deployments(testNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if *d.Spec.Replicas != size || d.Labels[heldByLabel] == "s3" {
				return false, fmt.Errorf("%s: %d replicas held by %s", name, *d.Spec.Replicas, d.Labels[heldByLabel])
			}
		}
		return true, nil
	})
	took := time.Since(killed)
	t.Logf("SIGKILL of s3: its %d Memcacheds converged a change on s1 and s2 %.1fs later (lease duration %s)", count(after)["s3"], took.Seconds(), leaseDuration)
	if took > leaseDuration+5*time.Second {
		t.Errorf("took %s, want within the lease duration (%s) + 5s", took, leaseDuration)
	}
	for id, op := range shards {
		for _, bad := range []string{"forbidden", "Forbidden"} {
			if strings.Contains(op.Output(), bad) {
				t.Errorf("shard %s was refused a request:\n%s", id, linesWith(op.Output(), bad))
			}
		}
	}
}

// linesWith are the lines of out that contain s.
func linesWith(out, s string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
