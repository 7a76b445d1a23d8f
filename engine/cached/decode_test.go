package cached

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reference is what the dynamic informer and the transform this package
// replaced made of data: a full decode, managedFields dropped.
func reference(t testing.TB, data []byte) *Object {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatalf("reference decode: %v", err)
	}
	o, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestDecodeObject(t *testing.T) {
	mf := `[{"manager":"operator","operation":"Apply","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]`
	tests := []struct {
		name      string
		json      string
		spliced   bool // decoded without the re-encoding fallback
		wantNoKey string
	}{
		{"managedFields in the middle, compact",
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","generation":2,"labels":{"app":"a"},"annotations":{"managedFields":"not this one"},"managedFields":` + mf + `,"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"p","uid":"pu","controller":true}]},"spec":{"replicas":3,"managedFields":[1]}}`,
			true, ""},
		{"managedFields last",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","finalizers":["f"],"managedFields":` + mf + `},"spec":{"ports":[{"port":80}]}}`,
			true, ""},
		{"managedFields first",
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"managedFields":` + mf + `,"name":"c","deletionTimestamp":"2026-01-02T03:04:05Z"},"data":{"k":"v"}}`,
			true, ""},
		{"managedFields alone",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"managedFields":[]}}`,
			true, ""},
		{"no managedFields",
			`{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t"},"spec":{"n":1.5,"big":12345678901234,"s":"\u00e9\"x"}}`,
			true, ""},
		{"indented, as another server may write it",
			"{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\n    \"name\": \"c\",\n    \"managedFields\" : " + mf + " ,\n    \"uid\": \"u\"\n  }\n}",
			true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.json)
			got, err := decodeObject(bytes.Clone(data))
			if err != nil {
				t.Fatal(err)
			}
			o, ok := got.(*Object)
			if !ok {
				t.Fatalf("got %T, want *Object", got)
			}
			want := reference(t, data)
			// Labels and annotations are read from the JSON (GetLabels,
			// GetAnnotations), not kept as maps beside it.
			gotMeta, wantMeta := o.ObjectMeta, want.ObjectMeta
			gotMeta.Labels, gotMeta.Annotations = o.GetLabels(), o.GetAnnotations()
			if !reflect.DeepEqual(o.TypeMeta, want.TypeMeta) || !reflect.DeepEqual(gotMeta, wantMeta) {
				t.Errorf("metadata:\n got %+v %+v\nwant %+v %+v", o.TypeMeta, gotMeta, want.TypeMeta, wantMeta)
			}
			if o.ObjectMeta.Labels != nil || o.ObjectMeta.Annotations != nil {
				t.Errorf("labels and annotations kept as maps beside the JSON: %v %v", o.ObjectMeta.Labels, o.ObjectMeta.Annotations)
			}
			gotU, err := o.Object()
			if err != nil {
				t.Fatal(err)
			}
			wantU, _ := want.Object()
			if !reflect.DeepEqual(gotU.Object, wantU.Object) {
				t.Errorf("object:\n got %v\nwant %v", gotU.Object, wantU.Object)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(gotU.Object, "metadata", "managedFields"); found {
				t.Errorf("managedFields kept")
			}
			if !json.Valid(o.raw) {
				t.Errorf("raw is not JSON: %s", o.raw)
			}
		})
	}
}

func TestWithoutValueDeclines(t *testing.T) {
	data := []byte(`{"a":{"managedFields":[1]}}`)
	other := []byte(`[1]`)
	if _, _, _, ok := withoutValue(data, other, `"managedFields"`); ok {
		t.Error("accepted a value that is not a slice of data")
	}
	// The value's key is not the one asked for.
	v := data[bytes.Index(data, []byte("[1]")):][:3]
	if _, _, _, ok := withoutValue(data, v, `"otherFields"`); ok {
		t.Error("accepted a value under another key")
	}
	out, _, _, ok := withoutValue(data, v, `"managedFields"`)
	if !ok || string(out) != `{"a":{}}` {
		t.Errorf("got %s, %v", out, ok)
	}
}

func TestDecodeStatus(t *testing.T) {
	got, err := decodeObject([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := got.(*metav1.Status)
	if !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("got %#v", got)
	}
}

func TestDecodeList(t *testing.T) {
	data := []byte(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"42","continue":"c"},"items":[` +
		`{"metadata":{"name":"a","namespace":"n","managedFields":[{"manager":"m"}]},"spec":{"replicas":1}},` +
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"b","namespace":"n"}}]}`)
	var l List
	if _, _, err := (codec{}).Decode(data, nil, &l); err != nil {
		t.Fatal(err)
	}
	if l.ResourceVersion != "42" || l.Continue != "c" || len(l.Items) != 2 {
		t.Fatalf("got %+v", l)
	}
	a, err := l.Items[0].Object()
	if err != nil {
		t.Fatal(err)
	}
	if a.GetKind() != "Deployment" || a.GetAPIVersion() != "apps/v1" || a.GetName() != "a" || a.GetManagedFields() != nil {
		t.Errorf("item 0: %v", a.Object)
	}
	if l.Items[0].Kind != "Deployment" || l.Items[1].Name != "b" {
		t.Errorf("items: %+v", l.Items)
	}
	cp := l.DeepCopyObject().(*List)
	cp.Items[0].Labels = map[string]string{"x": "y"}
	if l.Items[0].Labels != nil {
		t.Error("DeepCopyObject shares metadata")
	}
	// The items own their bytes: the body is the response's, not kept.
	clear(data)
	if b, err := l.Items[1].Object(); err != nil || b.GetName() != "b" {
		t.Errorf("item 1 after the body was reused: %v, %v", b, err)
	}
}

func TestDecodeWatchEnvelope(t *testing.T) {
	var ev metav1.WatchEvent
	frame := []byte(`{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}}`)
	if _, _, err := (codec{}).Decode(frame, nil, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "MODIFIED" || !json.Valid(ev.Object.Raw) {
		t.Fatalf("got %+v", ev)
	}
}

// FuzzDecodeObject: whatever JSON object comes, the fast decode keeps what
// the full decode keeps, or fails where it fails.
func FuzzDecodeObject(f *testing.F) {
	f.Add(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[{"a":1}],"labels":{"x":"y"}},"data":{"k":"v"}}`)
	f.Add(`{"metadata":{"managedFields":[]}}`)
	f.Add(`{"metadata":{"managedFields":null,"name":"x"}}`)
	f.Add(`{"metadata":{"annotations":{"managedFields":"v"}},"managedFields":[2]}`)
	f.Fuzz(func(t *testing.T, s string) {
		data := []byte(s)
		u := &unstructured.Unstructured{}
		if !json.Valid(data) || u.UnmarshalJSON(bytes.Clone(data)) != nil {
			return
		}
		want, err := FromUnstructured(u)
		if err != nil {
			return
		}
		got, err := decodeObject(bytes.Clone(data))
		if err != nil {
			// Stricter types (labels that are not strings) may fail
			// here; the API server never sends them.
			return
		}
		o, ok := got.(*Object)
		if !ok {
			return
		}
		gotU, err := o.Object()
		if err != nil {
			t.Fatalf("decoded raw %s: %v", o.raw, err)
		}
		wantU, _ := want.Object()
		if !reflect.DeepEqual(gotU.Object, wantU.Object) {
			t.Fatalf("object:\n got %v\nwant %v", gotU.Object, wantU.Object)
		}
	})
}
