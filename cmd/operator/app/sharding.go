package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/shard"
)

// shardFlags are run --sharding's. The Lease timings are the leader
// election's flags: a ring's shards and its sharder use the same ones.
type shardFlags struct {
	enabled bool
	id      string
}

func addShardFlags(fl *pflag.FlagSet, f *shardFlags) {
	fl.BoolVar(&f.enabled, "sharding", false, "spread the kinds' objects over the replicas: each holds a Lease of its own (its shard) and serves only the objects labelled shard.tmplop.io/shard=<its id>; one elected replica assigns them by consistent hashing and moves those of shards that die (docs/sharding.md). Excludes --leader-elect; uses its Lease flags")
	fl.StringVar(&f.id, "shard-id", "", "this replica's shard id, a DNS label (default: the host name and a random suffix, so that a restarted Pod never takes over the Lease of its previous process)")
}

// sharding is a replica's membership of its ring.
type sharding struct {
	shard    *shard.Shard
	members  *shard.Members
	election *elector
	sharder  chan struct{} // closed once elected sharder
	opts     *controller.Sharding
}

// joinRing holds this replica's shard Lease, watches the ring's members
// and campaigns to be the sharder. Losing the shard's Lease or the
// sharder's election ends the process, as losing the leader's does: others
// may already be writing what it would write.
func joinRing(ctx context.Context, cfg *rest.Config, f *runFlags) (*sharding, error) {
	if f.leader.enabled {
		return nil, errors.New("--sharding and --leader-elect exclude each other: a ring elects its sharder itself")
	}
	log := klog.FromContext(ctx)
	if f.leader.namespace == "" {
		f.leader.namespace = f.stateNamespace
	}
	scfg := shard.Config{
		Namespace: f.leader.namespace, Ring: f.fieldManager,
		LeaseDuration: f.leader.leaseDuration, RenewDeadline: f.leader.renewDeadline, RetryPeriod: f.leader.retryPeriod,
	}
	id := f.shard.id
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("shard id: %w", err)
		}
		if id, err = shard.ID(host + "-" + rand.String(5)); err != nil {
			return nil, err
		}
	}
	// The Leases' own typed client and user agent: a side door of
	// kube.Client, named with its reason in engine/kube's doc.
	cs, err := coordinationv1.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "sharding"))
	if err != nil {
		return nil, fmt.Errorf("sharding client: %w", err)
	}
	members, err := shard.NewMembers(cs, scfg)
	if err != nil {
		return nil, err
	}
	// The shard and the election outlive ctx: they are released after the
	// drain, so that no other shard takes the objects while this one
	// still writes.
	life := klog.NewContext(context.Background(), log)
	sh, err := shard.Join(life, cs, scfg, id)
	if err != nil {
		return nil, err
	}
	if err := members.Start(sh.Context()); err != nil {
		_ = sh.Stop(context.Background())
		return nil, err
	}
	s := &sharding{shard: sh, members: members, sharder: make(chan struct{})}
	s.opts = &controller.Sharding{ID: id, Members: members, Sharder: s.sharder}
	go func() {
		<-sh.Context().Done()
		if ctx.Err() == nil {
			log.Error(context.Cause(sh.Context()), "This replica's shard stopped: exiting", "shard", id)
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
	}()
	lf := f.leader
	lf.id = strings.ToLower(f.fieldManager) + "-sharder"
	s.election, err = startElection(ctx, cfg, lf, func() {
		log.Info("Elected sharder", "shard", id)
		close(s.sharder)
		// Crashed replicas leave their Leases behind.
		go wait.UntilWithContext(sh.Context(), func(ctx context.Context) {
			if n, err := members.Collect(ctx); err != nil {
				log.Error(err, "Cannot delete the Leases of dead shards")
			} else if n > 0 {
				log.Info("Deleted the Leases of dead shards", "count", n)
			}
		}, 4*scfg.LeaseDuration)
	}, func() {
		log.Error(nil, "Sharder election lost: exiting")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	})
	if err != nil {
		_ = sh.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

// leave releases the sharder's election and the shard's Lease, after the
// drain: the objects move at once instead of a lease duration later.
func (s *sharding) leave() {
	s.election.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.shard.Stop(ctx); err != nil {
		klog.Background().Error(err, "Releasing the shard's Lease failed; it expires on its own")
	}
}
