package fastyaml

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Marshal is sigs.k8s.io/yaml's Marshal, which Helm's toYaml uses:
// encode to JSON, read the JSON back as YAML, write YAML. For the values
// templates handle (JSON-compatible maps, lists and scalars) it builds what
// reading the JSON back would give and writes that, without the round
// trip, which cost a tenth of a render; anything else is encoded to JSON
// and read back first. A fuzz test compares the two.
//
// Unlike sigs.k8s.io/yaml, it writes the same text every time. yaml.v2
// orders a mapping's keys with a "natural" comparison (runs of digits as
// numbers, letters after other characters) that is not a total order:
// "001A" < "0C2" < "1" < "001A". sort.Sort then gives whatever order the
// Go map's random iteration happened to start from, so Helm's toYaml of
// such keys changes from one call to the next. Marshal writes mappings as
// yaml.v2.MapSlice, in keyOrder, which is yaml.v2's order whenever that
// order is one (every key set a person writes), and a fixed one otherwise:
// a render that printed another text each time would rewrite its child, and
// roll the Pods of a checksum annotation, at every reconcile.
func Marshal(v any) ([]byte, error) {
	y, ok := yamlOf(v)
	if !ok {
		j, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("error marshaling into JSON: %w", err)
		}
		var obj any
		if err := yamlv2.Unmarshal(j, &obj); err != nil {
			return nil, err
		}
		y = ordered(obj)
	}
	return yamlv2.Marshal(y)
}

// ordered is v, as yaml.v2 read it from JSON, with its mappings as
// MapSlices in keyOrder. JSON's keys are strings, so every key is one.
func ordered(v any) any {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			x[i] = ordered(e)
		}
		return x
	case map[any]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k.(string))
		}
		keyOrder(keys)
		out := make(yamlv2.MapSlice, len(keys))
		for i, k := range keys {
			out[i] = yamlv2.MapItem{Key: k, Value: ordered(x[k])}
		}
		return out
	}
	return v
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
		keys := make([]string, 0, len(x))
		valid := true
		for k := range x {
			keys = append(keys, k)
			valid = valid && utf8.ValidString(k)
		}
		if !valid {
			return yamlOf(mergedKeys(x, keys))
		}
		keyOrder(keys)
		out := make(yamlv2.MapSlice, len(keys))
		for i, k := range keys {
			y, ok := yamlOf(x[k])
			if !ok {
				return nil, false
			}
			out[i] = yamlv2.MapItem{Key: k, Value: y}
		}
		return out, true
	}
	return nil, false
}

// mergedKeys is x with its keys made valid UTF-8, as JSON writes them.
// Keys that differ only in invalid bytes become one; encoding/json writes
// them in byte order and reading the JSON back keeps the last, so the
// value of the last in byte order wins here too.
func mergedKeys(x map[string]any, keys []string) map[string]any {
	slices.Sort(keys)
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		out[validUTF8(k)] = x[k]
	}
	return out
}

// keyOrder sorts keys as yaml.v2 sorts a mapping's string keys (keyLess),
// starting from byte order so that the result is the same for the same
// keys even where keyLess is not an order; stable, so that keys keyLess
// cannot tell apart stay in byte order.
func keyOrder(keys []string) {
	slices.Sort(keys)
	slices.SortStableFunc(keys, func(a, b string) int {
		switch {
		case keyLess(a, b):
			return -1
		case keyLess(b, a):
			return 1
		}
		return 0
	})
}

// keyLess is yaml.v2's comparison of two string keys (keyList.Less in its
// sorter.go), to the letter, overflow of long digit runs included: letters
// sort by code point and after anything else; runs of digits compare as
// numbers, leading zeros breaking ties. A test checks it against yaml.v2's
// own.
func keyLess(a, b string) bool {
	if isASCIIWord(a) && isASCIIWord(b) {
		return asciiKeyLess(a, b)
	}
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// isASCIIWord: s is only ASCII letters, '-', '_', '.' and '/', as nearly
// every key of a manifest is, so that keyLess needs no runes.
func isASCIIWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// asciiKeyLess is keyLess for two isASCIIWord keys: with no digits, the
// first difference decides, letters after the rest, which is byte order
// but for '_' (after the upper-case letters in bytes, before every letter
// here).
func asciiKeyLess(a, b string) bool {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		xl, yl := isASCIILetter(x), isASCIILetter(y)
		if xl != yl {
			return yl
		}
		return x < y
	}
	return len(a) < len(b)
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

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
