package fastyaml

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/yaml"
)

// compareEncoders checks that Marshal writes what sigs.k8s.io/yaml's
// Marshal (Helm's toYaml) writes, for the value data decodes to.
func compareEncoders(t *testing.T, data []byte) {
	t.Helper()
	v, err := Decode(data)
	if err != nil {
		return
	}
	for _, in := range []any{v, map[string]any{"k": v}, []any{v, 1.5, 2.0, int64(1) << 62, 1e21, 1e-7, -0.0}} {
		want, werr := yaml.Marshal(in)
		got, gerr := Marshal(in)
		if werr != nil && gerr == nil {
			// sigs.k8s.io/yaml refuses strings with control characters
			// (its JSON-to-YAML step re-parses them); escaped, they are
			// valid YAML, so what we write must read back as it was.
			// Compared as JSON: 2.0 reads back as the integer 2.
			back, err := Decode(got)
			bj, _ := json.Marshal(back)
			ij, _ := json.Marshal(in)
			if err != nil || string(bj) != string(ij) {
				t.Fatalf("%#v: sigs.k8s.io/yaml refuses it (%v); Marshal wrote %q, which reads back as %#v (%v)", in, werr, got, back, err)
			}
			continue
		}
		if (werr == nil) != (gerr == nil) || string(want) != string(got) {
			t.Fatalf("%#v:\nsigs.k8s.io/yaml %q (%v)\nMarshal          %q (%v)", in, want, werr, got, gerr)
		}
	}
}

func TestMarshalYAMLMatches(t *testing.T) {
	for _, s := range decodeSeeds {
		compareEncoders(t, []byte(s))
	}
}

// FuzzMarshalYAML: for any decoded document, Marshal writes what
// sigs.k8s.io/yaml writes.
func FuzzMarshalYAML(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { compareEncoders(t, data) })
}
