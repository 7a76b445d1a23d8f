package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// The tests of this file hold a chart kind folder to what compiling and
// rendering it may cost the operator, whoever wrote the folder or the
// object: an archive unpacks to little, a values schema fetches nothing,
// and the chart's work for an object is the render's, under its budget.

// schemaFile is a chart's values schema.
const schemaFile = "values.schema.json"

const chartKindYAML = "apiVersion: charts.test.tmplop.io/v1\nkind: Web\n"

// chartOf is a chart named name: a ConfigMap child and the extra files.
func chartOf(name string, extra map[string][]byte) layout.Files {
	files := layout.Files{
		"Chart.yaml":        []byte("apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + name + "\n"),
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// packed is files packaged as helm package lays them out (chart.Pack).
func packed(t *testing.T, name string, files layout.Files) []byte {
	t.Helper()
	data, err := chart.Pack(name, files)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// zeros are n files of size bytes of zeros, under files/.
func zeros(n, size int) map[string][]byte {
	out := map[string][]byte{}
	for i := range n {
		out[fmt.Sprintf("files/zeros-%02d.bin", i)] = make([]byte, size)
	}
	return out
}

// configMapFolder is a ConfigMap folder: kind.yaml and the chart
// packaged, as one key.
func configMapFolder(t *testing.T, archive []byte) layout.Files {
	return layout.Files{KindFile: []byte(chartKindYAML), "web-0.1.0.tgz": archive}
}

// allocatedBy is what f allocates, in bytes.
func allocatedBy(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// TestChartArchiveBombs: a packaged chart, and every subchart archive
// nested in it or in a chart folder, unpack against one count of 16 MiB
// (chart.DefaultMaxUnpacked): a chart past it is refused with an error
// naming the archive, having allocated little more than the count. Helm's
// loader allowed 100 MiB per archive, again for each nested one, and
// allocated twice what it unpacked.
func TestChartArchiveBombs(t *testing.T) {
	const fiveMiB = 5 << 20 // Helm's limit of one file
	inner := func(name string, files map[string][]byte) map[string][]byte {
		return map[string][]byte{"charts/" + name + "-0.1.0.tgz": packed(t, name, chartOf(name, files))}
	}
	merge := func(ms ...map[string][]byte) map[string][]byte {
		out := map[string][]byte{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	cases := []struct {
		name  string
		files func(t *testing.T) layout.Files
		want  string // in the error; "" loads
	}{
		{
			name: "19 files of 5 MiB of zeros",
			files: func(t *testing.T) layout.Files {
				return configMapFolder(t, packed(t, "web", chartOf("web", zeros(19, fiveMiB))))
			},
			want: "web-0.1.0.tgz: files/zeros-03.bin: the chart unpacks to more than 16777216 bytes",
		},
		{
			name: "a subchart archive of 19 files of 5 MiB",
			files: func(t *testing.T) layout.Files {
				return configMapFolder(t, packed(t, "web", chartOf("web", inner("sub", zeros(19, fiveMiB)))))
			},
			want: "web-0.1.0.tgz: charts/sub-0.1.0.tgz: files/zeros-03.bin: the chart unpacks to more than 16777216 bytes",
		},
		{
			name: "12 MiB outside, 12 MiB in a subchart archive: past the limit together",
			files: func(t *testing.T) layout.Files {
				return configMapFolder(t, packed(t, "web", chartOf("web", merge(zeros(3, 4<<20), inner("sub", zeros(3, 4<<20))))))
			},
			want: "charts/sub-0.1.0.tgz: files/zeros-0",
		},
		{
			name: "an archive in an archive in an archive",
			files: func(t *testing.T) layout.Files {
				return configMapFolder(t, packed(t, "web", chartOf("web", inner("a", inner("b", zeros(19, fiveMiB))))))
			},
			want: "web-0.1.0.tgz: charts/a-0.1.0.tgz: charts/b-0.1.0.tgz: files/zeros-03.bin: the chart unpacks to more than",
		},
		{
			name: "a chart folder's subchart archive",
			files: func(t *testing.T) layout.Files {
				f := chartOf("web", inner("sub", zeros(19, fiveMiB)))
				f[KindFile] = []byte(chartKindYAML)
				return f
			},
			want: "charts/sub-0.1.0.tgz: files/zeros-03.bin: the chart unpacks to more than 16777216 bytes",
		},
		{
			name: "a chart with a subchart archive, within the limit",
			files: func(t *testing.T) layout.Files {
				return configMapFolder(t, packed(t, "web", chartOf("web", merge(zeros(2, 1<<20), inner("sub", zeros(2, 1<<20))))))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files(t)
			var k *Kind
			var err error
			alloc := allocatedBy(func() { k, err = Compile("web", "configmap/ops/web", files) })
			t.Logf("compiling allocated %.1f MiB", float64(alloc)/(1<<20))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				res, err := k.Children(t.Context(), render.Input{Object: webObject(nil)}, chart.Cluster{})
				if err != nil {
					t.Fatal(err)
				}
				if got := len(res.Manifests); got != 2 {
					t.Errorf("%d children, want the chart's and its subchart's", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			// What is kept is the count; gzip's and tar's buffers and the
			// test's own allocations come on top.
			if max := int64(16<<20) + 8<<20; alloc > max { // chart.DefaultMaxUnpacked, and buffers
				t.Errorf("refusing it allocated %.1f MiB, want at most %.1f", float64(alloc)/(1<<20), float64(max)/(1<<20))
			}
		})
	}
}

// webObject is an object of the chart kinds of these tests.
func webObject(spec map[string]any) map[string]any {
	if spec == nil {
		spec = map[string]any{}
	}
	return map[string]any{"apiVersion": "charts.test.tmplop.io/v1", "kind": "Web",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "uid": "u1", "generation": int64(1)}, "spec": spec}
}

// TestChartSchemaFetchesNothing: a values schema that names a URL or a
// file refuses its folder at load, naming values.schema.json (or the
// subchart's) and the line; nothing is fetched, neither then nor at any
// render, and no file's content reaches a message. Helm's own validation
// fetched it at every render, from the operator's network position.
func TestChartSchemaFetchesNothing(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(`{"const": "from-the-metadata-server"}`))
	}))
	defer srv.Close()
	secret := filepath.Join(t.TempDir(), "token.json")
	if err := os.WriteFile(secret, []byte(`{"const": "s3cr3t-token"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	schemaRef := func(ref string) []byte {
		return []byte("{\n  \"type\": \"object\",\n  \"properties\": {\n    \"a\": {\"$ref\": \"" + ref + "\"}\n  }\n}\n")
	}
	cases := []struct {
		name  string
		files layout.Files
		want  string // file:line: message start
	}{
		{
			name:  "http",
			files: chartOf("web", map[string][]byte{schemaFile: schemaRef(srv.URL + "/latest/meta-data")}),
			want:  "values.schema.json:4: $ref names " + srv.URL + "/latest/meta-data, outside the schema",
		},
		{
			name:  "file",
			files: chartOf("web", map[string][]byte{schemaFile: schemaRef("file://" + secret)}),
			want:  "values.schema.json:4: $ref names file://" + secret + ", outside the schema",
		},
		{
			name: "a subchart's schema",
			files: chartOf("web", map[string][]byte{
				"charts/db/Chart.yaml":    []byte("apiVersion: v2\nname: db\nversion: 0.1.0\n"),
				"charts/db/" + schemaFile: schemaRef(srv.URL + "/db"),
			}),
			want: "charts/db/values.schema.json:4: $ref names " + srv.URL + "/db, outside the schema",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.files[KindFile] = []byte(chartKindYAML)
			k, err := Compile("web", "configmap/ops/web", tc.files)
			if err == nil {
				// Loaded: what a render then does with the schema.
				_, rerr := k.Children(t.Context(), render.Input{Object: webObject(map[string]any{"a": "x", "db": map[string]any{"a": "x"}})}, chart.Cluster{})
				t.Fatalf("loaded, want refused at load; a render said: %v", rerr)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s...", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "from-the-metadata-server") {
				t.Errorf("the error tells what the reference holds: %v", err)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
}

// TestChartWorkBudget: what a chart does for an object before its
// templates run (the object's values, Helm's copies of them, its
// dependencies, its schema's validation) is the render's, held to the
// render's budget: a spec too large to copy is refused before it is
// copied, a schema that would validate for hours stops at the deadline or
// the output budget, and values nested too deep are refused.
func TestChartWorkBudget(t *testing.T) {
	wide := map[string]any{}
	for i := range 60000 {
		wide[fmt.Sprintf("key-%05d", i)] = map[string]any{"a": "b"}
	}
	deep := map[string]any{}
	for cur, i := deep, 0; i < 300; i++ {
		next := map[string]any{}
		cur["x"] = next
		cur = next
	}
	cases := []struct {
		name   string
		schema string
		spec   map[string]any
		budget render.Budget
		want   string // the budget that stops it; else in the error
	}{
		{name: "a spec of 60,000 small maps", spec: map[string]any{"global": wide}, want: render.BudgetOutput},
		{name: "a schema of 2^22 evaluations, default budget", schema: exponentialSchema(22), want: render.BudgetOutput},
		{name: "a schema of 2^22 evaluations, 200 ms", schema: exponentialSchema(22),
			budget: render.Budget{Timeout: 200 * time.Millisecond, MaxOutputBytes: 1 << 40}, want: render.BudgetTime},
		{name: "values 300 levels deep", spec: map[string]any{"deep": deep}, want: "values.yaml: the object's values nest more than 256 levels deep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string][]byte{}
			if tc.schema != "" {
				extra[schemaFile] = []byte(tc.schema)
			}
			files := chartOf("web", extra)
			files[KindFile] = []byte(chartKindYAML)
			k, err := Compile("web", "configmap/ops/web", files)
			if err != nil {
				t.Fatal(err)
			}
			var rerr error
			start := time.Now()
			alloc := allocatedBy(func() {
				_, rerr = k.Children(context.Background(), render.Input{Object: webObject(tc.spec), Budget: tc.budget}, chart.Cluster{})
			})
			took := time.Since(start)
			t.Logf("%v, after %s, %.1f MiB allocated", rerr, took.Round(time.Millisecond), float64(alloc)/(1<<20))
			var be *render.BudgetError
			switch {
			case rerr == nil:
				t.Fatalf("rendered, want it stopped: %s", tc.want)
			case strings.Contains(tc.want, " "):
				if !strings.Contains(rerr.Error(), tc.want) {
					t.Fatalf("got %v, want %q", rerr, tc.want)
				}
			case !errors.As(rerr, &be) || be.Budget != tc.want:
				t.Fatalf("got %v, want the %s budget's error", rerr, tc.want)
			}
			b := tc.budget.WithDefaults()
			if limit := b.Timeout + 500*time.Millisecond; took > limit {
				t.Errorf("stopped after %s, want within %s", took, limit)
			}
			if limit := 4*b.MaxOutputBytes + 16<<20; b.MaxOutputBytes < 1<<30 && alloc > limit {
				t.Errorf("allocated %.1f MiB, want at most %.1f", float64(alloc)/(1<<20), float64(limit)/(1<<20))
			}
		})
	}
}

// exponentialSchema applies each level's schema twice to the same value,
// depth levels deep: 2^depth evaluations.
func exponentialSchema(depth int) string {
	var defs []string
	for i := range depth {
		defs = append(defs, fmt.Sprintf(`"l%d": {"allOf": [{"$ref": "#/$defs/l%d"}, {"$ref": "#/$defs/l%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"l%d": {"type": "object"}`, depth))
	return `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/l0", "$defs": {` + strings.Join(defs, ", ") + `}}`
}
