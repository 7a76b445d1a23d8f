package cached

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
	sigsjson "sigs.k8s.io/json"
)

// event is one watch event as kube-apiserver writes it: compact, a line.
func event(typ, obj string) string {
	return fmt.Sprintf(`{"type":%q,"object":%s}`+"\n", typ, obj)
}

// indented is the same event pretty-printed, as no server writes a watch.
func indented(t testing.TB, typ, obj string) string {
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(strings.TrimSpace(event(typ, obj))), "", "  "); err != nil {
		t.Fatal(err)
	}
	return out.String() + "\n"
}

type decoded struct {
	typ watch.EventType
	obj string // the object's cache form, as JSON
}

// decodeStream decodes a watch stream as client-go's Request.Watch does,
// with framer and the envelope serializer given.
func decodeStream(t testing.TB, stream string, f runtime.Framer, envelope runtime.Decoder) ([]decoded, error) {
	t.Helper()
	var out []decoded
	err := eachEvent(stream, f, envelope, func(typ watch.EventType, obj runtime.Object) {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decoded{typ, string(data)})
	})
	return out, err
}

func eachEvent(stream string, f runtime.Framer, envelope runtime.Decoder, fn func(watch.EventType, runtime.Object)) error {
	d := restclientwatch.NewDecoder(streaming.NewDecoder(f.NewFrameReader(io.NopCloser(strings.NewReader(stream))), envelope), codec{})
	defer d.Close()
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fn(typ, obj)
	}
}

// jsonEnvelope is apimachinery's way, for comparison: the envelope
// decoded by a JSON decoder, its object copied out by RawExtension.
type jsonEnvelope struct{ codec }

func (jsonEnvelope) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
		return nil, nil, err
	}
	return into, nil, nil
}

// TestLineFramer: a stream decodes to the same events through the line
// framer and the envelope by bytes as through apimachinery's JSON framer
// and decoder, whatever the layout: events longer than the read buffer,
// blank lines, no final newline, pretty-printed events (framed by JSON
// from there on), envelopes in another order, errors and bookmarks.
func TestLineFramer(t *testing.T) {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","resourceVersion":"5","managedFields":[{"manager":"m"}]},"data":{"k":"v\n}"}}`
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","resourceVersion":"6"},"data":{"k":"` + strings.Repeat("x", 100<<10) + `"}}`
	status := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}`
	bookmark := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}`
	tests := []struct {
		name   string
		stream string
		want   int
	}{
		{"compact events", event("ADDED", appliedDeployment) + event("MODIFIED", cm) + event("DELETED", cm), 3},
		{"an event longer than every buffer", event("ADDED", cm) + event("ADDED", big) + event("MODIFIED", cm), 3},
		{"blank lines and no final newline", "\n" + event("ADDED", cm) + "\n\n" + strings.TrimSuffix(event("BOOKMARK", bookmark), "\n"), 2},
		{"an error event", event("ADDED", cm) + event("ERROR", status), 2},
		{"pretty-printed from the second event on", event("ADDED", cm) + indented(t, "MODIFIED", cm) + event("DELETED", cm), 3},
		{"pretty-printed throughout", indented(t, "ADDED", appliedDeployment) + indented(t, "DELETED", cm), 2},
		{"the envelope in another order", `{"object":` + cm + `,"type":"ADDED"}` + "\n" + event("MODIFIED", cm), 2},
		{"spaces in the envelope", `{"type":"ADDED","object":` + cm + ` }` + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := decodeStream(t, tt.stream, jsonserializer.Framer, jsonEnvelope{})
			if err != nil {
				t.Fatalf("apimachinery's decode: %v", err)
			}
			got, err := decodeStream(t, tt.stream, lineFramer{}, codec{})
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(got) != tt.want || len(want) != tt.want {
				t.Fatalf("%d events, apimachinery's decode %d; want %d", len(got), len(want), tt.want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("event %d:\n got %v %s\nwant %v %s", i, got[i].typ, got[i].obj, want[i].typ, want[i].obj)
				}
			}
		})
	}
}

// TestDecodedObjectsOwnTheirBytes: the objects of a watch stream are kept
// by the cache long after the decoder has read the next events into the
// same buffers (its own, and the framer's for long lines): each object
// must hold a copy of its own.
func TestDecodedObjectsOwnTheirBytes(t *testing.T) {
	cm := func(name, fill string, managed bool) string {
		mf := ""
		if managed {
			mf = `,"managedFields":[{"manager":"m"}]`
		}
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"` + mf + `},"data":{"k":"` + fill + `"}}`
	}
	var stream strings.Builder
	for i, size := range []int{10, 100 << 10, 40 << 10, 200 << 10, 10, 100 << 10} {
		stream.WriteString(event("ADDED", cm(fmt.Sprint("c", i), strings.Repeat(string(rune('a'+i)), size), i%2 == 0)))
	}
	var objs []runtime.Object
	var at []string // each object's JSON when it was decoded
	err := eachEvent(stream.String(), lineFramer{}, codec{}, func(_ watch.EventType, obj runtime.Object) {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		objs, at = append(objs, obj), append(at, string(data))
	})
	if err != nil || len(objs) != 6 {
		t.Fatalf("%d events, %v", len(objs), err)
	}
	for i, obj := range objs {
		u, err := obj.(*Object).Object()
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(u.Object, "data", "k"); strings.Trim(got, string(rune('a'+i))) != "" {
			t.Errorf("object %d changed after later events were decoded: data.k holds %q...", i, got[:min(len(got), 20)])
		}
		if data, _ := json.Marshal(obj); string(data) != at[i] {
			t.Errorf("object %d changed after later events were decoded", i)
		}
	}
}

// TestLineFramerTruncated: a stream cut inside an event ends in an error,
// as with the JSON framer, not in a half object.
func TestLineFramerTruncated(t *testing.T) {
	full := event("ADDED", appliedDeployment)
	stream := event("ADDED", appliedDeployment) + full[:len(full)/2]
	got, err := decodeStream(t, stream, lineFramer{}, codec{})
	if err == nil || err == io.EOF {
		t.Fatalf("a cut stream decoded to %d events and %v; want the first and an error", len(got), err)
	}
	if len(got) != 1 {
		t.Errorf("%d events before the cut, want 1", len(got))
	}
}

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		name, data string
		ok         bool
		typ, obj   string
	}{
		{"compact", `{"type":"ADDED","object":{"a":1}}`, true, "ADDED", `{"a":1}`},
		{"newline after", "{\"type\":\"MODIFIED\",\"object\":{\"a\":{}}}\n", true, "MODIFIED", `{"a":{}}`},
		{"space before the last brace", `{"type":"ADDED","object":{"a":1} }`, true, "ADDED", `{"a":1}`},
		{"another order", `{"object":{"a":1},"type":"ADDED"}`, false, "", ""},
		{"an escape in the type", `{"type":"A\"B","object":{}}`, false, "", ""},
		{"no object", `{"type":"ADDED"}`, false, "", ""},
		{"an object that is not one", `{"type":"ADDED","object":null}`, false, "", ""},
		{"indented", "{\n  \"type\": \"ADDED\",\n  \"object\": {}\n}", false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e metav1.WatchEvent
			ok := decodeEvent([]byte(tt.data), &e)
			if ok != tt.ok {
				t.Fatalf("decodeEvent = %v, want %v", ok, tt.ok)
			}
			if ok && (e.Type != tt.typ || string(e.Object.Raw) != tt.obj) {
				t.Errorf("got %q %s, want %q %s", e.Type, e.Object.Raw, tt.typ, tt.obj)
			}
		})
	}
}

// BenchmarkWatchDecode is the cost of a watch stream of Deployments from
// the wire to cached Objects: apimachinery's JSON framer and envelope
// decoder against the line framer and the envelope read by its bytes.
func BenchmarkWatchDecode(b *testing.B) {
	var stream strings.Builder
	for range 100 {
		stream.WriteString(event("MODIFIED", appliedDeployment))
	}
	for _, bb := range []struct {
		name     string
		framer   runtime.Framer
		envelope runtime.Decoder
	}{
		{"json-framer", jsonserializer.Framer, jsonEnvelope{}},
		{"line-framer", lineFramer{}, codec{}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(stream.Len()))
			for b.Loop() {
				n := 0
				if err := eachEvent(stream.String(), bb.framer, bb.envelope, func(watch.EventType, runtime.Object) { n++ }); err != nil || n != 100 {
					b.Fatalf("%d events, %v", n, err)
				}
			}
		})
	}
}
