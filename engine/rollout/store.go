package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Records is the resource of the revision records the states are kept on.
var Records = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}

// API is what Store needs of a client: the records' metadata, read and
// patched (engine/kube.Client).
type API interface {
	ListMetadata(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	PatchMetadata(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, patch []byte) (*metav1.PartialObjectMetadata, error)
}

// Current is the kind's rollout among its records' metadata: the State
// of the highest Seq, and the record it is on; nil when none has one. A
// record whose annotation does not decode is an error: nothing is moved
// on a guess.
func Current(records []metav1.PartialObjectMetadata) (*State, *metav1.PartialObjectMetadata, error) {
	var best *State
	var on *metav1.PartialObjectMetadata
	for i := range records {
		s, err := Decode(records[i].Annotations)
		if err != nil {
			return nil, nil, fmt.Errorf("revision record %s: %w", records[i].Name, err)
		}
		if s != nil && (best == nil || s.Seq > best.Seq) {
			best, on = s, &records[i]
		}
	}
	return best, on, nil
}

// HighestSeq is the highest Seq of records' states, 0 without one.
func HighestSeq(records []metav1.PartialObjectMetadata) int64 {
	var seq int64
	for i := range records {
		if s, err := Decode(records[i].Annotations); err == nil && s != nil {
			seq = max(seq, s.Seq)
		}
	}
	return seq
}

// Selector is the label selector of the records of a kind (by its
// revision.LabelValue) kept by the field manager.
func Selector(kindLabel, manager string) string {
	return labels.SelectorFromSet(labels.Set{"operator.tmplop.io/kind": kindLabel, "app.kubernetes.io/managed-by": manager}).String()
}

// Store reads and writes the kinds' rollout states.
type Store struct {
	API       API
	Namespace string
	Manager   string
}

// List is the metadata of the kind's records.
func (s *Store) List(ctx context.Context, kindLabel string) ([]metav1.PartialObjectMetadata, error) {
	l, err := s.API.ListMetadata(ctx, Records, s.Namespace, metav1.ListOptions{LabelSelector: Selector(kindLabel, s.Manager)})
	if err != nil {
		return nil, fmt.Errorf("list the revision records of %s in %s: %w", kindLabel, s.Namespace, err)
	}
	return l.Items, nil
}

// Write puts st on record (the record of st.To), under the precondition
// of the resourceVersion it was read at ("": none; a record just made):
// a Conflict when another writer changed it since. It returns the
// record's metadata as written.
func (s *Store) Write(ctx context.Context, record, resourceVersion string, st *State) (*metav1.PartialObjectMetadata, error) {
	md := map[string]any{
		"annotations": map[string]string{AnnotationState: st.Encode()},
		"labels":      st.Labels(),
	}
	if resourceVersion != "" {
		md["resourceVersion"] = resourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return nil, err
	}
	out, err := s.API.PatchMetadata(ctx, Records, s.Namespace, record, patch)
	if err != nil {
		return nil, fmt.Errorf("write the rollout of revision %d on %s/%s: %w", st.To.Number, s.Namespace, record, err)
	}
	return out, nil
}
