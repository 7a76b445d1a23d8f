package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leaderFlags are the leader election's, spelled as controller-runtime
// operators (--leader-elect) and Kubernetes' own components
// (--leader-elect-lease-duration…) spell them.
type leaderFlags struct {
	enabled       bool
	id            string
	namespace     string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
}

func addLeaderFlags(fl *pflag.FlagSet, f *leaderFlags) {
	fl.BoolVar(&f.enabled, "leader-elect", false, "elect one leader among the replicas with a Lease; the others keep their caches warm and take over when it goes")
	fl.StringVar(&f.id, "leader-election-id", "", "name of the Lease (default: <field-manager>-leader)")
	fl.StringVar(&f.namespace, "leader-election-namespace", "", "namespace of the Lease (default: --state-namespace)")
	// Kubernetes' own controllers' defaults: a replica that dies is
	// replaced within 15 s; one that stops cleanly releases at once.
	fl.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before taking over")
	fl.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it stops leading")
	fl.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
}

// elector runs the election for one process.
type elector struct {
	le     *leaderelection.LeaderElector
	cancel context.CancelFunc
	done   chan struct{}
}

// startElection campaigns until the context of run ends. lead is called
// when this replica becomes leader; lost when it stops being leader while
// still running, which must end every write of this process at once (the
// new leader may already be writing).
func startElection(ctx context.Context, cfg *rest.Config, f leaderFlags, lead func(), lost func()) (*elector, error) {
	log := klog.FromContext(ctx)
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	identity := host + "_" + string(uuid.NewUUID())
	// client-go's leaderelection takes a typed LeasesGetter and makes its
	// calls itself: a side door of kube.Client, named in engine/kube's doc.
	cs, err := coordinationv1.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: f.namespace, Name: f.id},
		Client:     cs,
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	e := &elector{done: make(chan struct{})}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: f.id,
		LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod,
		// Released only after the kinds have drained (stop), so that the
		// next leader never writes beside this one.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				log.Info("Elected leader: reconciling", "lease", f.namespace+"/"+f.id, "identity", identity)
				lead()
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					lost()
				}
			},
			OnNewLeader: func(current string) {
				if current != identity {
					log.Info("Standing by: another replica leads", "lease", f.namespace+"/"+f.id, "leader", current)
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	e.le = le
	// The election outlives ctx: it is stopped by stop, after the drain.
	ectx, cancel := context.WithCancel(klog.NewContext(context.Background(), log))
	e.cancel = cancel
	go func() {
		defer close(e.done)
		le.Run(ectx)
	}()
	log.Info("Campaigning for leadership", "lease", f.namespace+"/"+f.id, "identity", identity)
	return e, nil
}

// stop releases the Lease (if held) and returns when it is released.
func (e *elector) stop() {
	e.cancel()
	<-e.done
}
