package fastyaml

// A fast path for Decode. yaml.v2 builds tokens, events and nodes, then
// reflects them into values: about 40% of a render, for documents that
// templates print in a small, regular subset of YAML (block mappings and
// sequences of plain or quoted scalars). DecodeFast reads that subset
// directly and declines everything else, so that Decode falls back to
// yaml.v2. It must return exactly what yaml.v2 plus jsonValue return:
// FuzzFastDecode compares the two on every input DecodeFast accepts, so any
// construct whose meaning is not certain here is declined rather than
// guessed.

import (
	"strconv"
	"unicode/utf8"
)

// fastMaxDepth bounds the nesting DecodeFast follows (recursion depth);
// deeper documents are yaml.v2's to judge.
const fastMaxDepth = 100

// fastMaxKey is below the 1024 characters within which yaml.v2 must find
// the ':' of a simple key.
const fastMaxKey = 1000

// DecodeFast decodes data as Decode does, or reports ok=false when
// data is outside the subset it reads with certainty. It never fails: a
// document it declines may still be valid YAML, or an error for yaml.v2 to
// report.
func DecodeFast(data []byte) (v any, ok bool) {
	p := fastParser{data: data}
	if !p.next() {
		return nil, false
	}
	if !p.have {
		return nil, true // nothing but blank lines and comments, as yaml.v2 reads it
	}
	v, ok = p.node(p.ind)
	if !ok || p.have {
		return nil, false
	}
	return v, true
}

// fastRune reports whether the non-ASCII character at the start of b is
// one whose role is plain here, and its size. yaml.v2 rejects C1 controls,
// noncharacters and invalid UTF-8, reads NEL, LS and PS as line breaks and
// treats a BOM specially; declining them (and, in next, ASCII controls,
// tabs and CR) leaves spaces and '\n' as the only layout characters, and
// makes every string valid UTF-8 already: validUTF8 has nothing to do.
func fastRune(b []byte) (size int, ok bool) {
	r, size := utf8.DecodeRune(b)
	switch {
	case r == utf8.RuneError && size == 1:
		return 0, false
	case r < 0xa0, r == 0x2028, r == 0x2029, r == 0xfeff, r > 0xfffd && r < 0x10000:
		return 0, false
	}
	return size, true
}

// fastParser walks data one content line at a time. The current line may
// be virtual: the rest of a "- " entry, at the column where it starts,
// which YAML reads as if it began a line of its own.
type fastParser struct {
	data  []byte
	pos   int    // start of the line after the current one
	have  bool   // a current line exists
	ind   int    // its indentation: the column of text
	text  []byte // its content, from column ind to the end of the line
	depth int
}

// next moves to the next line that is neither blank nor a comment. It
// reports false on a line that starts a new document or ends this one, and
// on a character that is not plain (see fastRune); comment lines too are
// checked, as yaml.v2 checks them.
func (p *fastParser) next() bool {
	for p.pos < len(p.data) {
		line := p.data[p.pos:]
		end := len(line)
		for i := 0; i < len(line); {
			c := line[i]
			if ' ' <= c && c < 0x7f {
				i++
				continue
			}
			if c == '\n' {
				end = i
				break
			}
			if c < utf8.RuneSelf {
				return false // tab, CR, other controls
			}
			size, ok := fastRune(line[i:])
			if !ok {
				return false
			}
			i += size
		}
		line = line[:end]
		p.pos += end + 1
		ind := 0
		for ind < len(line) && line[ind] == ' ' {
			ind++
		}
		if ind == len(line) || line[ind] == '#' {
			continue
		}
		if ind == 0 && len(line) >= 3 && (line[0] == '-' && line[1] == '-' && line[2] == '-' || line[0] == '.' && line[1] == '.' && line[2] == '.') {
			return false // "---", "...": yaml.v2 reads one document only
		}
		p.have, p.ind, p.text = true, ind, line[ind:]
		return true
	}
	p.have, p.text = false, nil
	return true
}

// seqEntry reports whether a line starts a block sequence entry.
func seqEntry(text []byte) bool {
	return text[0] == '-' && (len(text) == 1 || text[1] == ' ')
}

// node reads the block collection that starts on the current line, at
// indentation ind.
func (p *fastParser) node(ind int) (any, bool) {
	if p.depth++; p.depth > fastMaxDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	if seqEntry(p.text) {
		return p.seq(ind)
	}
	return p.mapping(ind)
}

// seq reads the entries of a block sequence at indentation ind.
func (p *fastParser) seq(ind int) (any, bool) {
	out := []any{}
	for p.have && p.ind == ind && seqEntry(p.text) {
		rest := p.text[1:]
		spaces := 0
		for spaces < len(rest) && rest[spaces] == ' ' {
			spaces++
		}
		rest = rest[spaces:]
		var item any
		switch {
		case len(rest) == 0 || rest[0] == '#': // "-" alone: the entry is on the next lines, or null
			if !p.next() {
				return nil, false
			}
			if p.have && p.ind > ind {
				var ok bool
				if item, ok = p.node(p.ind); !ok {
					return nil, false
				}
			}
		default:
			col := ind + 1 + spaces
			_, _, isKey, ok := simpleKey(rest)
			if !ok {
				return nil, false
			}
			if isKey || seqEntry(rest) {
				// "- key: v" or "- - v": a collection at the column of its content.
				p.ind, p.text = col, rest
				if item, ok = p.node(col); !ok {
					return nil, false
				}
			} else {
				if item, ok = inlineValue(rest); !ok {
					return nil, false
				}
				if !p.next() {
					return nil, false
				}
			}
		}
		if p.have && p.ind > ind {
			return nil, false // a continuation line, or a misplaced one
		}
		out = append(out, item)
	}
	return out, true
}

// mapping reads the entries of a block mapping at indentation ind.
func (p *fastParser) mapping(ind int) (any, bool) {
	out := map[string]any{}
	for p.have && p.ind == ind && !seqEntry(p.text) {
		k, rest, isKey, ok := simpleKey(p.text)
		if !ok || !isKey {
			return nil, false
		}
		if _, dup := out[k]; dup {
			return nil, false
		}
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		var v any
		if len(rest) == 0 || rest[0] == '#' {
			// "key:" alone: a more indented collection, a sequence at the
			// key's own indentation, or null.
			if !p.next() {
				return nil, false
			}
			if p.have && (p.ind > ind || p.ind == ind && seqEntry(p.text)) {
				if v, ok = p.node(p.ind); !ok {
					return nil, false
				}
			}
		} else {
			if v, ok = inlineValue(rest); !ok {
				return nil, false
			}
			if !p.next() {
				return nil, false
			}
		}
		if p.have && p.ind > ind {
			return nil, false // a continuation line, or a misplaced one
		}
		out[k] = v
	}
	return out, true
}

// simpleKey reads a simple key at the start of text: isKey when text is
// "key:" or "key: rest", with rest after the ':'. ok is false when text
// cannot be read with certainty: a key that does not resolve to a string,
// a malformed quoted scalar. isKey false with ok true means text is not a
// key; inlineValue then judges whether it is a value.
func simpleKey(text []byte) (k string, rest []byte, isKey, ok bool) {
	var n int
	switch text[0] {
	case '"', '\'':
		if k, n, ok = quoted(text); !ok {
			return "", nil, false, false
		}
	default:
		for n < len(text) && keyChar(text[n]) {
			n++
		}
		if n == 0 || text[0] == '-' {
			return "", nil, false, true
		}
	}
	if n >= len(text) || text[n] != ':' || n+1 < len(text) && text[n+1] != ' ' {
		return "", nil, false, true
	}
	if n > fastMaxKey {
		return "", nil, false, false
	}
	if text[0] != '"' && text[0] != '\'' {
		v, ok := resolvePlain(text[:n])
		if k, isString := v.(string); ok && isString {
			return k, text[n+1:], true, true
		}
		return "", nil, false, false // 80:, true:, null:, 1.5: ... keys jsonKey would rewrite
	}
	return k, text[n+1:], true, true
}

// fastInterned holds the keys and values that Kubernetes manifests repeat,
// boxed once: a decoded document then shares them instead of allocating a
// string (and an interface box) for each.
var fastInterned = func() map[string]any {
	m := map[string]any{}
	for _, s := range []string{
		// Keys.
		"apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "spec", "status",
		"replicas", "selector", "matchLabels", "matchExpressions", "template", "containers", "initContainers",
		"image", "imagePullPolicy", "command", "args", "ports", "containerPort", "protocol", "port",
		"targetPort", "nodePort", "env", "value", "valueFrom", "fieldRef", "fieldPath", "secretKeyRef",
		"configMapKeyRef", "key", "resources", "limits", "requests", "cpu", "memory", "securityContext",
		"runAsNonRoot", "runAsUser", "runAsGroup", "fsGroup", "seccompProfile", "type",
		"allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities", "drop", "add", "volumeMounts",
		"mountPath", "readOnly", "subPath", "volumes", "emptyDir", "configMap", "secret", "secretName",
		"persistentVolumeClaim", "claimName", "livenessProbe", "readinessProbe", "startupProbe", "httpGet",
		"tcpSocket", "exec", "path", "initialDelaySeconds", "periodSeconds", "timeoutSeconds",
		"failureThreshold", "successThreshold", "restartPolicy", "serviceAccountName", "nodeName",
		"nodeSelector", "tolerations", "operator", "effect", "affinity", "strategy", "rollingUpdate",
		"maxSurge", "maxUnavailable", "revisionHistoryLimit", "data", "stringData", "app", "version", "phase",
		"conditions", "reason", "message", "observedGeneration", "readyReplicas", "availableReplicas",
		"updatedReplicas", "backoffLimit", "terminationGracePeriodSeconds", "rules", "host", "http", "paths",
		"pathType", "backend", "service", "number", "app.kubernetes.io/name", "app.kubernetes.io/instance",
		"app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by",
		"app.kubernetes.io/version",
		// Values.
		"v1", "apps/v1", "batch/v1", "networking.k8s.io/v1", "Deployment", "Service", "Pod", "Job",
		"ConfigMap", "Secret", "Ingress", "StatefulSet", "DaemonSet", "TCP", "UDP", "IfNotPresent", "Always",
		"Never", "OnFailure", "ClusterIP", "NodePort", "LoadBalancer", "RuntimeDefault", "RollingUpdate",
		"Recreate", "Exists", "Equal", "NoSchedule", "NoExecute", "ALL", "Prefix", "Exact", "Running",
		"Pending", "Succeeded", "Failed", "Ready", "Unknown",
	} {
		m[s] = s
	}
	return m
}()

// stringValue returns b as a string value, shared when it is a common one.
func stringValue(b []byte) any {
	if v, ok := fastInterned[string(b)]; ok {
		return v
	}
	return string(b)
}

// keyChar is what plain keys may be made of here: none of these can end a
// plain scalar or start a comment, an anchor, a tag or a merge key.
func keyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '/' || c == '-'
}

// valueEnd reports whether rest, what follows a value on its line, is
// nothing but spaces and perhaps a comment (which needs a space before it).
func valueEnd(rest []byte) bool {
	i := 0
	for i < len(rest) && rest[i] == ' ' {
		i++
	}
	return i == len(rest) || i > 0 && rest[i] == '#'
}

// inlineValue reads the value that text, the rest of a line after "key: "
// or "- ", holds entirely.
func inlineValue(text []byte) (any, bool) {
	switch text[0] {
	case '"', '\'':
		s, n, ok := quoted(text)
		if !ok || !valueEnd(text[n:]) {
			return nil, false
		}
		return s, true
	case '[':
		return flowSeq(text)
	case '{':
		if len(text) >= 2 && text[1] == '}' && valueEnd(text[2:]) {
			return map[string]any{}, true
		}
		return nil, false
	case '-':
		if len(text) == 1 || text[1] == ' ' {
			return nil, false // a sequence entry where a value must be
		}
	case '?', ':', ',', ']', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return nil, false
	}
	// A plain scalar: it runs to a comment (" #") or the end of the line.
	end := len(text)
	for i := 1; i < len(text); i++ {
		if text[i] == '#' && text[i-1] == ' ' {
			end = i
			break
		}
	}
	for end > 0 && text[end-1] == ' ' {
		end--
	}
	s := text[:end]
	if s[len(s)-1] == ':' {
		return nil, false
	}
	for i := 0; i+1 < len(s); i++ {
		if s[i] == ':' && s[i+1] == ' ' {
			return nil, false // "a: b" where a value is expected
		}
	}
	return resolvePlain(s)
}

// flowSeq reads a one-line flow sequence of quoted scalars and of plain
// scalars made of key characters, such as toJson prints.
func flowSeq(text []byte) (any, bool) {
	out := []any{}
	i := 1
	skip := func() {
		for i < len(text) && text[i] == ' ' {
			i++
		}
	}
	skip()
	if i < len(text) && text[i] == ']' {
		return out, valueEnd(text[i+1:])
	}
	for {
		if i >= len(text) {
			return nil, false // the sequence goes on on the next line
		}
		var item any
		switch c := text[i]; {
		case c == '"' || c == '\'':
			s, n, ok := quoted(text[i:])
			if !ok {
				return nil, false
			}
			item, i = s, i+n
		case alnum(c) || c == '-' && i+1 < len(text) && '0' <= text[i+1] && text[i+1] <= '9':
			start := i
			for i < len(text) && keyChar(text[i]) {
				i++
			}
			v, ok := resolvePlain(text[start:i])
			if !ok {
				return nil, false
			}
			item = v
		default:
			return nil, false
		}
		out = append(out, item)
		skip()
		if i >= len(text) {
			return nil, false
		}
		switch text[i] {
		case ',':
			i++
			skip()
		case ']':
			return out, valueEnd(text[i+1:])
		default:
			return nil, false
		}
	}
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// quoted reads the single- or double-quoted scalar that text starts with
// and returns it with the number of bytes it takes. A scalar that does not
// end on its line is declined: line folding has rules of its own.
func quoted(text []byte) (s string, n int, ok bool) {
	if text[0] == '\'' {
		return singleQuoted(text)
	}
	// Most double-quoted scalars have no escape: one allocation.
	for i := 1; i < len(text); i++ {
		switch text[i] {
		case '"':
			return string(text[1:i]), i + 1, true
		case '\\':
			return doubleQuoted(text)
		}
	}
	return "", 0, false
}

func singleQuoted(text []byte) (string, int, bool) {
	var b []byte
	start := 1
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			b = append(b, text[start:i+1]...)
			i++
			start = i + 1
			continue
		}
		if b == nil {
			return string(text[1:i]), i + 1, true
		}
		return string(append(b, text[start:i]...)), i + 1, true
	}
	return "", 0, false
}

// doubleQuoted decodes the escapes yaml.v2 knows (YAML 1.1's, which lack
// JSON's "\/"), and declines on any other.
func doubleQuoted(text []byte) (string, int, bool) {
	b := make([]byte, 0, len(text))
	for i := 1; i < len(text); i++ {
		c := text[i]
		switch c {
		case '"':
			return string(b), i + 1, true
		case '\\':
		default:
			b = append(b, c)
			continue
		}
		if i+1 >= len(text) {
			return "", 0, false // an escaped line break
		}
		var ok bool
		if b, i, ok = unescape(b, text, i+1); !ok {
			return "", 0, false
		}
	}
	return "", 0, false
}

// simpleEscapes are the escapes of one character after the backslash.
var simpleEscapes = [256]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", 'n': "\n", 'v': "\v", 'f': "\f", 'r': "\r", 'e': "\x1b",
	' ': " ", '"': "\"", '\'': "'", '\\': "\\",
	'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
}

// unescape appends to b the escape whose letter is text[i], and returns
// the index of its last byte.
func unescape(b, text []byte, i int) ([]byte, int, bool) {
	if e := simpleEscapes[text[i]]; e != "" {
		return append(b, e...), i, true
	}
	digits := 0
	switch text[i] {
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	default:
		return nil, 0, false
	}
	if i+digits >= len(text) {
		return nil, 0, false
	}
	r := 0
	for _, h := range text[i+1 : i+1+digits] {
		switch {
		case '0' <= h && h <= '9':
			r = r<<4 | int(h-'0')
		case 'a' <= h && h <= 'f':
			r = r<<4 | int(h-'a'+10)
		case 'A' <= h && h <= 'F':
			r = r<<4 | int(h-'A'+10)
		default:
			return nil, 0, false
		}
	}
	if 0xd800 <= r && r <= 0xdfff || r > 0x10ffff {
		return nil, 0, false // yaml.v2 rejects these
	}
	return utf8.AppendRune(b, rune(r)), i + digits, true
}

// resolvePlain resolves a plain scalar as yaml.v2's resolve does, then
// converts it as jsonValue does, declining whatever it cannot be sure of:
// timestamps, integers other than plain decimal ones, .inf and .nan.
// yaml.v2 tells the candidates apart by the first character: only these
// can be anything but a string.
func resolvePlain(s []byte) (any, bool) {
	switch s[0] {
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		switch string(s) {
		case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
			return true, true
		case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
			return false, true
		case "~", "null", "Null", "NULL":
			return nil, true
		}
		return stringValue(s), true
	case '.':
		switch string(s) {
		case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF":
			return nil, false // jsonNumber refuses them
		}
		f, err := strconv.ParseFloat(string(s), 64)
		if err != nil {
			return string(s), true // ".5.6", ".x": yaml.v2 keeps them as text
		}
		v, err := jsonNumber(f)
		return v, err == nil
	case '+', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return resolveNumeric(s)
	}
	return stringValue(s), true
}

// resolveNumeric resolves a plain scalar that starts with a sign or a digit.
func resolveNumeric(s []byte) (any, bool) {
	if decimalInt(s) {
		if i, ok := parseDecimal(s); ok {
			return i, true
		}
		return nil, false // beyond int64: uint64 or float64 in yaml.v2
	}
	digits := 0
	for digits < len(s) && '0' <= s[digits] && s[digits] <= '9' {
		digits++
	}
	if digits == 4 && len(s) > 4 && s[4] == '-' {
		return nil, false // maybe a timestamp
	}
	for _, c := range s {
		if c == '_' {
			return nil, false // yaml.v2 drops underscores from numbers
		}
	}
	str := string(s)
	if goIntChars(s) {
		if _, err := strconv.ParseInt(str, 0, 64); err == nil {
			return nil, false // 0x1F, 017, +1, -0b1...
		}
		if _, err := strconv.ParseUint(str, 0, 64); err == nil {
			return nil, false
		}
	}
	switch str {
	case "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return nil, false
	}
	if yamlFloat(s) {
		f, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, false
		}
		v, err := jsonNumber(f)
		return v, err == nil
	}
	if len(s) >= 2 && s[0] == '0' && s[1] == 'b' || len(s) >= 3 && s[0] == '-' && s[1] == '0' && s[2] == 'b' {
		return nil, false
	}
	return str, true // 500m, 128Mi, 1.7.9, -c: text
}

// goIntChars reports whether s is made of the characters of Go's integer
// literals: when not, strconv.ParseInt and ParseUint fail for sure, and need
// not allocate their errors to say so ("500m", "128Mi", "0.5").
func goIntChars(s []byte) bool {
	for _, c := range s {
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		case c == 'x', c == 'X', c == 'o', c == 'O', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}

// decimalInt reports whether s is -?(0|[1-9][0-9]*), the integers whose
// meaning YAML 1.1, Go and JSON agree on.
func decimalInt(s []byte) bool {
	if s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 1 && s[0] == '0' {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseDecimal parses what decimalInt accepts, without the string
// strconv would need; ok is false beyond int64.
func parseDecimal(s []byte) (int64, bool) {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var u uint64
	for _, c := range s {
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// yamlFloat matches yaml.v2's yamlStyleFloat,
// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$.
func yamlFloat(s []byte) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
