package render

import (
	"fmt"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/tmplop/operator/engine/render/internal/budget"
	"github.com/tmplop/operator/engine/render/internal/fastyaml"
)

// The functions that turn strings into collections and back are charged
// before they allocate, counting from the input: `split "" (repeat 4000000
// "x")` is 4 million map entries from one string.

// splitCost is one element of split and splitn: the string header of
// strings.Split's list, a map entry and its "_N" key.
const splitCost = budget.ElemCost + budget.EntryCost + 8

// Decoding allocates a multiple of its input: encoding/json about 20 bytes
// a byte of typical JSON (up to 50 for `[{},{},...]`), sigs.k8s.io/yaml
// about 50 for typical YAML (up to 300 for flow lists of empty maps) and
// a few KiB for any document. The costs charged are the typical ones, so
// that fromYaml of a real configuration fits the default budget; the worst
// cases stay within a small multiple of the budget.
const (
	jsonCostPerByte = 24
	jsonCostFixed   = 1 << 10
	yamlCostPerByte = 64
	yamlCostFixed   = 8 << 10
	// Encoding: yaml.v2 sets up an emitter of a few KiB for any value,
	// and its events and buffers cost about 450-1,000 bytes a scalar and
	// 1,300-1,900 a list or map, where the text is a few bytes each: 500
	// empty maps print in 2.5 KB and allocate 660 KB (toYaml) to 970 KB
	// (toYamlPretty). Charged at a half to a quarter of that: typical
	// costs, as for decoding.
	yamlEncodeFixed   = 4 << 10
	yamlEncodePerLeaf = 256
	yamlEncodePerNode = 1 << 10
	jsonEncodeFixed   = 128
)

func convertFuncs(h *holder, base template.FuncMap) template.FuncMap {
	return template.FuncMap{
		"toJson":           serializer(h, base, "toJson", 0),
		"toRawJson":        serializer(h, base, "toRawJson", 0),
		"mustToJson":       serializer(h, base, "mustToJson", 0),
		"mustToRawJson":    serializer(h, base, "mustToRawJson", 0),
		"toPrettyJson":     serializer(h, base, "toPrettyJson", 2),
		"mustToPrettyJson": serializer(h, base, "mustToPrettyJson", 2),
		"toYaml":           serializer(h, base, "toYaml", 2),
		"toYamlPretty":     serializer(h, base, "toYamlPretty", 2),
		"toToml":           serializer(h, base, "toToml", 2),
		"split": func(sep, s string) (map[string]string, error) {
			n := splitCount(sep, s, -1)
			return budget.Bounded(h.meter(), budget.MulSat(n, splitCost), func() string { return fmt.Sprintf("split of %d bytes into %d elements", len(s), n) },
				func() (map[string]string, error) {
					return base["split"].(func(string, string) map[string]string)(sep, s), nil
				}, nil)
		},
		"splitn": func(sep string, limit int, s string) (map[string]string, error) {
			n := splitCount(sep, s, limit)
			return budget.Bounded(h.meter(), budget.MulSat(n, splitCost), func() string { return fmt.Sprintf("splitn of %d bytes into %d elements", len(s), n) },
				func() (map[string]string, error) {
					return base["splitn"].(func(string, int, string) map[string]string)(sep, limit, s), nil
				}, nil)
		},
		"splitList": func(sep, s string) ([]string, error) {
			n := splitCount(sep, s, -1)
			return budget.Bounded(h.meter(), budget.MulSat(n, budget.ElemCost), func() string { return fmt.Sprintf("splitList of %d bytes into %d elements", len(s), n) },
				func() ([]string, error) { return strings.Split(s, sep), nil }, nil)
		},
		"join": func(sep string, v any) (string, error) {
			s, err := h.meter().Measure("join", v, 0)
			if err != nil {
				return "", err
			}
			n := max(s.Elems, 1)
			est := budget.AddSat(budget.AddSat(s.Bytes, budget.MulSat(n, int64(len(sep)))), budget.MulSat(n, budget.ElemCost))
			return budget.Bounded(h.meter(), est, func() string { return fmt.Sprintf("join of %d elements with %d bytes between", n, len(sep)) },
				func() (string, error) { return base["join"].(func(string, any) string)(sep, v), nil }, strCost)
		},
		"sortAlpha":     printedList(h, base, "sortAlpha"),
		"toStrings":     printedList(h, base, "toStrings"),
		"fromJson":      decoder(h, base, "fromJson", false),
		"fromJsonArray": decoder(h, base, "fromJsonArray", false),
		"mustFromJson":  decoder(h, base, "mustFromJson", false),
		"fromYaml":      decoder(h, base, "fromYaml", true),
		"fromYamlArray": decoder(h, base, "fromYamlArray", true),
		// TOML has no aliases: its decoder allocates in proportion to
		// its input, as JSON's does.
		"fromToml": decoder(h, base, "fromToml", false),
	}
}

// printedList wraps sortAlpha and toStrings, which print every element
// (strval) into a new list.
func printedList(h *holder, base template.FuncMap, name string) func(any) ([]string, error) {
	f := base[name].(func(any) []string)
	return func(v any) ([]string, error) {
		s, err := h.meter().Measure(name, v, 0)
		if err != nil {
			return nil, err
		}
		est := budget.AddSat(s.Bytes, budget.MulSat(s.Elems+1, budget.ElemCost))
		return budget.Bounded(h.meter(), est, func() string { return fmt.Sprintf("%s of %d elements", name, s.Elems) },
			func() ([]string, error) { return f(v), nil }, stringsCost)
	}
}

// decoder wraps fromJson, fromYaml and the like, bounded by what decoding
// their input allocates.
func decoder(h *holder, base template.FuncMap, name string, yaml bool) any {
	switch f := base[name].(type) {
	case func(string) map[string]any:
		return func(s string) (map[string]any, error) {
			return decode(h.meter(), name, yaml, s, func() (map[string]any, error) { return f(s), nil })
		}
	case func(string) []any:
		return func(s string) ([]any, error) {
			return decode(h.meter(), name, yaml, s, func() ([]any, error) { return f(s), nil })
		}
	case func(string) (any, error):
		return func(s string) (any, error) {
			return decode(h.meter(), name, yaml, s, func() (any, error) { return f(s) })
		}
	}
	panic("render: unexpected type of " + name)
}

// decode bounds call, the decoding of s, by decodeCost.
func decode[T any](m *budget.Meter, name string, yaml bool, s string, call func() (T, error)) (T, error) {
	var zero T
	if err := m.Check(); err != nil {
		return zero, err
	}
	est, err := decodeCost(m, name, yaml, s)
	if err != nil {
		return zero, err
	}
	return budget.Bounded(m, est, func() string { return fmt.Sprintf("%s of %d bytes", name, len(s)) }, call, nil)
}

// decodeCost is what decoding s allocates: a multiple of its size, and
// for YAML with aliases, a multiple of the values they expand to, counted
// first and refused past what the budget left can hold.
func decodeCost(m *budget.Meter, name string, yaml bool, s string) (int64, error) {
	if !yaml {
		return budget.AddSat(budget.MulSat(int64(len(s)), jsonCostPerByte), jsonCostFixed), nil
	}
	est := budget.AddSat(budget.MulSat(int64(len(s)), yamlCostPerByte), yamlCostFixed)
	nodes, err := fastyaml.AliasNodes(s, m.Remaining()/budget.EntryCost)
	if err != nil {
		return 0, m.Exceeded(name + ": " + err.Error())
	}
	return budget.AddSat(est, budget.MulSat(nodes, budget.EntryCost)), nil
}

// serializer wraps toJson, toYaml and the like: YAML and indented JSON
// indent every line by its depth, so a value nested a thousand deep
// prints in a thousand times its size.
func serializer(h *holder, base template.FuncMap, name string, indent int64) func(any) (string, error) {
	call := func(v any) (string, error) {
		switch f := base[name].(type) {
		case func(any) string:
			return f(v), nil
		case func(any) (string, error):
			return f(v)
		}
		panic("render: unexpected type of " + name)
	}
	isYAML := name == "toYaml" || name == "toYamlPretty" || name == "toToml"
	return func(v any) (string, error) {
		s, err := h.meter().Measure(name, v, indent)
		if err != nil {
			return "", err
		}
		// What encoding allocates beside the text it returns; JSON, as
		// fmt, sorts the keys of every map.
		work := budget.AddSat(jsonEncodeFixed, budget.MulSat(s.Nodes, budget.PrintNodeCost))
		if isYAML {
			work = budget.AddSat(yamlEncodeFixed, budget.AddSat(budget.MulSat(s.Leaves, yamlEncodePerLeaf), budget.MulSat(s.Nodes, yamlEncodePerNode)))
		}
		return budget.Bounded(h.meter(), budget.AddSat(s.Bytes, work), func() string { return fmt.Sprintf("%s of %d bytes", name, s.Bytes) },
			func() (string, error) { return call(v) }, func(out string) int64 { return budget.AddSat(int64(len(out)), work) })
	}
}

// splitCount is how many strings strings.SplitN(s, sep, n) returns.
func splitCount(sep, s string, n int) int64 {
	if n == 0 {
		return 0
	}
	var c int64
	if sep == "" {
		c = int64(utf8.RuneCountInString(s))
	} else {
		c = int64(strings.Count(s, sep)) + 1
	}
	if n > 0 {
		c = min(c, int64(n))
	}
	return c
}

// stringsCost is what a list of strings takes, its strings included.
func stringsCost(l []string) int64 {
	n := budget.ElemCost * int64(len(l))
	for _, s := range l {
		n += int64(len(s))
	}
	return n
}
