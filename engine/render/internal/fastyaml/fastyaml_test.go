package fastyaml

import (
	"reflect"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
)

// yamlv2Decode is Decode without its fast path: what DecodeFast must
// reproduce.
func yamlv2Decode(data []byte) (any, error) {
	var v any
	if err := yamlv2.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return jsonValue(v)
}

// deploymentDoc is a Deployment as templates print it: helpers indented by
// nindent, toYaml blocks, quoted names, a toJson command, comments.
const deploymentDoc = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: "memcached-sample"
  labels:
    app.kubernetes.io/name: memcached
    app.kubernetes.io/instance: "memcached-sample"
    app.kubernetes.io/managed-by: tmplop
  annotations:
    checksum/config: 3f2a9c0e1b7d4c5a
spec:
  replicas: 3
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app.kubernetes.io/name: memcached
      app.kubernetes.io/instance: "memcached-sample"
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: memcached
        app.kubernetes.io/instance: "memcached-sample"
    spec:
      # The restricted Pod Security profile.
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: memcached
          image: "memcached:1.6.26-alpine"
          imagePullPolicy: IfNotPresent
          command: ["memcached","-m=64","-o","modern","-v"]
          args: []
          env:
          - name: MEMCACHED_THREADS
            value: "4"
          - name: POD_IP
            valueFrom:
              fieldRef:
                fieldPath: status.podIP
          ports:
            - name: memcached
              containerPort: 11211
              protocol: TCP
          resources:
            limits:
              cpu: 500m
              memory: 128Mi
            requests:
              cpu: 0.25
              memory: 64Mi
          readinessProbe:
            tcpSocket:
              port: memcached
            initialDelaySeconds: 5
            periodSeconds: 10
          securityContext:
            runAsUser: 1001
            allowPrivilegeEscalation: false
            capabilities:
              drop: ["ALL"]
          volumeMounts:
            - name: data
              mountPath: /data
              readOnly: false
      volumes:
        - name: data
          emptyDir: {}
`

// fastAccepted are documents DecodeFast must read, with what it must give.
var fastAccepted = []struct {
	name, doc string
	want      any
}{
	{"empty", "", nil},
	{"comments only", "# a\n  # b\n\n", nil},
	{"scalars", "a: b\nc: 1\nd: -42\ne: 0\nf: true\ng: Off\nh: ~\ni: null\nj:\nk: NULL\n",
		map[string]any{"a": "b", "c": int64(1), "d": int64(-42), "e": int64(0), "f": true, "g": false, "h": nil, "i": nil, "j": nil, "k": nil}},
	{"yaml 1.1 booleans", "- y\n- Yes\n- ON\n- n\n- NO\n- off\n- yup\n- tRUE\n",
		[]any{true, true, true, false, false, false, "yup", "tRUE"}},
	{"int64 bounds", "a: 9223372036854775807\nb: -9223372036854775808\nc: -0\n",
		map[string]any{"a": int64(9223372036854775807), "b": int64(-9223372036854775808), "c": int64(0)}},
	{"floats", "a: 1.5\nb: 1e3\nc: .5\nd: -0.0\ne: 1.\nf: 09\ng: 2.5E-3\n",
		map[string]any{"a": 1.5, "b": int64(1000), "c": 0.5, "d": int64(0), "e": int64(1), "f": int64(9), "g": 0.0025}},
	{"strings that look numeric", "- 500m\n- 128Mi\n- 1.7.9\n- 10.96.12.34\n- 1:20\n- -c\n- -m=64\n- .x\n- 1.5.6\n- 12:30:00\n- +\n- 0x\n- 1e\n",
		[]any{"500m", "128Mi", "1.7.9", "10.96.12.34", "1:20", "-c", "-m=64", ".x", "1.5.6", "12:30:00", "+", "0x", "1e"}},
	{"plain strings", "a: nginx:1.7.9\nb: http://x.y/z?q=1#f\nc: a  b\nd: a#b\ne: it's\nf: 25%\ng: x, [y], {z}\nh: a :b\n",
		map[string]any{"a": "nginx:1.7.9", "b": "http://x.y/z?q=1#f", "c": "a  b", "d": "a#b", "e": "it's", "f": "25%", "g": "x, [y], {z}", "h": "a :b"}},
	{"comments after values", "a: b # c\nd: 'e' # f\ng: # h\n  i: 1 #j\nk: [1] #l\n",
		map[string]any{"a": "b", "d": "e", "g": map[string]any{"i": int64(1)}, "k": []any{int64(1)}}},
	{"trailing spaces", "a: b  \nc:   \nd: 'e'  \n", map[string]any{"a": "b", "c": nil, "d": "e"}},
	{"double quoted", `a: "x\"y\\z\n\t\r\0\a\b\v\f\e\ \'\N\_\L\P"` + "\nb: \"\\x41\\u00e9\\U0001F600\\u003c\"\nc: \"  \"\nd: \"\"\ne: \"1\"\nf: \"#x: y\"\n",
		map[string]any{"a": "x\"y\\z\n\t\r\x00\a\b\v\f\x1b '\u0085\u00a0\u2028\u2029", "b": "Aé😀<", "c": "  ", "d": "", "e": "1", "f": "#x: y"}},
	{"single quoted", "a: 'it''s'\nb: ''\nc: '\\n'\nd: ''''\n",
		map[string]any{"a": "it's", "b": "", "c": `\n`, "d": "'"}},
	{"quoted keys", "\"a b\": 1\n'c''d': 2\n\"true\": 3\n\"1\": 4\n",
		map[string]any{"a b": int64(1), "c'd": int64(2), "true": int64(3), "1": int64(4)}},
	{"keys", "app.kubernetes.io/name: a\nhello_name: b\n.x: c\n1a: d\nA-b: e\n",
		map[string]any{"app.kubernetes.io/name": "a", "hello_name": "b", ".x": "c", "1a": "d", "A-b": "e"}},
	{"non-ascii", "a: héllo wörld 日本\nb: \"ü\"\n", map[string]any{"a": "héllo wörld 日本", "b": "ü"}},
	{"flow", "a: []\nb: {}\nc: [ ]\nd: [\"x\", 'y', z, 1, true, null, -2]\ne: [\"sh\",\"-c\",\"a; b\"]\n",
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{}, "d": []any{"x", "y", "z", int64(1), true, nil, int64(-2)}, "e": []any{"sh", "-c", "a; b"}}},
	{"sequence at the key's indentation", "a:\n- b\n- c: 1\n  d: 2\ne: f\n",
		map[string]any{"a": []any{"b", map[string]any{"c": int64(1), "d": int64(2)}}, "e": "f"}},
	{"nested sequences", "- - a\n  - b\n- -   c\n  - d\n-\n  - e\n-\n- f\n",
		[]any{[]any{"a", "b"}, []any{"c", "d"}, []any{"e"}, nil, "f"}},
	{"compact mappings", "-   a: 1\n    b:\n    - c\n    d:\n      e: f\n- g:\n  h: 2\n",
		[]any{map[string]any{"a": int64(1), "b": []any{"c"}, "d": map[string]any{"e": "f"}}, map[string]any{"g": nil, "h": int64(2)}}},
	{"indented document", "  a: 1\n  b:\n     - 2\n", map[string]any{"a": int64(1), "b": []any{int64(2)}}},
	{"dashes in values", "a: -1\nb: --x\nc: '-'\n",
		map[string]any{"a": int64(-1), "b": "--x", "c": "-"}},
	{"edge layouts", "- -\n- - -\n    - x\n- #c\n  a: 1\n- a:1\n- 'a' #c\n- \"b\":\n- a:\n  - b\n",
		[]any{[]any{nil}, []any{[]any{nil, "x"}}, map[string]any{"a": int64(1)}, "a:1", "a", map[string]any{"b": nil}, map[string]any{"a": []any{"b"}}}},
	{"edge scalars", "a: \" a \"\nb: 1e-400\nc: 0x1p-2\nd: 0o8\ne: .1_0\nf: .inF\ng: 1 #\nh: 2#\ni: ...\nj: ---\nk: \u00a0\n",
		map[string]any{"a": " a ", "b": int64(0), "c": "0x1p-2", "d": "0o8", "e": 0.1, "f": ".inF", "g": int64(1), "h": "2#", "i": "...", "j": "---", "k": "\u00a0"}},
	{"deployment", deploymentDoc, nil}, // compared with yaml.v2 only
}

// fastDeclined are documents DecodeFast must leave to yaml.v2: valid YAML
// outside its subset, or invalid YAML.
var fastDeclined = []string{
	// Constructs outside the subset.
	"a: |\n  x\n", "a: >-\n  x\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "? a\n: b\n",
	"%YAML 1.1\n---\na: 1\n", "---\na: 1\n", "a: 1\n---\nb: 2\n", "a: 1\n...\n",
	"a: {b: c}\n", "a: [b, [c]]\n", "a: [b,\n  c]\n", "a: [b,]\n", "a: [b c]\n", "a: [b #c\n", "a: [a:b]\n",
	"a: b\n  c\n", "- a\n  b\n", "a:\n  b\n", "hello\n", "\"hello\"\n", "[a]\n", "{}\n", "1\n",
	"a: 'x\n  y'\n", "a: \"x\n  y\"\n", "a: \"x\\\n  y\"\n", "a b: c\n", "a: b: c\n", "a: b:\n", "- a: b: c\n",
	// Keys that are not plain strings, or that collide.
	"1: a\n", "true: a\n", "y: a\n", "null: a\n", "1.5: a\n", ".inf: a\n", "2001-12-14: a\n", "<<: {a: b}\n",
	"a: 1\na: 2\n", "a: 1\n'a': 2\n", "-a: 1\n", "~: a\n",
	// Scalars whose meaning is declined rather than reproduced.
	"a: 0x1F\n", "a: 017\n", "a: +1\n", "a: 1_000\n", "a: 0b101\n", "a: -0b1\n", "a: 0o17\n",
	"a: 2001-12-14\n", "a: 2001-12-14T21:59:43Z\n", "a: 9223372036854775808\n", "a: -9223372036854775809\n",
	"a: 18446744073709551615\n", "a: 1e400\n",
	"a: .inf\n", "a: -.inf\n", "a: +.Inf\n", "a: .nan\n", "a: .NaN\n",
	// Escapes yaml.v2 does not know, or rejects.
	`a: "\/"` + "\n", `a: "\q"` + "\n", `a: "\ud800"` + "\n", `a: "\U00110000"` + "\n", `a: "\x4"` + "\n", `a: "\xZZ"` + "\n",
	// Characters with roles of their own.
	"a:\tb\n", "\ta: 1\n", "a: b\r\n", "a: \xff\n", "a: \u0085\n", "a: x\u2028y\n", "\ufeffa: 1\n", "a: \x7f\n", "a: \x00\n",
	// Layout errors or indicators where a value must be.
	"a: 1\n- b\n", "a: 1\n b: 2\n", "- a: 1\n b: 2\n", "- a: 1\n   b: 2\n", "a:\n  - b\n  c: d\n",
	"a: -\n", "a: - b\n", "a: ?x\n", "a: :x\n", "a: @x\n", "a: `x`\n", "a: %x\n", "a: ,x\n", "a: 'b'c\n", "a: 'b'#c\n",
	"\"a\" : b\n", "\"a\":b\n", "a:b\n",
	// Valid, but rare in templates' output: left to yaml.v2.
	"k: [\"a\"]#c\n", "k: {}#c\n", "k: [-a]\n", "k: [~]\n", "k: [.5]\n", "\u00a0: x\n", "a: 123456789012345678901234567890\n",
}

func TestFastDecode(t *testing.T) {
	for _, c := range fastAccepted {
		t.Run(c.name, func(t *testing.T) {
			got, ok := DecodeFast([]byte(c.doc))
			if !ok {
				t.Fatalf("declined %q", c.doc)
			}
			want, err := yamlv2Decode([]byte(c.doc))
			if err != nil {
				t.Fatalf("yaml.v2: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q:\nDecodeFast %#v\nyaml.v2    %#v", c.doc, got, want)
			}
			if c.want != nil && !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%q:\ngot  %#v\nwant %#v", c.doc, got, c.want)
			}
		})
	}
}

func TestFastDecodeDeclines(t *testing.T) {
	for _, doc := range fastDeclined {
		if v, ok := DecodeFast([]byte(doc)); ok {
			t.Errorf("%q: accepted as %#v, want declined", doc, v)
		}
	}
}

// FuzzFastDecode: whatever DecodeFast accepts, yaml.v2 decodes without
// error into the same value, Go types included.
func FuzzFastDecode(f *testing.F) {
	for _, c := range fastAccepted {
		f.Add([]byte(c.doc))
	}
	for _, doc := range fastDeclined {
		f.Add([]byte(doc))
	}
	// testdata/fuzz/FuzzFastDecode holds documents the shipped examples
	// and the render's golden cases render (render's
	// TestFastDecodeAcceptsExamples checks that they take the fast path).
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := DecodeFast(data)
		if !ok {
			return
		}
		want, err := yamlv2Decode(data)
		if err != nil {
			t.Fatalf("%q: DecodeFast accepted %#v, yaml.v2 fails: %v", data, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nDecodeFast %#v\nyaml.v2    %#v", data, got, want)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	data := []byte(deploymentDoc)
	if _, ok := DecodeFast(data); !ok {
		b.Fatal("DecodeFast declines the Deployment")
	}
	b.Run("DecodeFast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			DecodeFast(data)
		}
	})
	b.Run("yaml.v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := yamlv2Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
