package render

import (
	"fmt"
	"strings"
	"text/template"
	"unicode/utf8"
)

// The functions that turn strings into collections and back are charged
// before they allocate, counting from the input: `split "" (repeat 4000000
// "x")` is 4 million map entries from one string.

// splitCost is one element of split and splitn: the string header of
// strings.Split's list, a map entry and its "_N" key.
const splitCost = elemCost + entryCost + 8

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
	// Encoding: yaml.v2 sets up an emitter of a few KiB for any value.
	yamlEncodeFixed = 4 << 10
	jsonEncodeFixed = 128
)

func convertFuncs(h *holder, base template.FuncMap) template.FuncMap {
	m := func() *meter { return &h.st.meter }
	// strings wraps sortAlpha and toStrings, which print every element
	// (strval) into a new list.
	strs := func(name string) func(any) ([]string, error) {
		f := base[name].(func(any) []string)
		return func(v any) ([]string, error) {
			s, err := h.st.measure(name, v, 0)
			if err != nil {
				return nil, err
			}
			est := addSat(s.bytes, mulSat(s.elems+1, elemCost))
			return bounded(m(), est, func() string { return fmt.Sprintf("%s of %d elements", name, s.elems) },
				func() ([]string, error) { return f(v), nil }, stringsCost)
		}
	}
	decode := func(name string, yaml bool) any {
		cost := func(s string) (int64, error) {
			if !yaml {
				return addSat(mulSat(int64(len(s)), jsonCostPerByte), jsonCostFixed), nil
			}
			est := addSat(mulSat(int64(len(s)), yamlCostPerByte), yamlCostFixed)
			nodes, err := yamlAliasNodes(s, m().remaining()/entryCost)
			if err != nil {
				return 0, &BudgetError{Budget: BudgetOutput, Limit: m().budget.MaxOutputBytes, Detail: name + ": " + err.Error()}
			}
			return addSat(est, mulSat(nodes, entryCost)), nil
		}
		charged := func(s string) error {
			if err := m().check(); err != nil {
				return err
			}
			est, err := cost(s)
			if err != nil {
				return err
			}
			return m().charge(est, func() string { return fmt.Sprintf("%s of %d bytes", name, len(s)) })
		}
		switch f := base[name].(type) {
		case func(string) map[string]any:
			return func(s string) (map[string]any, error) {
				if err := charged(s); err != nil {
					return nil, err
				}
				return f(s), nil
			}
		case func(string) []any:
			return func(s string) ([]any, error) {
				if err := charged(s); err != nil {
					return nil, err
				}
				return f(s), nil
			}
		case func(string) (any, error):
			return func(s string) (any, error) {
				if err := charged(s); err != nil {
					return nil, err
				}
				return f(s)
			}
		}
		panic("render: unexpected type of " + name)
	}
	// serialize wraps toJson, toYaml and the like: YAML and indented JSON
	// indent every line by its depth, so a value nested a thousand deep
	// prints in a thousand times its size.
	serialize := func(name string, indent int64) func(any) (string, error) {
		call := func(v any) (string, error) {
			switch f := base[name].(type) {
			case func(any) string:
				return f(v), nil
			case func(any) (string, error):
				return f(v)
			}
			panic("render: unexpected type of " + name)
		}
		return func(v any) (string, error) {
			s, err := h.st.measure(name, v, indent)
			if err != nil {
				return "", err
			}
			fixed := int64(jsonEncodeFixed)
			if name == "toYaml" {
				fixed = yamlEncodeFixed
			}
			return bounded(m(), addSat(s.bytes, fixed), func() string { return fmt.Sprintf("%s of %d bytes", name, s.bytes) },
				func() (string, error) { return call(v) }, func(out string) int64 { return int64(len(out)) + fixed })
		}
	}
	return template.FuncMap{
		"toJson":           serialize("toJson", 0),
		"toRawJson":        serialize("toRawJson", 0),
		"mustToJson":       serialize("mustToJson", 0),
		"mustToRawJson":    serialize("mustToRawJson", 0),
		"toPrettyJson":     serialize("toPrettyJson", 2),
		"mustToPrettyJson": serialize("mustToPrettyJson", 2),
		"toYaml":           serialize("toYaml", 2),
		"split": func(sep, s string) (map[string]string, error) {
			n := splitCount(sep, s, -1)
			return bounded(m(), mulSat(n, splitCost), func() string { return fmt.Sprintf("split of %d bytes into %d elements", len(s), n) },
				func() (map[string]string, error) {
					return base["split"].(func(string, string) map[string]string)(sep, s), nil
				}, nil)
		},
		"splitn": func(sep string, limit int, s string) (map[string]string, error) {
			n := splitCount(sep, s, limit)
			return bounded(m(), mulSat(n, splitCost), func() string { return fmt.Sprintf("splitn of %d bytes into %d elements", len(s), n) },
				func() (map[string]string, error) {
					return base["splitn"].(func(string, int, string) map[string]string)(sep, limit, s), nil
				}, nil)
		},
		"splitList": func(sep, s string) ([]string, error) {
			n := splitCount(sep, s, -1)
			return bounded(m(), mulSat(n, elemCost), func() string { return fmt.Sprintf("splitList of %d bytes into %d elements", len(s), n) },
				func() ([]string, error) { return strings.Split(s, sep), nil }, nil)
		},
		"join": func(sep string, v any) (string, error) {
			s, err := h.st.measure("join", v, 0)
			if err != nil {
				return "", err
			}
			n := max(s.elems, 1)
			est := addSat(addSat(s.bytes, mulSat(n, int64(len(sep)))), mulSat(n, elemCost))
			return bounded(m(), est, func() string { return fmt.Sprintf("join of %d elements with %d bytes between", n, len(sep)) },
				func() (string, error) { return base["join"].(func(string, any) string)(sep, v), nil }, strCost)
		},
		"sortAlpha":     strs("sortAlpha"),
		"toStrings":     strs("toStrings"),
		"fromJson":      decode("fromJson", false),
		"fromJsonArray": decode("fromJsonArray", false),
		"mustFromJson":  decode("mustFromJson", false),
		"fromYaml":      decode("fromYaml", true),
		"fromYamlArray": decode("fromYamlArray", true),
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
	n := elemCost * int64(len(l))
	for _, s := range l {
		n += int64(len(s))
	}
	return n
}
