package fastyaml

import (
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// decodeViaJSON is how manifests used to be decoded, and how kubectl and
// Helm read YAML: sigs.k8s.io/yaml to JSON, then JSON as the API server
// reads it. Decode must give the same.
func decodeViaJSON(data []byte) (any, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, err
	}
	return v, nil
}

var decodeSeeds = []string{
	"a: 1\nb: 1.0\nc: 1.5\nd: 1e3\ne: -0.0\nf: 9223372036854775807\ng: 18446744073709551615\nh: 1e20\ni: 1e25\n",
	"yes: no\non: off\ny: n\n~: null\n",
	"1: a\n2.5: b\ntrue: c\n",
	"a: !!binary aGVsbG8=\nb: 2001-12-14t21:59:43.10-05:00\nc: 2002-12-14\n",
	"a: &x {b: [1, 2, {c: d}]}\ne: *x\n<<: {f: g}\n",
	"- 1\n- [2, 3]\n- {a: b}\n",
	"a: \"\\xff\\xfe\"\nb: '\xff'\n",
	"a: .nan\n", "a: .inf\n", "a: 0x1F\nb: 0o17\nc: 017\nd: +12\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: |\n    multi\n    line\n",
}

func TestDecodeValueMatchesYAMLToJSON(t *testing.T) {
	for _, s := range decodeSeeds {
		compareDecoders(t, []byte(s))
	}
}

func compareDecoders(t *testing.T, data []byte) {
	t.Helper()
	want, werr := decodeViaJSON(data)
	got, gerr := Decode(data)
	if gerr != nil && strings.Contains(gerr.Error(), "once written as strings") {
		return // the reference picks one of two colliding keys at random
	}
	if gerr != nil && strings.Contains(gerr.Error(), "whose aliases expand to more than") {
		return // the reference expands them, however many
	}
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: errors differ: reference %v, Decode %v", data, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\nreference   %#v\nDecode      %#v", data, want, got)
	}
}

// FuzzDecodeValue: for any document, Decode and the reference agree.
func FuzzDecodeValue(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { compareDecoders(t, data) })
}
