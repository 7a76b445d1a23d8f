package controller

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// recordRevision records the kind's folder as a revision (engine/revision)
// once this replica leads, and returns a channel closed when it is
// recorded: no worker reconciles before, so that no object is reconciled
// with a folder the cluster has no record of. A failure to read or write
// the record is logged and tried again with backoff, as a kind whose CRD
// is not served yet waits (waitForMapping); the objects' children stay as
// they are meanwhile. A refusal (Forbidden) is not retried: the kind is
// served without records, logged as an error. The replica that prunes (the leader, or the ring's
// sharder) then deletes the records past the kind's revisionHistoryLimit.
func (c *kindController) recordRevision(ctx context.Context, mapping *meta.RESTMapping) <-chan struct{} {
	recorded := make(chan struct{})
	if c.revisions == nil {
		close(recorded)
		return recorded
	}
	go func() {
		if !c.lead(ctx) {
			return
		}
		log := klog.FromContext(ctx)
		gr := mapping.Resource.GroupResource()
		backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
		for {
			rev, err := c.revisions.Ensure(ctx, gr, c.kind.Fingerprint, c.kind.Files)
			if err == nil {
				if c.kind.RecordsRevision() {
					c.reconciler.Revision = rev.Number // read by the workers after close(recorded)
					if c.staged != nil {
						c.staged.folder = rev // read by startStaged after close(recorded)
					}
				}
				log.Info("Serving the kind's folder as revision", "revision", rev.Number, "record", rev.Name,
					"namespace", c.revisions.Namespace(), "recordedOnObjects", c.kind.RecordsRevision())
				close(recorded)
				if c.staged == nil && c.prunesRevisions() { // a staged kind's once its rollout is read
					c.pruneRevisions(ctx, gr, func(name string) bool { return name == rev.Name })
				}
				return
			}
			if ctx.Err() != nil {
				return
			}
			if apierrors.IsForbidden(err) {
				// Retrying cannot help, and holding every object of the kind
				// for want of a record that nothing reads back yet would stop
				// an operator upgraded without its RBAC: serve unrecorded.
				log.Error(err, "The kind's revision cannot be recorded: served without revision records (status.observedRevision not written); grant the operator's Role what `operator rbac` generates (apps controllerrevisions in its namespace)")
				close(recorded)
				return
			}
			d := backoff.Step()
			log.Error(err, "Recording the kind's revision failed: its objects wait; will try again", "retryIn", d.String())
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
	}()
	return recorded
}

// waitRecorded waits until the kind's revision is recorded; false if ctx
// ended first.
func waitRecorded(ctx context.Context, recorded <-chan struct{}) bool {
	select {
	case <-recorded:
		return true
	case <-ctx.Done():
		return false
	}
}

// prunesRevisions reports whether this replica prunes the kind's
// revisions: the leader, or with sharding the ring's sharder, so that
// one replica does.
func (c *kindController) prunesRevisions() bool {
	if c.sharding == nil {
		return true
	}
	select {
	case <-c.sharding.Sharder:
		return true
	default:
		return false
	}
}

// pruneRevisions deletes the kind's records past its history limit; current
// (the record it is served with) is kept whatever its number. A failure is
// logged: the next start of the kind prunes again.
func (c *kindController) pruneRevisions(ctx context.Context, gr schema.GroupResource, inUse func(name string) bool) {
	log := klog.FromContext(ctx)
	deleted, err := c.revisions.Prune(ctx, gr, c.kind.RevisionHistoryLimit(), inUse)
	if err != nil {
		log.Error(err, "Pruning the kind's old revisions failed; the next start of the kind tries again")
	}
	if len(deleted) > 0 {
		log.Info("Deleted the kind's old revisions", "records", deleted, "revisionHistoryLimit", c.kind.RevisionHistoryLimit())
	}
}
