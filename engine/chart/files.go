package chart

import (
	"encoding/base64"
	"path"
	"strings"

	"github.com/gobwas/glob"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"
)

// Files is a chart's .Files: its files that are neither templates nor
// Chart.yaml, values.yaml or a subchart, by path. The methods are Helm's
// (pkg/engine/files.go, which Helm does not export), with its behaviour:
// a missing file reads as empty, a bad glob pattern matches everything.
type Files map[string][]byte

func newFiles(from []*helmchart.File) Files {
	f := make(Files, len(from))
	for _, file := range from {
		f[file.Name] = file.Data
	}
	return f
}

// GetBytes returns a file's content, or nothing.
func (f Files) GetBytes(name string) []byte {
	if v, ok := f[name]; ok {
		return v
	}
	return []byte{}
}

// Get returns a file's content as a string.
func (f Files) Get(name string) string { return string(f.GetBytes(name)) }

// Glob returns the files whose path matches pattern ('/' separates).
func (f Files) Glob(pattern string) Files {
	g, err := glob.Compile(pattern, '/')
	if err != nil {
		g, _ = glob.Compile("**")
	}
	out := Files{}
	for name, data := range f {
		if g.Match(name) {
			out[name] = data
		}
	}
	return out
}

// AsConfig is the files as a ConfigMap's data, keyed by base name.
func (f Files) AsConfig() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string, len(f))
	for k, v := range f {
		m[path.Base(k)] = string(v)
	}
	return toYAML(m)
}

// AsSecrets is the files as a Secret's data, base64, keyed by base name.
func (f Files) AsSecrets() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string, len(f))
	for k, v := range f {
		m[path.Base(k)] = base64.StdEncoding.EncodeToString(v)
	}
	return toYAML(m)
}

// Lines returns the lines of a file, without the last newline.
func (f Files) Lines(name string) []string {
	if f == nil || len(f[name]) == 0 {
		return []string{}
	}
	s := string(f[name])
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

func toYAML(v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}
