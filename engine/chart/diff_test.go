package chart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/internal/testsupport/fakelookup"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// The differential test of issue 22: for a chart, values, a kube version
// and API versions, the children kind.Children renders (what `operator
// render` prints before adoption adds owner references and labels) are
// the documents Helm's own engine renders, file by file, as `helm
// template --skip-tests` does it; the hooks Helm runs at install and
// upgrade are ours, and our apply order runs them by their weights.

const (
	releaseName      = "rel"
	releaseNamespace = "ns"
	kindAPIVersion   = "charts.test.tmplop.io/v1"
)

// diffCase is one render of a chart on both sides.
type diffCase struct {
	name string
	// chart makes a fresh folder holding the chart, which the test may
	// write kind.yaml into.
	chart func(t *testing.T) string
	// kindYAML is added to the kind.yaml written beside the chart.
	kindYAML string
	// values are given to both: to Helm as `helm template -f` reads them,
	// as the object's spec on our side, decoded as the API server returns
	// it.
	values string
	// kube and apis are the --kube-version and --api-versions flags of
	// `helm template` and of `operator render`: both sides get them as
	// those commands pass them on.
	kube string
	apis []string
	// upgrade renders an upgrade, revision 3: the object's generation 3
	// and a status observedGeneration (chart.Dots).
	upgrade bool
	// cluster, when not nil, are the objects lookup reads; nil renders
	// offline, as `helm template` does.
	cluster []map[string]any
	// knownDiff, when set, is a difference from Helm we keep, and why:
	// the case asserts that the outputs still differ, so that the day
	// they agree the case is made an equality.
	knownDiff string
	// wantErr, when set, is that both sides fail with this text in their
	// errors.
	wantErr string
	// wantFiles are templates that must render something on Helm's side,
	// so that the case tests what it says it does (a subchart enabled, a
	// hook rendered).
	wantFiles []string
}

func TestHelmDifferential(t *testing.T) {
	// Every API version Helm knows by default, and two more. helm
	// template adds its --api-versions to its defaults, operator render
	// gives chart.Cluster its own alone: with every version given, the two
	// sets are the same.
	allAPIs := append(slices.Clone([]string(chartutil.DefaultVersionSet)), "apps/v1/Deployment", "monitoring.coreos.com/v1")
	cases := []diffCase{
		{
			name:      "helm create/defaults",
			chart:     helmCreate,
			wantFiles: []string{"web/templates/deployment.yaml", "web/templates/serviceaccount.yaml"},
		},
		{
			name:  "helm create/ingress, autoscaling and httpRoute",
			chart: helmCreate,
			values: `
ingress:
  enabled: true
  className: nginx
  annotations:
    cert-manager.io/cluster-issuer: letsencrypt
  hosts:
    - host: web.example.com
      paths:
        - path: /
          pathType: Prefix
  tls:
    - secretName: web-tls
      hosts: [web.example.com]
autoscaling:
  enabled: true
  minReplicas: 2
  maxReplicas: 5
  targetCPUUtilizationPercentage: 70
  targetMemoryUtilizationPercentage: 80
httpRoute:
  enabled: true
  hostnames: [web.example.com]
podAnnotations:
  example.com/scrape: "true"
podSecurityContext: null
serviceAccount:
  name: runner
image:
  tag: "1.27"
`,
			kube:      "v1.31.1",
			apis:      allAPIs,
			wantFiles: []string{"web/templates/ingress.yaml", "web/templates/hpa.yaml", "web/templates/httproute.yaml"},
		},
		{
			name:  "parent/defaults",
			chart: testChart("parent"),
			wantFiles: []string{"parent/charts/api/templates/deployment.yaml", "parent/charts/worker/templates/deployment.yaml",
				"parent/charts/store/templates/pvc.yaml"},
		},
		{
			name:  "parent/values, cache on, storage off, more APIs",
			chart: testChart("parent"),
			// The nulls remove a default of the parent and one of the
			// worker alias only.
			values: `
labels:
  tier: null
  extra: "yes"
api:
  replicas: 3
worker:
  greeting: null
  replicas: 4
cache:
  enabled: true
  size: 128Mi
tags:
  storage: false
services:
  - name: grpc
    port: 9000
global:
  env: staging
`,
			kube:      "v1.30.2",
			apis:      allAPIs,
			wantFiles: []string{"parent/charts/cache/templates/configmap.yaml"},
		},
		{name: "parent/upgrade on an old cluster", chart: testChart("parent"), upgrade: true, kube: "v1.27.4"},
		{
			name:    "parent/owner removed: required fails",
			chart:   testChart("parent"),
			values:  "owner: null\n",
			wantErr: "parent: .Values.owner is required",
		},
		{
			name:    "parent/owner empty: required fails",
			chart:   testChart("parent"),
			values:  "owner: \"\"\n",
			wantErr: "parent: .Values.owner is required",
		},
		{
			name:  "hooks/install",
			chart: testChart("hooks"),
			wantFiles: []string{"hooks/templates/pre-install-first.yaml", "hooks/templates/pre-install-second.yaml",
				"hooks/templates/pre-upgrade-config.yaml", "hooks/templates/post-install.yaml"},
		},
		{name: "hooks/upgrade", chart: testChart("hooks"), upgrade: true, kube: "v1.25.0"},
		{
			name:      "lookup/secret and config maps",
			chart:     testChart("lookup"),
			kindYAML:  lookupKinds,
			cluster:   cluster(),
			wantFiles: []string{"lookup/templates/copies.yaml"},
		},
		{
			name:     "lookup/no such secret",
			chart:    testChart("lookup"),
			kindYAML: lookupKinds,
			values:   "secretName: absent\n",
			cluster:  cluster(),
		},
		{
			name:     "lookup/empty cluster",
			chart:    testChart("lookup"),
			kindYAML: lookupKinds,
			cluster:  []map[string]any{},
		},
		{
			name:     "lookup/empty cluster, a list's truth",
			chart:    testChart("lookup"),
			kindYAML: lookupKinds,
			values:   "listTruth: true\n",
			cluster:  []map[string]any{},
		},
		{name: "lookup/offline", chart: testChart("lookup"), kindYAML: lookupKinds},
		{name: "shadow/addon on", chart: testChart("shadow"), values: "addon:\n  enabled: true\n"},
		{name: "order/token given", chart: testChart("order"), values: "token: given\n"},
		{
			name:      "schema/valid values",
			chart:     testChart("schema"),
			values:    "replicas: 3\nstore:\n  size: 20Gi\n",
			wantFiles: []string{"schema/templates/deployment.yaml", "schema/charts/store/templates/pvc.yaml"},
		},
		{
			name:    "schema/the chart's schema refuses",
			chart:   testChart("schema"),
			values:  "mode: slow\n",
			wantErr: "values don't meet the specifications of the schema(s) in the following chart(s):\nschema:\n- at '/mode': value must be one of 'fast', 'safe'\n",
		},
		{
			name:    "schema/the subchart's schema refuses, under its alias",
			chart:   testChart("schema"),
			values:  "store:\n  size: big\n",
			wantErr: "in the following chart(s):\nstore:\n- at '/size': 'big' does not match pattern '^[0-9]+(Mi|Gi)$'\n",
		},
		{name: "schema/a disabled subchart's schema is not checked", chart: testChart("schema"), values: "store:\n  enabled: false\n  size: big\n"},

		// The differences found, each a case of its own (the commit
		// message and the report of issue 22 say where to fix them).

		// Helm refuses a chart whose Chart.yaml kubeVersion the cluster
		// does not meet (action's renderResources); chart.Dots does not
		// check it.
		{
			name:    "hooks/kubeVersion not met",
			chart:   testChart("hooks"),
			kube:    "v1.19.3",
			wantErr: "kubeVersion",
		},
		// Helm reads helm.sh/hook-weight with strconv.Atoi, untrimmed:
		// " 7" is weight 0; chart.stageOf trims it to 7.
		{
			name:   "hooks/weight with a space",
			chart:  testChart("hooks"),
			values: "spacedWeight: true\n",
		},
		// A disabled subchart's templates are not parsed by Helm, nor by
		// us (Chart.setFor): the disabled addon's define of shared.banner,
		// which would be parsed last, must not win over base's.
		{name: "shadow/addon off", chart: testChart("shadow")},
		// Helm executes the templates in its parse order (deepest first,
		// names descending) and they share .Values: z-writes.yaml sets a
		// value before a-reads.yaml reads it. Ours run in name order.
		{name: "order/token set by a template", chart: testChart("order")},
		// Values given as a file are float64 to Helm (toToml prints
		// 9090.0); our spec's whole numbers are int64 (9090).
		{
			name:      "parent/whole numbers given as values",
			chart:     testChart("parent"),
			knownDiff: "an object's whole numbers are int64, as the API server gives them and the Helm operator keeps them; a values file's are float64",
			values:    "settings:\n  port: 9090\n  db:\n    pool: 20\n",
		},
		// Offline, Helm's lookup returns an empty map for a list too; ours
		// an empty List object, which is true in an if.
		{
			name:      "lookup/offline, a list's truth",
			chart:     testChart("lookup"),
			knownDiff: "offline, a list lookup is an empty List, whose .items templates written for the engine range over; Helm gives an empty map",
			kindYAML:  lookupKinds,
			values:    "listTruth: true\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.chart(t)
			helm, helmErr := renderHelm(t, dir, tc)
			writeKind(t, dir, tc.kindYAML)
			ours, ourErr := renderOurs(t, dir, tc)
			if tc.wantErr != "" {
				if helmErr == nil || !strings.Contains(helmErr.Error(), tc.wantErr) {
					t.Errorf("Helm: got error %v, want one containing %q", helmErr, tc.wantErr)
				}
				if ourErr == nil || !strings.Contains(ourErr.Error(), tc.wantErr) {
					t.Errorf("ours: got error %v, want one containing %q", ourErr, tc.wantErr)
				}
				return
			}
			if helmErr != nil || ourErr != nil {
				t.Fatalf("want both to render:\nHelm: %v\nours: %v", helmErr, ourErr)
			}
			if len(helm.resources) == 0 {
				t.Fatal("Helm rendered no resources: the case compares nothing")
			}
			for _, f := range tc.wantFiles {
				if len(helm.resources[f]) == 0 && !slices.ContainsFunc(helm.hooks, func(h hookDoc) bool { return h.file == f }) {
					t.Errorf("Helm rendered nothing from %s", f)
				}
			}
			diffs := compare(helm, ours)
			if tc.knownDiff != "" {
				if len(diffs) == 0 {
					t.Errorf("the known difference (%s) is gone: make this case an equality", tc.knownDiff)
				}
				t.Logf("known difference, kept: %s: %v", tc.knownDiff, diffs)
				return
			}
			for _, d := range diffs {
				t.Error(d)
			}
		})
	}
}

// TestHelmDifferentialCanFail makes sure the comparison sees a difference
// when there is one: values that differ by one label, and an apply order
// that forgets the hooks' weights.
func TestHelmDifferentialCanFail(t *testing.T) {
	tc := diffCase{chart: testChart("parent"), values: "labels:\n  team: a\n"}
	dir := tc.chart(t)
	helm, err := renderHelm(t, dir, tc)
	if err != nil {
		t.Fatal(err)
	}
	writeKind(t, dir, "")
	tc.values = "labels:\n  team: b\n"
	ours, err := renderOurs(t, dir, tc)
	if err != nil {
		t.Fatal(err)
	}
	if diffs := compare(helm, ours); len(diffs) == 0 {
		t.Error("a value that differs between the two sides made no difference")
	}

	tc = diffCase{chart: testChart("hooks")}
	dir = tc.chart(t)
	if helm, err = renderHelm(t, dir, tc); err != nil {
		t.Fatal(err)
	}
	writeKind(t, dir, "")
	if ours, err = renderOurs(t, dir, tc); err != nil {
		t.Fatal(err)
	}
	if diffs := compare(helm, ours); len(diffs) != 0 {
		t.Fatalf("the same render differs: %v", diffs)
	}
	ours.dependsOn = nil
	if diffs := compare(helm, ours); len(diffs) == 0 {
		t.Error("an apply order without the hooks' weights made no difference")
	}
}

// helmCreate is `helm create web` in a new folder.
func helmCreate(t *testing.T) string {
	t.Helper()
	dir, err := chartutil.Create("web", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// testChart copies testdata/charts/name into a new folder; the parent's
// store subchart is packaged into its charts/ as a .tgz.
func testChart(name string) func(t *testing.T) string {
	return func(t *testing.T) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "charts", name))); err != nil {
			t.Fatal(err)
		}
		if name == "parent" {
			store, err := loader.LoadDir(filepath.Join("testdata", "subcharts", "store"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := chartutil.Save(store, filepath.Join(dir, "charts")); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
}

// lookupKinds is the lookup chart's kind.yaml declaration.
const lookupKinds = `lookups:
  - apiVersion: v1
    kind: Secret
  - apiVersion: v1
    kind: ConfigMap
`

// cluster are the objects the lookup cases read, as the API server
// returns them.
func cluster() []map[string]any {
	object := func(kind, namespace, name string, labels map[string]any, data map[string]any) map[string]any {
		md := map[string]any{"name": name, "namespace": namespace, "resourceVersion": "7", "uid": "uid-" + name}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md, "data": data}
	}
	return []map[string]any{
		object("Secret", releaseNamespace, "db-credentials", map[string]any{"app": "db"},
			map[string]any{"user": "YWRtaW4=", "password": "czNjcjN0"}),
		object("Secret", "other", "db-credentials", nil, map[string]any{"user": "b3RoZXI=", "password": "b3RoZXI="}),
		object("ConfigMap", releaseNamespace, "alpha", map[string]any{"tier": "front"}, map[string]any{"a": "1"}),
		object("ConfigMap", releaseNamespace, "beta", nil, map[string]any{"b": "2", "c": "three"}),
		object("ConfigMap", "other", "gamma", nil, map[string]any{"g": "3"}),
	}
}

// writeKind puts kind.yaml beside the chart, after Helm has read it: the
// kind folder's own file is none of the chart's (.Files leaves it out).
func writeKind(t *testing.T, dir, extra string) {
	t.Helper()
	kind := strings.ToUpper(filepath.Base(dir)[:1]) + filepath.Base(dir)[1:]
	data := fmt.Sprintf("apiVersion: %s\nkind: %s\n%s", kindAPIVersion, kind, extra)
	if err := os.WriteFile(filepath.Join(dir, catalog.KindFile), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rendering is one side's render, as the comparison reads it. Documents
// are canonical YAML: decoded, through JSON, and encoded again.
type rendering struct {
	// resources are, by template file, the documents that are no hooks,
	// in the file's order.
	resources map[string][]string
	// hooks are the hooks applied at install and upgrade.
	hooks []hookDoc
	// Ours only: each document's apply group (render.Manifest.Template)
	// and the groups' order (catalog.Rendered.DependsOn).
	groups    map[string][]fileDoc
	dependsOn map[string][]string
}

type fileDoc struct{ file, doc string }

// hookDoc is a hook: its file and document, and, on Helm's side, when
// Helm runs it.
type hookDoc struct {
	fileDoc
	stage stage
}

// stage orders what is applied: pre hooks by weight, the resources, post
// hooks by weight.
type stage struct{ phase, weight int }

const (
	prePhase = iota
	resourcePhase
	postPhase
)

func (s stage) less(o stage) bool {
	return s.phase < o.phase || s.phase == o.phase && s.weight < o.weight
}

func (s stage) String() string {
	switch s.phase {
	case prePhase:
		return fmt.Sprintf("pre hook, weight %d", s.weight)
	case postPhase:
		return fmt.Sprintf("post hook, weight %d", s.weight)
	}
	return "resources"
}

// helmCaps are the capabilities `helm template --kube-version
// --api-versions` renders with (action.Install, ClientOnly): Helm's
// defaults, the flags' API versions added to them.
func helmCaps(t *testing.T, tc diffCase) *chartutil.Capabilities {
	t.Helper()
	caps := chartutil.DefaultCapabilities.Copy()
	if tc.kube != "" {
		kv, err := chartutil.ParseKubeVersion(tc.kube)
		if err != nil {
			t.Fatal(err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, tc.apis...)
	return caps
}

// renderHelm renders the chart in dir as `helm template --skip-tests`
// does (action.Install's client-only dry run and renderResources), with a
// cluster of tc.cluster for lookup when it is set.
func renderHelm(t *testing.T, dir string, tc diffCase) (*rendering, error) {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatalf("Helm: %v", err)
	}
	vals, err := chartutil.ReadValues([]byte(tc.values))
	if err != nil {
		t.Fatalf("Helm: values: %v", err)
	}
	caps := helmCaps(t, tc)
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, err
	}
	revision := 1
	if tc.upgrade {
		revision = 3
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNamespace,
		Revision: revision, IsInstall: !tc.upgrade, IsUpgrade: tc.upgrade}, caps)
	if err != nil {
		return nil, err
	}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	var files map[string]string
	if tc.cluster != nil {
		files, err = engine.RenderWithClientProvider(ch, top, fakeClients(tc.cluster))
	} else {
		files, err = engine.Render(ch, top)
	}
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}

	// A hook is created from its manifest as SortManifests left it
	// (trimmed); the resources are applied, and printed, as
	// renderResources writes them, a newline after each.
	out := &rendering{resources: map[string][]string{}}
	for _, h := range hooks {
		st, ok := hookStage(h)
		if !ok {
			continue
		}
		if doc := canonical(t, []byte(h.Manifest)); doc != "" {
			out.hooks = append(out.hooks, hookDoc{fileDoc{h.Path, doc}, st})
		}
	}
	// The resources in each file's order (SortManifests orders them by
	// kind, across files), split by SortManifests' own splitter; a
	// document with a hook annotation is a hook, or skipped by Helm for
	// an unknown one.
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		entries := releaseutil.SplitManifests(files[name])
		keys := slices.Collect(maps.Keys(entries))
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			doc := canonical(t, []byte(entries[k]+"\n"))
			if doc == "" || isHook(t, doc) {
				continue
			}
			out.resources[name] = append(out.resources[name], doc)
		}
	}
	// They are what SortManifests calls manifests, no more, no less.
	var fromSort, fromFiles []string
	for _, m := range manifests {
		if doc := canonical(t, []byte(m.Content+"\n")); doc != "" {
			fromSort = append(fromSort, m.Name+"\n"+doc)
		}
	}
	for name, docs := range out.resources {
		for _, doc := range docs {
			fromFiles = append(fromFiles, name+"\n"+doc)
		}
	}
	slices.Sort(fromSort)
	slices.Sort(fromFiles)
	if !slices.Equal(fromSort, fromFiles) {
		t.Fatalf("Helm: the resources read file by file are not SortManifests':\n%s", golden.Diff(strings.Join(fromSort, "\n"), strings.Join(fromFiles, "\n")))
	}
	return out, nil
}

// hookStage is when Helm runs a hook at install or upgrade; false for the
// hooks it runs at neither (test, delete, rollback), which `helm template
// --skip-tests` prints but the engine does not apply with the chart.
func hookStage(h *release.Hook) (stage, bool) {
	var isPre, isPost bool
	for _, e := range h.Events {
		switch e {
		case release.HookTest:
			return stage{}, false // --skip-tests
		case release.HookPreInstall, release.HookPreUpgrade:
			isPre = true
		case release.HookPostInstall, release.HookPostUpgrade:
			isPost = true
		}
	}
	switch {
	case isPre:
		return stage{prePhase, h.Weight}, true
	case isPost:
		return stage{postPhase, h.Weight}, true
	}
	return stage{}, false
}

// renderOurs loads the folder dir as a kind and renders its children for
// an object whose spec is tc.values, as `operator render` does before
// adoption.
func renderOurs(t *testing.T, dir string, tc diffCase) (*rendering, error) {
	t.Helper()
	kind, err := catalog.LoadKind(dir)
	if err != nil {
		t.Fatalf("ours: load: %v", err)
	}
	obj := object(t, kind, tc)
	in := render.Input{Object: obj}
	if tc.cluster != nil {
		in.Lookup = &fakelookup.Objects{Items: tc.cluster, Allow: func(apiVersion, k, namespace string) error {
			gk := schema.FromAPIVersionAndKind(apiVersion, k).GroupKind()
			_, _, err := kind.ResolveLookup(gk, true, namespace, releaseNamespace)
			return err
		}}
	}
	res, err := kind.Children(t.Context(), in, chart.Cluster{KubeVersion: tc.kube, APIVersions: tc.apis})
	if err != nil {
		return nil, err
	}
	out := &rendering{resources: map[string][]string{}, groups: map[string][]fileDoc{}, dependsOn: res.DependsOn}
	for _, m := range res.Manifests {
		data, err := json.Marshal(m.Object.Object)
		if err != nil {
			t.Fatal(err)
		}
		file, _, _ := strings.Cut(m.Template, " [")
		fd := fileDoc{file, canonical(t, data)}
		out.groups[m.Template] = append(out.groups[m.Template], fd)
		if _, ok := m.Object.GetAnnotations()[chart.HookAnnotation]; ok {
			out.hooks = append(out.hooks, hookDoc{fileDoc: fd})
			continue
		}
		out.resources[file] = append(out.resources[file], fd.doc)
	}
	return out, nil
}

// object is the custom resource rendered: tc.values as its spec, decoded
// from JSON as the API server returns it (whole numbers int64, nulls
// kept), generation 1, or 3 with a status for an upgrade.
func object(t *testing.T, kind *catalog.Kind, tc diffCase) map[string]any {
	t.Helper()
	spec, err := yaml.YAMLToJSON([]byte(tc.values))
	if err != nil {
		t.Fatal(err)
	}
	generation, status := 1, ""
	if tc.upgrade {
		generation, status = 3, `,"status":{"observedGeneration":2}`
	}
	data := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"namespace":%q,"generation":%d},"spec":%s%s}`,
		kind.Spec.APIVersion, kind.Spec.Kind, releaseName, releaseNamespace, generation, spec, status)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(data)); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// compare returns every difference between Helm's render and ours.
func compare(helm, ours *rendering) []string {
	var diffs []string
	files := map[string]bool{}
	for f := range helm.resources {
		files[f] = true
	}
	for f := range ours.resources {
		files[f] = true
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		want, got := strings.Join(helm.resources[f], "---\n"), strings.Join(ours.resources[f], "---\n")
		if want != got {
			diffs = append(diffs, fmt.Sprintf("%s: the documents differ (-Helm +ours):\n%s", f, golden.Diff(want, got)))
		}
	}

	// The hooks, as sets.
	key := func(h hookDoc) string { return h.file + "\n" + h.doc }
	helmStage := map[string]stage{}
	var want, got []string
	for _, h := range helm.hooks {
		helmStage[key(h)] = h.stage
		want = append(want, key(h))
	}
	for _, h := range ours.hooks {
		got = append(got, key(h))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		diffs = append(diffs, fmt.Sprintf("the hooks differ (-Helm +ours):\n%s", golden.Diff(strings.Join(want, "---\n"), strings.Join(got, "---\n"))))
	}

	// The apply order: each of our groups holds documents of one Helm
	// stage, which its name says when a file mixes stages, and a group
	// waits for exactly the groups of the stages before its own.
	stages := map[string]stage{}
	for _, g := range slices.Sorted(maps.Keys(ours.groups)) {
		var st *stage
		for _, fd := range ours.groups[g] {
			s, ok := helmStage[fd.file+"\n"+fd.doc]
			if !ok {
				s = stage{phase: resourcePhase}
			}
			if st != nil && *st != s {
				diffs = append(diffs, fmt.Sprintf("group %q: its documents are of Helm's stages %s and %s", g, *st, s))
			}
			st = &s
		}
		stages[g] = *st
		if _, suffix, ok := strings.Cut(g, " ["); ok && strings.TrimSuffix(suffix, "]") != st.String() {
			diffs = append(diffs, fmt.Sprintf("group %q: Helm's stage is %s", g, *st))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(stages)) {
		for _, d := range slices.Sorted(maps.Keys(stages)) {
			sg, sd := stages[g], stages[d]
			if g == d {
				continue
			}
			waits := slices.Contains(ours.dependsOn[g], d)
			if before := sd.less(sg); waits != before {
				diffs = append(diffs, fmt.Sprintf("%q (%s) waits for %q (%s): %t, Helm runs it before: %t", g, sg, d, sd, waits, before))
			}
		}
	}
	return diffs
}

// canonical is a document decoded as the API server would, encoded again
// with sorted keys; "" for an empty one.
func canonical(t *testing.T, doc []byte) string {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("decode %q: %v", doc, err)
	}
	if v == nil {
		return ""
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// isHook reports whether a canonical document has Helm's hook annotation.
func isHook(t *testing.T, doc string) bool {
	t.Helper()
	var head struct {
		Metadata struct {
			Annotations map[string]any `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		t.Fatal(err)
	}
	_, ok := head.Metadata.Annotations[release.HookAnnotation]
	return ok
}

// fakeClients serves objects to Helm's lookup as a dynamic client reads
// them from the API server: a Get of a missing object is NotFound, a List
// is a typed list (ConfigMapList) whose items carry their apiVersion and
// kind. Every kind is namespaced.
type fakeClients []map[string]any

func (f fakeClients) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	return &fakeResource{objects: f, apiVersion: apiVersion, kind: kind}, true, nil
}

// fakeResource is the dynamic client of one kind; only Namespace, Get and
// List, what lookup calls, are implemented.
type fakeResource struct {
	dynamic.NamespaceableResourceInterface
	objects                     []map[string]any
	apiVersion, kind, namespace string
}

func (r *fakeResource) Namespace(namespace string) dynamic.ResourceInterface {
	c := *r
	c.namespace = namespace
	return &c
}

func (r *fakeResource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	for _, obj := range r.matching() {
		if u := (&unstructured.Unstructured{Object: obj}); u.GetName() == name {
			return u, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(r.kind) + "s"}, name)
}

func (r *fakeResource) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	l := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": r.apiVersion, "kind": r.kind + "List", "metadata": map[string]any{"resourceVersion": "7"}}}
	for _, obj := range r.matching() {
		l.Items = append(l.Items, unstructured.Unstructured{Object: obj})
	}
	return l, nil
}

// matching are deep copies of the objects of the resource's kind in its
// namespace ("" for all).
func (r *fakeResource) matching() []map[string]any {
	var out []map[string]any
	for _, obj := range r.objects {
		u := unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == r.apiVersion && u.GetKind() == r.kind && (r.namespace == "" || u.GetNamespace() == r.namespace) {
			out = append(out, runtime.DeepCopyJSON(obj))
		}
	}
	return out
}
