package fastyaml

import (
	"math"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// Marshal is sigs.k8s.io/yaml's Marshal, which Helm's toYaml uses:
// encode to JSON, read the JSON back as YAML, write YAML. For the values
// templates handle (JSON-compatible maps, lists and scalars) it builds what
// reading the JSON back would give and writes that, without the round
// trip, which cost a tenth of a render; anything else takes the original
// path. A fuzz test compares the two.
func Marshal(v any) ([]byte, error) {
	if y, ok := yamlOf(v); ok {
		return yamlv2.Marshal(y)
	}
	return yaml.Marshal(v)
}

// yamlOf is v as yaml.v2 reads v's JSON encoding, or false when v holds
// something else than JSON-compatible values.
func yamlOf(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return validUTF8(x), true
	case int64:
		return yamlInt(x), true
	case int:
		return x, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false // JSON cannot hold it: the original path errs
		}
		return yamlNumber(jsonFloatText(x)), true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			y, ok := yamlOf(e)
			if !ok {
				return nil, false
			}
			out[i] = y
		}
		return out, true
	case map[string]any:
		out := make(map[any]any, len(x))
		for k, e := range x {
			y, ok := yamlOf(e)
			if !ok {
				return nil, false
			}
			out[validUTF8(k)] = y
		}
		return out, true
	}
	return nil, false
}

// yamlInt is how yaml.v2 reads a whole number: an int where it fits.
func yamlInt(n int64) any {
	if i := int(n); int64(i) == n {
		return i
	}
	return n
}

// jsonFloatText is how encoding/json writes a float64.
func jsonFloatText(f float64) string {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
}

// yamlNumber is how yaml.v2 resolves a plain scalar that is a number:
// int, then uint64, then float64.
func yamlNumber(s string) any {
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return yamlInt(i)
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return u
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
