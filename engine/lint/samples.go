package lint

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// sample is one object of the examples.
type sample struct {
	file string // as found, forward slashes
	line int
	obj  *unstructured.Unstructured
}

func (s sample) where() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// readSamples reads the objects of paths (directories or files; YAML or
// JSON, multi-document; List objects are unrolled). Documents without
// apiVersion and kind are skipped.
func readSamples(paths []string) ([]sample, []Finding) {
	var out []sample
	var findings []Finding
	for _, p := range paths {
		err := walkYAML(p, func(file string, data []byte) {
			for _, d := range splitYAML(data) {
				j, err := yaml.YAMLToJSON(d.text)
				if err != nil {
					findings = append(findings, inputError(file, d, nil, err))
					continue
				}
				var v any
				// utiljson: whole numbers as int64, as the API server returns them.
				if err := utiljson.Unmarshal(j, &v); err != nil {
					findings = append(findings, inputFinding(file, d.line, "%v", err))
					continue
				}
				m, ok := v.(map[string]any)
				if !ok {
					if v != nil {
						findings = append(findings, inputFinding(file, d.line, "a sample must be a YAML mapping (an object)"))
					}
					continue
				}
				u := &unstructured.Unstructured{Object: m}
				if u.GetAPIVersion() == "" || u.GetKind() == "" {
					continue
				}
				if u.IsList() {
					l, err := u.ToList()
					if err != nil {
						findings = append(findings, inputFinding(file, d.line, "%v", err))
						continue
					}
					for i := range l.Items {
						out = append(out, sample{file: path(file), line: d.line, obj: &l.Items[i]})
					}
					continue
				}
				out = append(out, sample{file: path(file), line: d.line, obj: u})
			}
		})
		if err != nil {
			findings = append(findings, inputFinding(p, 0, "%v", err))
		}
	}
	return out, findings
}
