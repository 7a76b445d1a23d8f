package fastyaml

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Decode decodes one YAML document into what the API server would
// return for it: JSON-compatible values, whole numbers as int64. It gives
// exactly what sigs.k8s.io/yaml's YAMLToJSON followed by a JSON decode
// gives (a fuzz test compares the two), without the JSON round trip in
// between, which cost a third of a render. Documents that fail are
// yaml.v2's errors, or a refusal of aliases that expand past
// max(len(data), 64 Ki) values.
func Decode(data []byte) (any, error) {
	// Most rendered documents are in the subset DecodeFast reads, at a fraction of yaml.v2's cost.
	if v, ok := DecodeFast(data); ok {
		return v, nil
	}
	// What a document decodes into must stay proportional to its size,
	// which the render's budget charged: aliases could expand it without
	// bound (see alias.go).
	if _, err := AliasNodes(string(data), max(int64(len(data)), minAliasNodes)); err != nil {
		return nil, err
	}
	var v any
	if err := yamlv2.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return jsonValue(v)
}

// minAliasNodes is how many values any document may decode into, aliases
// expanded; larger documents as many as they have bytes.
const minAliasNodes = 1 << 16

// jsonValue converts a value decoded by yaml.v2 as sigs.k8s.io/yaml then a
// JSON encode and decode would: keys become strings, integers int64, floats
// int64 when JSON would print them as integers, strings valid UTF-8.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		return validUTF8(x), nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		return float64(x), nil
	case float64:
		return jsonNumber(x)
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			key, err := jsonKey(k)
			if err != nil {
				return nil, err
			}
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("two keys are both %q once written as strings", key)
			}
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[key] = c
		}
		return out, nil
	}
	// Anything else is what encoding/json makes of it.
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return jsonValue(out)
}

// jsonNumber is what a float64 becomes once printed by encoding/json and
// read back as the API server reads numbers: int64 when the text is an
// integer that fits.
func jsonNumber(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if i, err := strconv.ParseInt(strconv.FormatFloat(f, 'f', -1, 64), 10, 64); err == nil {
			return i, nil
		}
	}
	return f, nil
}

// jsonKey converts a map key as sigs.k8s.io/yaml does. A whole number past
// int64 (yaml.v2's uint64) is no key it takes: it refuses the document, and
// so does Decode (FuzzDecodeValue found 10000000000000000000 taken as a
// string).
func jsonKey(k any) (string, error) {
	switch x := k.(type) {
	case string:
		return validUTF8(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("unsupported map key of type: %T, key: %+#v", k, k)
}

// validUTF8 replaces each byte that is not part of valid UTF-8 with U+FFFD,
// as encoding/json does when it writes a string.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b = append(b, r) // RuneError for an invalid byte, size 1
		i += size
	}
	return string(b)
}
