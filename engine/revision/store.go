package revision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/layout"
)

// API is what a Store asks of the cluster: the door's ControllerRevision
// calls (kube.Client), whose errors are marked as every call's.
type API interface {
	ListControllerRevisions(ctx context.Context, ns, selector string) ([]appsv1.ControllerRevision, error)
	CreateControllerRevision(ctx context.Context, r *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	UpdateControllerRevision(ctx context.Context, r *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	DeleteControllerRevision(ctx context.Context, ns, name string, uid types.UID, resourceVersion string) error
}

// Store keeps the revisions of the kinds of one operator instance in its
// state namespace.
type Store struct {
	api       API
	namespace string
	manager   string
	// pause waits before Ensure tries again after a race; nil: a jittered
	// sleep (tests make it instant).
	pause func(ctx context.Context, attempt int)
}

// New returns a Store of the records in namespace, labelled as made by
// manager (the field manager).
func New(api API, namespace, manager string) *Store {
	return &Store{api: api, namespace: namespace, manager: manager}
}

// Namespace is where the records are.
func (s *Store) Namespace() string { return s.namespace }

// Manager is the field manager whose records the Store keeps.
func (s *Store) Manager() string { return s.manager }

// maxAttempts bounds Ensure's rounds of list and write: each lost race
// costs one, and a race needs another replica to write a record of the
// same kind within the same second.
const maxAttempts = 8

// Ensure returns the revision of the folder of files (whose fingerprint
// is fingerprint) of the kind of resource gr: found, with no write (a
// folder served again keeps its number), or created with the next number.
// A number two replicas gave their records at once is kept by the older
// record and given up by the other, which moves past them all; it is
// never renumbered otherwise, so that replicas serving different folders
// never outbid each other. A folder larger than a record holds is
// recorded without its files (Revision.FilesOmitted), with an error
// logged.
func (s *Store) Ensure(ctx context.Context, gr schema.GroupResource, fingerprint string, files layout.Files) (Revision, error) {
	name, err := Name(gr, s.manager, fingerprint)
	if err != nil {
		return Revision{}, err
	}
	var data []byte // encoded once, when first needed
	// wrote: this call created or renumbered the record, so that a number
	// it shares is its to give up (the other writer may be done).
	wrote := false
	for attempt := range maxAttempts {
		if attempt > 0 {
			s.wait(ctx, attempt)
			if err := ctx.Err(); err != nil {
				return Revision{}, err
			}
		}
		recs, err := s.list(ctx, gr)
		if err != nil {
			return Revision{}, err
		}
		i := slices.IndexFunc(recs, func(r appsv1.ControllerRevision) bool { return r.Name == name })
		top := highest(recs)
		switch {
		case i < 0:
			if data == nil {
				if data, err = s.encode(ctx, gr, files); err != nil {
					return Revision{}, err
				}
			}
			raw := data
			if len(raw) == 0 {
				raw = nil // omitted
			}
			_, err := s.api.CreateControllerRevision(ctx, record(s.namespace, name, s.manager, gr, fingerprint, top+1, raw))
			switch {
			case err == nil:
				wrote = true
			case !apierrors.IsAlreadyExists(err):
				return Revision{}, fmt.Errorf("create revision %s of %s: %w", name, gr, err)
			}
			// Created, or another replica did: the next list checks the
			// number is the record's alone.
		case recs[i].Annotations[AnnotationFingerprint] != fingerprint:
			return Revision{}, fmt.Errorf("revision %s of %s holds the folder of fingerprint %q, not %q: two folders share the name's %d digits",
				name, gr, recs[i].Annotations[AnnotationFingerprint], fingerprint, hashLen)
		case shared(recs, i) && (wrote || !first(recs, i)):
			// Another replica's record took the number at the same time:
			// ours moves past them all.
			r := recs[i].DeepCopy()
			r.Revision = top + 1
			_, err := s.api.UpdateControllerRevision(ctx, r)
			switch {
			case err == nil:
				wrote = true
			case !apierrors.IsConflict(err) && !apierrors.IsNotFound(err):
				return Revision{}, fmt.Errorf("renumber revision %s of %s: %w", name, gr, err)
			}
		default:
			return revisionOf(&recs[i]), nil
		}
	}
	return Revision{}, fmt.Errorf("record revision %s of %s: other writers of the kind's revisions raced it %d times; will try again", name, gr, maxAttempts)
}

// encode is the record's data of files; empty (not nil) when they do not
// fit, logged: the revision is recorded without them.
func (s *Store) encode(ctx context.Context, gr schema.GroupResource, files layout.Files) ([]byte, error) {
	data, err := Encode(files)
	var large *TooLargeError
	if errors.As(err, &large) {
		klog.FromContext(ctx).Error(err, "Recording the kind's revision without its files: it will not be rendered again from the record", "resource", gr.String())
		return []byte{}, nil
	}
	return data, err
}

// wait pauses before attempt: a jittered, growing sleep, so that two
// replicas that raced do not race again in step.
func (s *Store) wait(ctx context.Context, attempt int) {
	if s.pause != nil {
		s.pause(ctx, attempt)
		return
	}
	d := time.Duration(attempt)*20*time.Millisecond + rand.N(50*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// highest is the highest number among recs, 0 for none.
func highest(recs []appsv1.ControllerRevision) int64 {
	var top int64
	for _, r := range recs {
		top = max(top, r.Revision)
	}
	return top
}

// shared reports whether another record has recs[i]'s number.
func shared(recs []appsv1.ControllerRevision, i int) bool {
	for j, r := range recs {
		if j != i && r.Revision == recs[i].Revision {
			return true
		}
	}
	return false
}

// first reports whether recs[i] is the oldest (then the first by name) of
// the records that share its number: the one that keeps it.
func first(recs []appsv1.ControllerRevision, i int) bool {
	a := recs[i]
	for j, b := range recs {
		if j == i || b.Revision != a.Revision {
			continue
		}
		if c := cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(b.Name, a.Name)); c < 0 {
			return false
		}
	}
	return true
}

// list returns the records of the kind of resource gr.
func (s *Store) list(ctx context.Context, gr schema.GroupResource) ([]appsv1.ControllerRevision, error) {
	sel := labels.SelectorFromSet(labels.Set{LabelKind: LabelValue(gr), labelManagedBy: s.manager}).String()
	recs, err := s.api.ListControllerRevisions(ctx, s.namespace, sel)
	if err != nil {
		return nil, fmt.Errorf("list the revisions of %s in %s: %w", gr, s.namespace, err)
	}
	return recs, nil
}

// List returns the revisions of the kind of resource gr, the newest first.
func (s *Store) List(ctx context.Context, gr schema.GroupResource) ([]Revision, error) {
	recs, err := s.list(ctx, gr)
	if err != nil {
		return nil, err
	}
	sortNewestFirst(recs)
	out := make([]Revision, len(recs))
	for i := range recs {
		out[i] = revisionOf(&recs[i])
	}
	return out, nil
}

// Record returns the record of the kind of resource gr named name (its
// files: Files), for a rollout that renders with a revision's files.
func (s *Store) Record(ctx context.Context, gr schema.GroupResource, name string) (*appsv1.ControllerRevision, error) {
	recs, err := s.list(ctx, gr)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if recs[i].Name == name {
			return &recs[i], nil
		}
	}
	return nil, fmt.Errorf("no revision %s of %s in %s", name, gr, s.namespace)
}

func sortNewestFirst(recs []appsv1.ControllerRevision) {
	slices.SortStableFunc(recs, func(a, b appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(b.Revision, a.Revision), cmp.Compare(a.Name, b.Name))
	})
}

// Prune deletes the records of the kind of resource gr but the newest
// keep+1 (keep old ones beside the newest, as a Deployment's
// revisionHistoryLimit) and those inUse says are in use (the revision the
// kind is served with; a rollout's, later). It returns the names deleted.
// A record renumbered or deleted since it was listed is left to whoever
// did it.
func (s *Store) Prune(ctx context.Context, gr schema.GroupResource, keep int, inUse func(name string) bool) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("prune the revisions of %s: keep %d is negative", gr, keep)
	}
	recs, err := s.list(ctx, gr)
	if err != nil {
		return nil, err
	}
	sortNewestFirst(recs)
	var deleted []string
	for i, r := range recs {
		if i <= keep || inUse(r.Name) {
			continue
		}
		err := s.api.DeleteControllerRevision(ctx, s.namespace, r.Name, r.UID, r.ResourceVersion)
		switch {
		case err == nil:
			deleted = append(deleted, r.Name)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			return deleted, fmt.Errorf("delete revision %s of %s: %w", r.Name, gr, err)
		}
	}
	return deleted, nil
}
