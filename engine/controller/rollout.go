package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/requeue"
	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
)

// Event reasons of a kind's staged rollout, on the revision record the
// rollout is kept on.
const (
	ReasonRolloutStarted  = "RolloutStarted"
	ReasonRolloutStep     = "RolloutStepStarted"
	ReasonRolloutHalted   = "RolloutHalted"
	ReasonRolloutComplete = "RolloutComplete"
)

// rolloutLook is how often the replica that drives a kind's rollout looks
// at its objects besides their events: a step's deadline passes with no
// event.
const rolloutLook = 2 * time.Second

// staged serves a kind whose folder rolls out in steps (kind.yaml
// rollout): the kind's rollout state, read from its revision records
// (engine/rollout) through a watch of their metadata, gives each object
// the revision it renders with; the folder's own is the kind's Kind, an
// older one is compiled from its record once, the first time an object
// needs it. The replica that prunes revisions (the leader, or the ring's
// sharder) drives the rollout: it starts one for a new folder and moves
// it on from the objects' statuses. Nothing of the rollout is kept only
// here: another replica, or this one after a restart, reads the same
// state and gives every object the same revision.
type staged struct {
	c      *kindController
	spec   *rollout.Spec
	gr     schema.GroupResource
	store  *rollout.Store
	folder revision.Revision
	// records is the watch of the kind's records' metadata.
	records cache.SharedIndexInformer
	// state is the kind's rollout; nil before one is read.
	state atomic.Pointer[rollout.State]
	// changed is signalled when the state or an object of the kind
	// changed: the driver looks again.
	changed chan struct{}

	mu          sync.Mutex
	reconcilers map[int64]*reconcile.Reconciler
}

// startStaged watches the kind's records, waits for a rollout state of
// the kind's folder (making it, on the driving replica), and returns
// whether it got one before ctx ended. It then drives the rollout on the
// driving replica until ctx ends.
func (c *kindController) startStaged(ctx context.Context) bool {
	log := klog.FromContext(ctx)
	s := c.staged
	s.gr = c.mapping.Resource.GroupResource()
	s.store = &rollout.Store{API: c.base, Namespace: c.revisions.Namespace(), Manager: c.revisions.Manager()}
	s.records = cache.NewSharedIndexInformer(
		c.base.MetadataListWatch(rollout.Records, s.store.Namespace, rollout.Selector(revision.LabelValue(s.gr), s.store.Manager)),
		&metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.observe(ctx) },
		UpdateFunc: func(any, any) { s.observe(ctx) },
		DeleteFunc: func(any) { s.observe(ctx) },
	}
	if _, err := s.records.AddEventHandler(handler); err != nil {
		log.Error(err, "Watching the kind's revision records failed")
		return false
	}
	go s.records.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), s.records.HasSynced) {
		return false
	}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
	for {
		s.observe(ctx)
		if st := s.state.Load(); st != nil && st.Folder == s.folder.Number {
			break
		}
		if c.prunesRevisions() {
			if err := s.begin(ctx); err != nil {
				d := backoff.Step()
				log.Error(err, "Starting the kind's rollout failed: its objects wait; will try again", "retryIn", d.String())
				select {
				case <-ctx.Done():
					return false
				case <-time.After(d):
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-s.changed:
		case <-time.After(rolloutLook):
		}
	}
	st := s.state.Load()
	log.Info("Serving the kind's rollout", "from", st.From.Number, "to", st.To.Number, "phase", st.Phase, "step", st.StepName())
	if c.prunesRevisions() {
		c.pruneRevisions(ctx, s.gr, s.inUse)
	}
	go s.drive(ctx)
	return true
}

// inUse: the records a kind's rollout renders with are never pruned.
func (s *staged) inUse(name string) bool {
	if name == s.folder.Name {
		return true
	}
	st := s.state.Load()
	return st != nil && (name == st.From.Record || name == st.To.Record)
}

// read is the kind's rollout in the records' watch and the
// resourceVersion of the record it is on, read together: a write of the
// next state carries that version, so that a state decided from one
// already replaced is refused (Conflict), never written over the newer.
func (s *staged) read() (*rollout.State, string, error) {
	items := s.records.GetStore().List()
	recs := make([]metav1.PartialObjectMetadata, 0, len(items))
	for _, it := range items {
		if m, ok := it.(*metav1.PartialObjectMetadata); ok {
			recs = append(recs, *m)
		}
	}
	st, on, err := rollout.Current(recs)
	if err != nil || st == nil {
		return nil, "", err
	}
	return st, on.ResourceVersion, nil
}

// observe reads the kind's rollout from the records' watch; when it
// changed, it reconciles the objects whose revision it changed and lets
// the driver look.
func (s *staged) observe(ctx context.Context) {
	st, _, err := s.read()
	if err != nil {
		klog.FromContext(ctx).Error(err, "The kind's rollout state does not decode: objects keep the revision they were given")
		return
	}
	old := s.state.Load()
	if st == nil || (old != nil && *old == *st) {
		return
	}
	s.state.Store(st)
	s.requeueMoved(old, st)
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// requeueMoved reconciles the objects whose revision the new state changed.
func (s *staged) requeueMoved(old, st *rollout.State) {
	h := s.c.watchHandle()
	if h == nil {
		return
	}
	for _, o := range h.informer().GetStore().List() {
		co, ok := o.(*cached.Object)
		if !ok {
			continue
		}
		pos := rollout.Position(co.Namespace, co.Name, s.spec.Canaries(co.GetLabels()))
		if old != nil && old.Revision(pos) == st.Revision(pos) {
			continue
		}
		if co.Progress().ObservedRevision != st.Revision(pos).Number {
			s.c.enqueue(cache.MetaObjectToName(co))
		}
	}
}

// poke lets the driver look again: an object of the kind changed.
func (s *staged) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// begin makes the rollout of the kind's folder: from the revision the
// kind's rollout had settled on (or, for a kind's first rollout, the one
// most of its objects say they are on) to the folder's.
func (s *staged) begin(ctx context.Context) error {
	recs, err := s.store.List(ctx, revision.LabelValue(s.gr))
	if err != nil {
		return err
	}
	cur, _, err := rollout.Current(recs)
	if err != nil {
		return err
	}
	var from rollout.Ref
	switch {
	case cur != nil && cur.Phase == rollout.Complete:
		from = cur.To
	case cur != nil:
		// A rollout replaced before it finished: the objects it moved go
		// back, step by step, with the others, from where they all were.
		from = cur.From
	default:
		objs, err := s.objects(ctx)
		if err != nil {
			return err
		}
		revs, err := s.c.revisions.List(ctx, s.gr)
		if err != nil {
			return err
		}
		from = mostServed(objs, revs, s.folder.Number)
	}
	to := rollout.Ref{Record: s.folder.Name, Number: s.folder.Number}
	st := rollout.Start(s.spec, rollout.HighestSeq(recs)+1, s.folder.Number, from, to, time.Now())
	rv := ""
	for i := range recs {
		if recs[i].Name == s.folder.Name {
			rv = recs[i].ResourceVersion
		}
	}
	if _, err := s.store.Write(ctx, s.folder.Name, rv, st); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Started the kind's rollout", "from", from.Number, "to", to.Number, "phase", st.Phase)
	s.event(st, corev1.EventTypeNormal, ReasonRolloutStarted, "Rollout %d: from revision %d to %d (%s)", st.Seq, from.Number, to.Number, st.Message)
	return nil
}

// mostServed is the revision most objects say they were reconciled with,
// other than the folder's, among those recorded: where a kind that rolls
// out in steps for the first time comes from. None: nothing to stage.
func mostServed(objs []rollout.Object, revs []revision.Revision, folder int64) rollout.Ref {
	names := map[int64]string{}
	for _, r := range revs {
		if !r.FilesOmitted {
			names[r.Number] = r.Name
		}
	}
	count := map[int64]int{}
	var best rollout.Ref
	for _, o := range objs {
		n := o.ObservedRevision
		if n == 0 || n == folder || names[n] == "" {
			continue
		}
		count[n]++
		if c := count[n]; c > count[best.Number] || (c == count[best.Number] && n > best.Number) {
			best = rollout.Ref{Record: names[n], Number: n}
		}
	}
	return best
}

// drive moves the kind's rollout on while this replica drives it.
func (s *staged) drive(ctx context.Context) {
	log := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		case <-time.After(rolloutLook):
		}
		st, rv, err := s.read()
		if err != nil || st == nil || st.Phase != rollout.Progressing || !s.c.prunesRevisions() {
			continue
		}
		objs, err := s.objects(ctx)
		if err != nil {
			log.Error(err, "Reading the kind's objects for its rollout failed; will look again")
			continue
		}
		next, change := rollout.Advance(st, s.spec, objs, time.Now())
		if next == st {
			continue
		}
		if _, err := s.store.Write(ctx, st.To.Record, rv, next); err != nil {
			if !apierrors.IsConflict(err) {
				log.Error(err, "Writing the kind's rollout failed; will look again")
			}
			continue
		}
		log.Info("The kind's rollout moved", "reason", change.Reason, "message", change.Message, "step", next.StepName(), "phase", next.Phase)
		typ, reason := corev1.EventTypeNormal, ReasonRolloutStep
		switch {
		case change.Warning:
			typ, reason = corev1.EventTypeWarning, ReasonRolloutHalted
		case next.Phase == rollout.Complete:
			reason = ReasonRolloutComplete
		}
		s.event(next, typ, reason, "Rollout %d (revision %d to %d), step %s: %s", next.Seq, next.From.Number, next.To.Number, next.StepName(), change.Message)
	}
}

// event records an Event on the record the state is kept on.
func (s *staged) event(st *rollout.State, typ, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ControllerRevision", Namespace: s.store.Namespace, Name: st.To.Record}
	if o, ok, _ := s.records.GetStore().GetByKey(s.store.Namespace + "/" + st.To.Record); ok {
		ref.UID = o.(*metav1.PartialObjectMetadata).UID
	}
	s.c.reconciler.Recorder.Eventf(ref, typ, reason, format, args...)
}

// objects are the kind's objects as a rollout reads them: the watch's, or
// with sharding, where a replica watches only its own, a list of all.
func (s *staged) objects(ctx context.Context) ([]rollout.Object, error) {
	var objs []*cached.Object
	if s.c.sharding == nil {
		h := s.c.watchHandle()
		if h == nil {
			return nil, fmt.Errorf("the kind is not watched yet")
		}
		for _, o := range h.informer().GetStore().List() {
			if co, ok := o.(*cached.Object); ok {
				objs = append(objs, co)
			}
		}
	} else {
		l, err := s.c.client.List(ctx, s.c.mapping, s.c.namespace, metav1.ListOptions{LabelSelector: s.c.kind.ObjectSelector()})
		if err != nil {
			return nil, fmt.Errorf("list the kind's objects: %w", err)
		}
		for i := range l.Items {
			co, err := cached.FromUnstructured(&l.Items[i])
			if err != nil {
				return nil, err
			}
			objs = append(objs, co)
		}
	}
	out := make([]rollout.Object, 0, len(objs))
	for _, co := range objs {
		p := co.Progress()
		out = append(out, rollout.Object{
			Namespace: co.Namespace, Name: co.Name, Labels: co.GetLabels(), Generation: co.Generation,
			ObservedGeneration: p.ObservedGeneration, ObservedRevision: p.ObservedRevision,
			Ready: p.Ready, Stalled: p.Stalled, Message: p.Message, Deleting: co.DeletionTimestamp != nil,
		})
	}
	return out, nil
}

// reconcilerFor is the reconciler of the revision the kind's rollout
// gives o: the folder's, or an older revision's, compiled from its record
// the first time.
func (c *kindController) reconcilerFor(ctx context.Context, o metav1.Object) (*reconcile.Reconciler, error) {
	s := c.staged
	if s == nil {
		return c.reconciler, nil
	}
	st := s.state.Load()
	if st == nil {
		return c.reconciler, nil
	}
	ref := st.Revision(rollout.Position(o.GetNamespace(), o.GetName(), s.spec.Canaries(o.GetLabels())))
	if ref.Number == s.folder.Number {
		return c.reconciler, nil
	}
	return s.reconcilerOf(ctx, ref)
}

// revisionRetry is when an object whose revision cannot be served (a
// record edited by hand, files that do not compile) is tried again: the
// same record fails the same way, but an undo or a new folder may give the
// object another revision meanwhile.
const revisionRetry = time.Minute

// reconcilerOf compiles revision ref's folder from its record, once. The
// record's files must be the ones its fingerprint and name say: a record
// edited by hand is refused, not rendered. A failure that retrying soon
// cannot help is marked terminal (engine/requeue), to be tried again after
// revisionRetry; a failed read of the records is retried with backoff.
func (s *staged) reconcilerOf(ctx context.Context, ref rollout.Ref) (*reconcile.Reconciler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.reconcilers[ref.Number]; r != nil {
		return r, nil
	}
	permanent := func(err error) error {
		return requeue.With(err, requeue.Mark{Terminal: true, After: revisionRetry})
	}
	rec, err := s.c.revisions.Record(ctx, s.gr, ref.Record)
	if err != nil {
		err = fmt.Errorf("revision %d: %w", ref.Number, err)
		if st := apierrors.APIStatus(nil); !errors.As(err, &st) {
			err = permanent(err) // no such record
		}
		return nil, err
	}
	files, err := revision.Verified(rec, s.gr, s.c.revisions.Manager())
	if err != nil {
		return nil, permanent(fmt.Errorf("revision %d: %w", ref.Number, err))
	}
	k, err := catalog.Compile(s.c.kind.Name, fmt.Sprintf("%s@revision-%d", s.c.kind.Dir, ref.Number), files)
	if err != nil {
		return nil, permanent(fmt.Errorf("revision %d of the folder does not compile: %w", ref.Number, err))
	}
	if k.GVK != s.c.kind.GVK {
		return nil, permanent(fmt.Errorf("revision %d serves %s, not %s: a change of the watched kind cannot roll out in steps", ref.Number, k.GVK, s.c.kind.GVK))
	}
	r, err := s.c.newReconciler(ctx, k)
	if err != nil {
		err = fmt.Errorf("revision %d's identity: %w", ref.Number, err)
		if _, refused := errors.AsType[*AgreementError](err); refused {
			err = permanent(err)
		}
		return nil, err
	}
	if k.RecordsRevision() {
		r.Revision = ref.Number
	}
	s.reconcilers[ref.Number] = r
	klog.FromContext(ctx).Info("Compiled an older revision of the kind's folder for its rollout", "revision", ref.Number, "record", ref.Record)
	return r, nil
}

// newStaged is the staged rollout of kind k, nil when k rolls out all at
// once. What needs the kind's resource is set when it is served
// (startStaged).
func newStaged(c *kindController, k *catalog.Kind) *staged {
	if !k.Staged() {
		return nil
	}
	return &staged{c: c, spec: k.Spec.Rollout, changed: make(chan struct{}, 1), reconcilers: map[int64]*reconcile.Reconciler{}}
}

// watchHandle is the watch of the kind's objects, nil before it is made.
func (c *kindController) watchHandle() *watchHandle {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watch
}

// whenServed returns a channel closed once the kind's workers may
// reconcile: its revision recorded and, for a staged kind, its rollout
// read.
func (c *kindController) whenServed(ctx context.Context, recorded <-chan struct{}) <-chan struct{} {
	if c.staged == nil {
		return recorded
	}
	served := make(chan struct{})
	go func() {
		if !waitRecorded(ctx, recorded) {
			return
		}
		if c.staged.folder.Number != 0 && !c.startStaged(ctx) {
			return
		}
		close(served)
	}()
	return served
}
