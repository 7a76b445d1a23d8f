package render

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"text/template"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/tmplop/operator/engine/render/internal/fastyaml"
)

// helmFuncs is sprig's function map as Helm serves it, built once:
// sprig.TxtFuncMap allocates a fresh map of ~200 entries on every call.
// Renders never use it directly: funcsFor wraps it for one holder.
var helmFuncs = sync.OnceValue(func() template.FuncMap {
	funcs := sprig.TxtFuncMap()

	// The operator's environment (credentials, kubeconfig paths) must not
	// leak into manifests that any author of a template folder can write.
	delete(funcs, "env")
	delete(funcs, "expandenv")
	// A render does no I/O; Helm also answers "" here unless DNS is enabled.
	funcs["getHostByName"] = func(string) string { return "" }

	maps.Copy(funcs, template.FuncMap{
		"toYaml":        toYAML,
		"toYamlPretty":  toYAMLPretty,
		"toToml":        toTOML,
		"fromToml":      fromTOML,
		"fromYaml":      fromYAML,
		"fromYamlArray": fromYAMLArray,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
		"fromJsonArray": fromJSONArray,
		"required":      required,
		"fail":          fail,
	})
	return funcs
})

// funcsFor returns every function a template can call, bound to h: Helm's
// and sprig's behind the budget guards, and the stateful ones. include and
// tpl are added per template (bindTemplate).
func funcsFor(h *holder) template.FuncMap {
	funcs := guardedFuncs(h, helmFuncs())
	maps.Copy(funcs, statefulFuncs(h))
	return funcs
}

// parseFuncs is the function map templates are parsed with: the same names
// and types as every render's, bound to nothing, for the parser to check
// names and for scalarFuncs to read result types.
var parseFuncs = sync.OnceValues(func() (template.FuncMap, map[string]bool) {
	h := &holder{}
	funcs := funcsFor(h)
	maps.Copy(funcs, bindTemplate(h, nil, nil))
	return funcs, scalarFuncs(funcs)
})

// toYAML marshals v as Helm does: errors are swallowed (a template cannot
// handle them) and the trailing newline is trimmed so `| nindent` works.
func toYAML(v any) string {
	data, err := fastyaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// fromYAML decodes a YAML mapping; as in Helm, a decoding error is reported
// under the key "Error" rather than failing the render.
func fromYAML(str string) map[string]any {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// fromYAMLArray decodes a YAML list; on error the list holds the message.
func fromYAMLArray(str string) []any {
	a := []any{}
	if err := yaml.Unmarshal([]byte(str), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(str string) map[string]any {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(str string) []any {
	a := []any{}
	if err := json.Unmarshal([]byte(str), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

// required fails the render with msg when val is missing: nil (an absent
// key reads as nil with missingkey=zero) or the empty string.
func required(msg string, val any) (any, error) {
	if val == nil {
		return nil, &funcError{msg: msg}
	}
	if s, ok := val.(string); ok && s == "" {
		return val, &funcError{msg: msg}
	}
	return val, nil
}

// fail replaces sprig's so that the author's message reaches the status
// condition without the "error calling fail:" prefix.
func fail(msg string) (string, error) {
	return "", &funcError{msg: msg}
}

// toYAMLPretty is Helm's: YAML indented by two, lists indented under
// their key.
func toYAMLPretty(v any) string {
	var buf bytes.Buffer
	enc := goyaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// toTOML is Helm's: the TOML of v, or the error's text.
func toTOML(v any) string {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(v); err != nil {
		return err.Error()
	}
	return buf.String()
}

// fromTOML is Helm's: a TOML document as a mapping; on error the mapping
// holds it under "Error".
func fromTOML(str string) map[string]any {
	m := map[string]any{}
	if err := toml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}
