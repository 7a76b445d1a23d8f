package safety

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// The tests of this file deliver Helm charts as ConfigMap folders to the
// operator binary (run --configmap-selector), as whoever may write a
// labelled ConfigMap in the operator's namespace can: what such a folder
// makes the operator fetch, unpack or compile is what they measure.

const chartFolderLabel = "safety.tmplop.io/chart-folder"

var (
	procGoodChart  = procKind{safetyGVR("goodcharts"), "GoodChart"}
	procSchemaHTTP = procKind{safetyGVR("schemafetches"), "SchemaFetch"}
	procSchemaFile = procKind{safetyGVR("schemaleaks"), "SchemaLeak"}
)

// chartFiles is a chart of one ConfigMap child, named as the release,
// whose data.value is .Values.value, with the extra files.
func chartFiles(name string, extra map[string][]byte) map[string][]byte {
	files := map[string][]byte{
		"Chart.yaml":  []byte("apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"),
		"values.yaml": []byte("value: default\n"),
		"templates/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"data:\n  value: {{ .Values.value | quote }}\n"),
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// tgz packages files as helm package does, under the folder name; it is
// written here rather than with the engine's chart.Pack so that the test
// builds its archives the same way whatever the engine does.
func tgz(t *testing.T, name string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: path.Join(name, n), Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chartFolder is the ConfigMap of a chart kind folder in namespace:
// kind.yaml for kind, and the chart packaged.
func chartFolder(t *testing.T, namespace, name string, kind procKind, kindExtra string, archive []byte) *corev1.ConfigMap {
	t.Helper()
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{chartFolderLabel: "true"}},
		Data:       map[string]string{"kind.yaml": "apiVersion: safety.tmplop.io/v1\nkind: " + kind.kind + "\n" + kindExtra},
		BinaryData: map[string][]byte{name + "-0.1.0.tgz": archive},
	}
}

// waitLogLine waits for a line of the operator's output that holds every
// fragment.
func waitLogLine(t *testing.T, op *harness.Operator, fragments ...string) {
	t.Helper()
	cluster.Eventually(t, 60*time.Second, fmt.Sprintf("operator logs a line with %q", fragments), func(context.Context) (bool, error) {
		procAlive(t, op, "while waiting for its log")
		for line := range strings.Lines(op.Output()) {
			ok := true
			for _, f := range fragments {
				ok = ok && strings.Contains(line, f)
			}
			if ok {
				return true, nil
			}
		}
		return false, nil
	})
}

// startChartOperator runs the operator binary on the chart folders of
// namespace, with a field manager of its own.
func startChartOperator(t *testing.T, fieldManager, namespace string, extra ...string) *harness.Operator {
	t.Helper()
	bin, err := harness.BuildOperator(env.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run",
		"--kubeconfig", env.Kubeconfig,
		"--field-manager", fieldManager,
		"--state-namespace", namespace,
		"--configmap-selector", chartFolderLabel + "=true",
	}, extra...)
	return harness.StartOperator(t, bin, args...)
}

// createFolders creates the ConfigMaps.
func createFolders(t *testing.T, cms ...*corev1.ConfigMap) {
	t.Helper()
	for _, cm := range cms {
		if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// folderEvent waits for an Event of reason on the folder's ConfigMap
// whose message holds every fragment, and returns the message.
func folderEvent(t *testing.T, namespace, name, reason string, fragments ...string) string {
	t.Helper()
	var message string
	cluster.Eventually(t, 60*time.Second, fmt.Sprintf("Event %s on ConfigMap %s with %q", reason, name, fragments), func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=ConfigMap,involvedObject.name=" + name})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason != reason {
				continue
			}
			ok := true
			for _, f := range fragments {
				ok = ok && strings.Contains(e.Message, f)
			}
			if ok {
				message = e.Message
				return true, nil
			}
		}
		return false, fmt.Errorf("events: %q", seen)
	})
	return message
}

// TestChartSchemaFetchesNothing: a ConfigMap folder's chart whose
// values.schema.json refers to an HTTP server, or to a file of the
// operator's machine, is refused when the folder loads, with an Event
// naming values.schema.json and the line; the server gets no request,
// the file's content reaches no object, and a chart folder beside them
// serves its kind. Helm's validation fetched the reference at every
// render, from the operator's network position, and told what it found.
func TestChartSchemaFetchesNothing(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		t.Logf("the server got %s %s", r.Method, r.URL)
		_, _ = w.Write([]byte(`{"const": "from-the-metadata-server"}`))
	}))
	defer srv.Close()
	secret := filepath.Join(t.TempDir(), "token.json")
	if err := os.WriteFile(secret, []byte(`{"const": "s3cr3t-value-42"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := func(ref string) []byte {
		return []byte("{\n  \"type\": \"object\",\n  \"properties\": {\n    \"value\": {\"$ref\": \"" + ref + "\"}\n  }\n}\n")
	}
	state, ns := env.Namespace(t), env.Namespace(t)
	createFolders(t,
		chartFolder(t, state, "schema-http", procSchemaHTTP, "", tgz(t, "fetch", chartFiles("fetch", map[string][]byte{"values.schema.json": schema(srv.URL + "/latest/meta-data")}))),
		chartFolder(t, state, "schema-file", procSchemaFile, "", tgz(t, "leak", chartFiles("leak", map[string][]byte{"values.schema.json": schema("file://" + secret)}))),
		chartFolder(t, state, "good-chart", procGoodChart, "", tgz(t, "good", chartFiles("good", nil))),
	)
	op := startChartOperator(t, "safety-chartschema", state)
	procWaitServing(t, op, 1)
	for _, k := range []procKind{procSchemaHTTP, procSchemaFile, procGoodChart} {
		env.CreateSpec(t, k.res, k.kind, ns, "o", map[string]any{"value": "given"})
	}
	cluster.Eventually(t, 30*time.Second, "the good chart's object converges", func(ctx context.Context) (bool, error) {
		return true, procConverged(ctx, procGoodChart.res, ns, "o", "value", "given")
	})
	// Time for a served kind to render its object, had it been served.
	time.Sleep(3 * time.Second)
	procAlive(t, op, "after the folders were refused")
	if n := requests.Load(); n != 0 {
		t.Errorf("the server got %d requests from the operator, want 0", n)
	}
	for _, k := range []procKind{procSchemaHTTP, procSchemaFile} {
		o, err := env.Get(t.Context(), k.res, ns, "o")
		if err != nil {
			t.Fatal(err)
		}
		status := fmt.Sprint(o.Object["status"])
		if strings.Contains(status, "s3cr3t") || strings.Contains(status, "from-the-metadata-server") {
			t.Errorf("%s o: the status tells what the schema's reference holds: %s", k.kind, status)
		}
		if o.Object["status"] != nil {
			t.Errorf("%s o: a status %s, want none: its folder is refused", k.kind, status)
		}
	}
	msg := folderEvent(t, state, "schema-http", "KindFolderInvalid", "values.schema.json:4: $ref names "+srv.URL+"/latest/meta-data, outside the schema")
	t.Logf("schema-http: %s", msg)
	msg = folderEvent(t, state, "schema-file", "KindFolderInvalid", "values.schema.json:4: $ref names file://"+secret)
	t.Logf("schema-file: %s", msg)
	if strings.Contains(msg, "s3cr3t") {
		t.Errorf("the Event tells the file's content: %s", msg)
	}
}

// TestChartArchiveBombFolders: ConfigMap folders whose packaged charts
// unpack to 95 MiB (within Helm's 100 MiB), to 95 MiB in a subchart
// archive beside 10 MiB (Helm's limit counted again for the nested
// archive), and a third whose ServiceAccount does not agree to serve its
// kind, cost the operator little memory: the first two are refused while
// unpacking, with an Event naming the archive and --chart-max-unpacked,
// the third IdentityRefused before anything of it is unpacked. A chart
// folder beside them serves its kind; the reloads that follow compile
// nothing again; and a restart, which loads every folder anew, stays as
// small. Before: 37 MiB at rest became 836 MiB, past the Deployment's
// limit, and again at every start.
func TestChartArchiveBombFolders(t *testing.T) {
	const (
		// Measured: a peak of 67 to 81 MiB over three runs (before: 665 MiB
		// once the folders loaded, 1.6 GiB after four reloads). The count
		// an archive unpacks against is 16 MiB; the rest is the process
		// and the collector's slack.
		maxRSS     = 128 << 20
		reloads    = 4 * time.Second
		reloadsCPU = 400 * time.Millisecond
	)
	zeros := func(n int) map[string][]byte {
		out := map[string][]byte{}
		for i := range n {
			out[fmt.Sprintf("files/zeros-%02d.bin", i)] = make([]byte, 5<<20) // Helm's limit of one file
		}
		return out
	}
	nested := zeros(2)
	nested["charts/sub-0.1.0.tgz"] = tgz(t, "sub", chartFiles("sub", zeros(19)))
	flat := tgz(t, "flat", chartFiles("flat", zeros(19)))
	deep := tgz(t, "deep", chartFiles("deep", nested))
	refused := tgz(t, "refused", chartFiles("refused", zeros(19)))
	t.Logf("archives: %d, %d and %d bytes", len(flat), len(deep), len(refused))

	state, ns := env.Namespace(t), env.Namespace(t)
	createFolders(t,
		chartFolder(t, state, "bomb-flat", procKind{kind: "BombFlat"}, "", flat),
		chartFolder(t, state, "bomb-nested", procKind{kind: "BombNested"}, "", deep),
		chartFolder(t, state, "bomb-refused", procKind{kind: "BombRefused"}, "serviceAccountName: nobody\n", refused),
		chartFolder(t, state, "good-chart", procGoodChart, "", tgz(t, "good", chartFiles("good", nil))),
	)
	// What the operator logs of each folder, once per run: the Events of
	// a second run add to the first's, which they repeat.
	flatErr := "bomb-flat-0.1.0.tgz: files/zeros-03.bin: the chart unpacks to more than 16777216 bytes"
	nestedErr := "bomb-nested-0.1.0.tgz: charts/sub-0.1.0.tgz: files/zeros-01.bin: the chart unpacks to more than 16777216 bytes"
	refusedErr := "ServiceAccount " + state + "/nobody is not the identity of kind BombRefused.safety.tmplop.io: it does not exist"
	refusals := func(op *harness.Operator) {
		t.Helper()
		waitLogLine(t, op, "Kind folder skipped", `folder="configmap/`+state+`/bomb-flat"`, flatErr)
		waitLogLine(t, op, "Kind folder skipped", `folder="configmap/`+state+`/bomb-nested"`, nestedErr)
		waitLogLine(t, op, "Kind folder refused: its ServiceAccount does not agree", `folder="configmap/`+state+`/bomb-refused"`, refusedErr)
	}
	// The peak once the good kind serves and its object converged: every
	// folder was loaded before the first kind started.
	peak := func(op *harness.Operator, step string) {
		t.Helper()
		rss, err := op.PeakRSS()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: operator peak RSS %.1f MiB", step, float64(rss)/(1<<20))
		if rss >= maxRSS {
			t.Errorf("%s: operator peak RSS %.1f MiB, want under %d MiB", step, float64(rss)/(1<<20), maxRSS>>20)
		}
	}

	op := startChartOperator(t, "safety-chartbombs", state, "--reload-interval", "1s")
	procWaitServing(t, op, 1)
	env.CreateSpec(t, procGoodChart.res, procGoodChart.kind, ns, "o", map[string]any{"value": "first"})
	cluster.Eventually(t, 30*time.Second, "the good chart's object converges beside the bombs", func(ctx context.Context) (bool, error) {
		return true, procConverged(ctx, procGoodChart.res, ns, "o", "value", "first")
	})
	peak(op, "first run")
	// Reloads every second: the unchanged folders are not compiled again.
	before, err := op.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(reloads)
	after, err := op.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator CPU over %s of reloads every second: %s", reloads, after-before)
	if after-before > reloadsCPU {
		t.Errorf("operator used %s of CPU over %s of reloads of unchanged folders, want under %s: they were compiled again", after-before, reloads, reloadsCPU)
	}
	peak(op, "first run, after the reloads")
	refusals(op)
	t.Logf("bomb-flat: %s", folderEvent(t, state, "bomb-flat", "KindFolderInvalid", flatErr, "--chart-max-unpacked"))
	t.Logf("bomb-nested: %s", folderEvent(t, state, "bomb-nested", "KindFolderInvalid", nestedErr))
	t.Logf("bomb-refused: %s", folderEvent(t, state, "bomb-refused", "IdentityRefused", refusedErr))
	procStop(t, op, 20*time.Second)

	// A restart loads every folder anew.
	op = startChartOperator(t, "safety-chartbombs", state, "--reload-interval", "1s")
	procWaitServing(t, op, 1)
	env.Patch(t, procGoodChart.res, ns, "o", `{"spec":{"value":"second"}}`)
	cluster.Eventually(t, 30*time.Second, "the good chart's object converges after the restart", func(ctx context.Context) (bool, error) {
		return true, procConverged(ctx, procGoodChart.res, ns, "o", "value", "second")
	})
	peak(op, "after a restart")
	refusals(op)
}
