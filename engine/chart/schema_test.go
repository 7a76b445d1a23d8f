package chart

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/tmplop/operator/engine/render"
)

// counter is an HTTP server that counts the requests it gets and serves
// a schema that would leak its content into a validation message.
func counter(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		_, _ = w.Write([]byte(`{"const": "fetched-from-the-network"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestCompileSchemaRefusesOutside: a values schema that names anything
// outside its own document, over the network or in a file, is refused
// when it is compiled, at its file and line, and nothing is fetched or
// read.
func TestCompileSchemaRefusesOutside(t *testing.T) {
	srv, requests := counter(t)
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"const": "s3cr3t"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, schema string
		line         int
		want         string
	}{
		{name: "http", line: 4, want: `$ref names ` + srv.URL + `/meta-data, outside the schema`, schema: `{
  "type": "object",
  "properties": {
    "a": {"$ref": "` + srv.URL + `/meta-data"}
  }
}`},
		{name: "https", line: 2, want: `$ref names https://169.254.169.254/latest`, schema: `{
  "properties": {"a": {"$ref": "https://169.254.169.254/latest#/x"}}
}`},
		{name: "file", line: 3, want: `$ref names file://` + secret, schema: `{
  "properties": {
    "a": {"$ref": "file://` + secret + `"}
  }
}`},
		{name: "relative, a file beside the schema", line: 1, want: `$ref names file:///other.json`, schema: `{"$ref": "other.json#/defs/x"}`},
		{name: "a metaschema of its own", line: 2, want: `$schema names ` + srv.URL + `/meta`, schema: `{
  "$schema": "` + srv.URL + `/meta",
  "type": "object"
}`},
		{name: "under an $id of the network", line: 3, want: `$ref names http://example.com/schemas/other.json`, schema: `{
  "$id": "http://example.com/schemas/values.json",
  "properties": {"a": {"$ref": "other.json"}}
}`},
		{name: "a dynamic reference", line: 3, want: `names ` + srv.URL + `/x`, schema: `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "properties": {"a": {"$dynamicRef": "` + srv.URL + `/x#meta"}}
}`},
		{name: "not JSON", line: 2, want: "not JSON", schema: "{\n  \"type\": }"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileSchema("charts/db/values.schema.json", []byte(tc.schema))
			var re *render.Error
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a *render.Error", err)
			}
			if re.Template != "charts/db/values.schema.json" || re.Line != tc.line || !strings.Contains(re.Message, tc.want) {
				t.Errorf("got %s:%d: %s\nwant charts/db/values.schema.json:%d: ...%s...", re.Template, re.Line, re.Message, tc.line, tc.want)
			}
			if strings.Contains(re.Message, "s3cr3t") {
				t.Errorf("the message tells the file's content: %s", re.Message)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
}

// TestCompileSchemaAccepts: what a schema may hold of its own: internal
// references, embedded resources, the drafts' metaschemas (held by the
// library, never fetched), and Helm's urn: references, which Helm too
// resolves to a schema that accepts anything.
func TestCompileSchemaAccepts(t *testing.T) {
	cases := []struct {
		name, schema string
		valid, bad   map[string]any
	}{
		{name: "draft-07, definitions", schema: `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "properties": {"image": {"$ref": "#/definitions/image"}},
  "definitions": {"image": {"type": "object", "required": ["repository"]}}
}`, valid: map[string]any{"image": map[string]any{"repository": "nginx"}}, bad: map[string]any{"image": map[string]any{}}},
		{name: "2020-12, $defs", schema: `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "properties": {"size": {"$ref": "#/$defs/size"}},
  "$defs": {"size": {"type": "string", "pattern": "^[0-9]+Gi$"}}
}`, valid: map[string]any{"size": "5Gi"}, bad: map[string]any{"size": "big"}},
		{name: "an embedded resource named by its $id", schema: `{
  "$id": "http://example.com/values.json",
  "properties": {"a": {"$ref": "http://example.com/port.json"}},
  "$defs": {"port": {"$id": "http://example.com/port.json", "type": "integer"}}
}`, valid: map[string]any{"a": int64(80)}, bad: map[string]any{"a": "eighty"}},
		{name: "urn, as Helm", schema: `{"properties": {"a": {"$ref": "urn:example:anything"}}}`,
			valid: map[string]any{"a": "whatever"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := compileSchema(SchemaFile, []byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			w := newWork(t.Context(), render.Budget{})
			if err := s.validate(tc.valid, w); err != nil {
				t.Errorf("valid values refused: %v", err)
			}
			if tc.bad != nil {
				if err := s.validate(tc.bad, w); err == nil {
					t.Errorf("%v accepted", tc.bad)
				}
			}
		})
	}
}

// TestValidationMessageIsHelms: a validation's message is Helm's, word
// for word, for schemas Helm validates without fetching anything.
func TestValidationMessageIsHelms(t *testing.T) {
	cases := []struct {
		name, schema string
		values       map[string]any
	}{
		{name: "type", schema: `{"properties": {"replicas": {"type": "integer"}}}`, values: map[string]any{"replicas": "two"}},
		{name: "required, nested", schema: `{"properties": {"image": {"type": "object", "required": ["repository", "tag"]}}}`,
			values: map[string]any{"image": map[string]any{}}},
		{name: "enum through a reference", schema: `{"$schema": "http://json-schema.org/draft-07/schema#",
  "properties": {"mode": {"$ref": "#/definitions/mode"}}, "definitions": {"mode": {"enum": ["fast", "safe"]}}}`,
			values: map[string]any{"mode": "slow"}},
		{name: "anyOf", schema: `{"properties": {"port": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-z]+$"}]}}}`,
			values: map[string]any{"port": "80x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := compileSchema(SchemaFile, []byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			ours := s.validate(tc.values, newWork(t.Context(), render.Budget{}))
			helm := chartutil.ValidateAgainstSingleSchema(tc.values, []byte(tc.schema))
			if ours == nil || helm == nil {
				t.Fatalf("ours %v, Helm's %v: want both to fail", ours, helm)
			}
			if got, want := validationMessage(ours), helm.Error(); got != want {
				t.Errorf("message\n%s\nwant Helm's\n%s", got, want)
			}
		})
	}
}

// TestValidationMessageBounded: a validation that fails for every
// element of a long list, each a long string, tells a bounded message.
func TestValidationMessageBounded(t *testing.T) {
	s, err := compileSchema(SchemaFile, []byte(`{"properties": {"l": {"items": {"type": "string", "pattern": "^a$"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	l := make([]any, 2000)
	for i := range l {
		l[i] = strings.Repeat("b", 10000)
	}
	err = s.validate(map[string]any{"l": l}, newWork(t.Context(), render.Budget{MaxOutputBytes: 1 << 30}))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := validationMessage(err)
	if max := (maxErrorLines + 2) * (maxErrorLineSize + 64); len(msg) > max {
		t.Errorf("message of %d bytes, want at most %d", len(msg), max)
	}
	if !strings.Contains(msg, "(more errors)") {
		t.Errorf("message does not say that errors were left out: %.300s", msg)
	}
}

// exponential is a schema whose applicators nest: each level applies the
// next one twice to the same value, 2^depth evaluations in all.
func exponential(depth int) string {
	var defs []string
	for i := range depth {
		defs = append(defs, fmt.Sprintf(`"l%d": {"allOf": [{"$ref": "#/$defs/l%d"}, {"$ref": "#/$defs/l%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"l%d": {"type": "object"}`, depth))
	return `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/l0", "$defs": {` + strings.Join(defs, ", ") + `}}`
}

// TestSchemaValidationBudget: a validation is held to the render's
// budget: a schema that would take 2^40 evaluations stops at the output
// budget (what its steps allocate), or at the deadline, or when the
// render is canceled, quickly each time.
func TestSchemaValidationBudget(t *testing.T) {
	s, err := compileSchema(SchemaFile, []byte(exponential(40)))
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	cases := []struct {
		name   string
		ctx    context.Context
		budget render.Budget
		want   string
	}{
		{name: "output", ctx: t.Context(), budget: render.Budget{Timeout: time.Minute}, want: render.BudgetOutput},
		{name: "time", ctx: t.Context(), budget: render.Budget{Timeout: 100 * time.Millisecond, MaxOutputBytes: 1 << 50}, want: render.BudgetTime},
		{name: "canceled", ctx: canceled, budget: render.Budget{Timeout: time.Minute, MaxOutputBytes: 1 << 50}, want: render.BudgetCanceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := s.validate(map[string]any{}, newWork(tc.ctx, tc.budget))
			took := time.Since(start)
			var be *render.BudgetError
			if !errors.As(err, &be) || be.Budget != tc.want {
				t.Fatalf("got %v, want the %s budget's error", err, tc.want)
			}
			t.Logf("%v after %s", err, took.Round(time.Millisecond))
			if took > 2*time.Second {
				t.Errorf("stopped after %s", took)
			}
		})
	}
	// The compiled copy went back, and validates again.
	if err := s.validate(map[string]any{}, newWork(t.Context(), render.Budget{MaxOutputBytes: 1 << 50, Timeout: 50 * time.Millisecond})); err == nil {
		t.Error("a second validation was not stopped")
	}
}

// TestSchemaStepCost: what a validation charges is at least what it
// allocates, for values that pass, that fail at each element, and that
// fail every branch of an anyOf.
func TestSchemaStepCost(t *testing.T) {
	l := make([]any, 10000)
	for i := range l {
		l[i] = int64(i)
	}
	values := map[string]any{"l": l}
	cases := []struct{ name, schema string }{
		{"passes", `{"properties": {"l": {"items": {"type": "integer", "minimum": 0}}}}`},
		{"every element fails its type", `{"properties": {"l": {"items": {"type": "string"}}}}`},
		{"every branch fails", `{"properties": {"l": {"items": {"anyOf": [{"type": "string", "minLength": 3}, {"type": "object", "required": ["a"]}, {"enum": ["x", "y"]}]}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := compileSchema(SchemaFile, []byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			var charged int64
			alloc := allocated(3, func() {
				w := newWork(t.Context(), render.Budget{Timeout: time.Minute, MaxOutputBytes: 1 << 40})
				if err := s.validate(values, w); err != nil {
					_ = validationMessage(err)
				}
				charged = w.spent
			})
			t.Logf("charged %d bytes, allocated %d", charged, alloc)
			if charged < alloc {
				t.Errorf("charged %d bytes for a validation that allocates %d", charged, alloc)
			}
		})
	}
}

// TestSchemaConcurrentValidations: renders of one folder validate at
// once, each on a compiled copy of its own with its own budget: a
// validation stopped by its budget stops no other, and every result is
// its own values'.
func TestSchemaConcurrentValidations(t *testing.T) {
	// exponential's levels, under the properties of a schema of their own.
	levels := strings.TrimSuffix(strings.SplitN(exponential(30), `"$defs": `, 2)[1], "}")
	s, err := compileSchema(SchemaFile, []byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema",
  "properties": {"n": {"type": "integer"}, "bomb": {"$ref": "#/$defs/l0"}}, "$defs": `+levels+`}`))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan string, 8*24)
	for g := range 8 {
		go func() {
			for i := range 24 {
				var values map[string]any
				var want string
				switch (g + i) % 3 {
				case 0:
					values, want = map[string]any{"n": int64(i)}, ""
				case 1:
					values, want = map[string]any{"n": "x"}, "got string, want integer"
				default:
					values, want = map[string]any{"bomb": map[string]any{}}, "render budget exceeded: output"
				}
				err := s.validate(values, newWork(context.Background(), render.Budget{}))
				switch {
				case want == "" && err != nil:
					errs <- fmt.Sprintf("%v refused: %v", values, err)
				case want != "" && (err == nil || !strings.Contains(validationMessage(err), want)):
					errs <- fmt.Sprintf("%v: got %v, want %q", values, err, want)
				default:
					errs <- ""
				}
			}
		}()
	}
	for range 8 * 24 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
