package rollout

import (
	"context"
	"encoding/json"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeAPI records the calls and answers err, or the metadata of the
// patched record.
type fakeAPI struct {
	listNS, listSelector string
	items                []metav1.PartialObjectMetadata
	patchNS, patchName   string
	patch                []byte
	err                  error
}

func (f *fakeAPI) ListMetadata(_ context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if gvr != Records {
		panic(gvr)
	}
	f.listNS, f.listSelector = ns, opts.LabelSelector
	if f.err != nil {
		return nil, f.err
	}
	return &metav1.PartialObjectMetadataList{Items: f.items}, nil
}

func (f *fakeAPI) PatchMetadata(_ context.Context, gvr schema.GroupVersionResource, ns, name string, patch []byte) (*metav1.PartialObjectMetadata, error) {
	if gvr != Records {
		panic(gvr)
	}
	f.patchNS, f.patchName, f.patch = ns, name, patch
	if f.err != nil {
		return nil, f.err
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "8"}}, nil
}

func TestStoreList(t *testing.T) {
	api := &fakeAPI{items: []metav1.PartialObjectMetadata{record("a", nil)}}
	s := &Store{API: api, Namespace: "ops", Manager: "tmplop"}
	items, err := s.List(t.Context(), "memcacheds.cache.example.com")
	if err != nil || len(items) != 1 {
		t.Fatalf("List = %v, %v", items, err)
	}
	if want := "app.kubernetes.io/managed-by=tmplop,operator.tmplop.io/kind=memcacheds.cache.example.com"; api.listNS != "ops" || api.listSelector != want {
		t.Errorf("listed %s with %q, want ops with %q", api.listNS, api.listSelector, want)
	}
	api.err = apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, "", nil)
	if _, err := s.List(t.Context(), "memcacheds.cache.example.com"); !apierrors.IsForbidden(err) {
		t.Errorf("List: %v, want the Forbidden wrapped", err)
	}
}

// TestStoreWrite: the state goes as a JSON merge patch of the record's
// metadata (the annotation and the two labels), with the resourceVersion
// it was read at as the precondition, and a Conflict comes back as one.
func TestStoreWrite(t *testing.T) {
	st := &State{Seq: 2, From: rev1, To: rev2, Step: 1, Steps: 3, Cutoff: "1abc", StepStarted: t0, Phase: Paused, Reason: "Paused"}
	for name, rv := range map[string]string{"precondition": "41", "a record just made": ""} {
		t.Run(name, func(t *testing.T) {
			api := &fakeAPI{}
			s := &Store{API: api, Namespace: "ops", Manager: "tmplop"}
			out, err := s.Write(t.Context(), rev2.Record, rv, st)
			if err != nil || out.ResourceVersion != "8" {
				t.Fatalf("Write = %v, %v", out, err)
			}
			if api.patchNS != "ops" || api.patchName != rev2.Record {
				t.Errorf("patched %s/%s", api.patchNS, api.patchName)
			}
			var patch struct {
				Metadata map[string]json.RawMessage `json:"metadata"`
			}
			if err := json.Unmarshal(api.patch, &patch); err != nil {
				t.Fatalf("patch %s: %v", api.patch, err)
			}
			var ann, lbl map[string]string
			var gotRV *string
			for k, v := range patch.Metadata {
				switch k {
				case "annotations":
					err = json.Unmarshal(v, &ann)
				case "labels":
					err = json.Unmarshal(v, &lbl)
				case "resourceVersion":
					gotRV = new(string)
					err = json.Unmarshal(v, gotRV)
				default:
					t.Errorf("the patch writes metadata.%s", k)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if (rv == "") != (gotRV == nil) || (gotRV != nil && *gotRV != rv) {
				t.Errorf("patch %s: resourceVersion %v, want %q", api.patch, gotRV, rv)
			}
			back, err := Decode(ann)
			if err != nil || back == nil || *back != *st || len(ann) != 1 {
				t.Errorf("annotations %v: %v", ann, err)
			}
			if len(lbl) != 2 || lbl[LabelPhase] != "Paused" || lbl[LabelStep] != "2" {
				t.Errorf("labels %v", lbl)
			}
		})
	}
	api := &fakeAPI{err: apierrors.NewConflict(Records.GroupResource(), rev2.Record, nil)}
	s := &Store{API: api, Namespace: "ops", Manager: "tmplop"}
	if _, err := s.Write(t.Context(), rev2.Record, "41", st); !apierrors.IsConflict(err) {
		t.Errorf("Write: %v, want the Conflict wrapped", err)
	}
}
