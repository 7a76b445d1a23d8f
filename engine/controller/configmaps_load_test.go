package controller

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/layout"
)

// widgetConfigMap is widgetFolder as a labelled ConfigMap of ops at
// resourceVersion rv, kind.yaml with extra lines.
func widgetConfigMap(name, rv, extraKind string) *unstructured.Unstructured {
	data := map[string]any{}
	for k, v := range widgetFolder {
		data[k] = string(v)
	}
	data[layout.KindFile] = string(widgetFolder[layout.KindFile]) + extraKind
	cm := folderConfigMap("ops", name, map[string]any{"folder": "true"}, data)
	cm.SetResourceVersion(rv)
	return cm
}

// TestConfigMapFoldersCompileOnce: a ConfigMap's folder is compiled once
// per resourceVersion: a reload or a resync that finds it unchanged
// serves the Kind compiled before; a change compiles it again; a
// ConfigMap deleted is forgotten.
func TestConfigMapFoldersCompileOnce(t *testing.T) {
	f := newFakeCluster(t, widgetConfigMap("widget", "1", ""))
	m, ctx := newTestManager(t, f, Options{})
	c := NewConfigMapFolders(m, "ops", "folder=true", nil)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	load := func() *catalog.Kind {
		t.Helper()
		kinds, skipped, err := c.Load(Loading{})
		if err != nil || len(skipped) != 0 || len(kinds) != 1 {
			t.Fatalf("kinds %v, skipped %v, %v", kinds, skipped, err)
		}
		return kinds[0]
	}
	first := load()
	if again := load(); again != first {
		t.Error("an unchanged ConfigMap was compiled again")
	}
	changed := widgetConfigMap("widget", "2", "workers: 3\n")
	if err := f.dyn.Tracker().Update(configMapsGVR, changed, "ops"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the changed folder compiled again", func() bool {
		k := load()
		return k != first && k.Spec.Workers == 3
	})
	if err := f.dyn.Tracker().Delete(configMapsGVR, "ops", "widget"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted folder forgotten", func() bool {
		kinds, _, _ := c.Load(Loading{})
		c.loadMu.Lock()
		defer c.loadMu.Unlock()
		return len(kinds) == 0 && len(c.compiled) == 0
	})
}

// TestConfigMapFoldersAdmitBeforeCompile: a folder whose kind.yaml
// Loading.Admit refuses is refused with Admit's error, uncompiled: its
// chart, which compiling would refuse for its size, is never unpacked.
// Admitted later, with the ConfigMap unchanged, it is compiled then.
func TestConfigMapFoldersAdmitBeforeCompile(t *testing.T) {
	archive, err := chart.Pack("web", layout.Files{
		"Chart.yaml":        []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"),
		"files/big.bin":     make([]byte, 64<<10),
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := folderConfigMap("ops", "web", map[string]any{"folder": "true"},
		map[string]any{layout.KindFile: "apiVersion: e.io/v1\nkind: Web\nserviceAccountName: team-a\n"})
	cm.Object["binaryData"] = map[string]any{"web-0.1.0.tgz": base64.StdEncoding.EncodeToString(archive)}
	f := newFakeCluster(t, cm)
	m, ctx := newTestManager(t, f, Options{})
	c := NewConfigMapFolders(m, "ops", "folder=true", nil)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	small := catalog.Limits{MaxUnpacked: 16 << 10} // the chart unpacks to more
	refuse := errors.New("team-a does not agree")
	var asked []string
	cases := []struct {
		name  string
		admit func(*catalog.Spec) error
		want  string
	}{
		{name: "refused", admit: func(s *catalog.Spec) error { asked = append(asked, s.ServiceAccountName); return refuse }, want: refuse.Error()},
		{name: "admitted", admit: func(*catalog.Spec) error { return nil }, want: "web-0.1.0.tgz: files/big.bin: the chart unpacks to more than 16384 bytes"},
		{name: "no admission asked", want: "the chart unpacks to more than 16384 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kinds, skipped, err := c.Load(Loading{Limits: small, Admit: tc.admit})
			if err != nil || len(kinds) != 0 || len(skipped) != 1 {
				t.Fatalf("kinds %v, skipped %v, %v", kinds, skipped, err)
			}
			if got := skipped[0].Err.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if len(asked) != 1 || asked[0] != "team-a" {
		t.Errorf("Admit was asked about %v, want team-a once", asked)
	}
}

// TestWithdrawnAgreementStopsConfigMapKind: a ConfigMap folder's kind
// runs as the ServiceAccount that agrees to serve it; once the account
// withdraws, the next sync refuses the folder before compiling it, and
// stops the kind that runs as that account, with an IdentityRefused Event.
func TestWithdrawnAgreementStopsConfigMapKind(t *testing.T) {
	f := newFakeCluster(t, widgetConfigMap("widget", "1", "serviceAccountName: team-a\n"))
	m, ctx := newTestManager(t, f, Options{})
	accounts := f.core.ServiceAccounts("ops")
	sa, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "ops",
		Annotations: map[string]string{AnnotationServes: "Widget.e.io"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(10)
	c := NewConfigMapFolders(m, "ops", "folder=true", recorder)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncFolders(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := m.Kinds(); len(got) != 1 {
		t.Fatalf("serving %v, want Widget", got)
	}
	sa.Annotations = nil
	if _, err := accounts.Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncFolders(klog.NewContext(ctx, klog.Background()), c); err != nil {
		t.Fatal(err)
	}
	if got := m.Kinds(); len(got) != 0 {
		t.Errorf("serving %v after the agreement was withdrawn, want nothing", got)
	}
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	if !strings.Contains(strings.Join(events, "\n"), ReasonIdentityRefused) {
		t.Errorf("events %q, want one %s", events, ReasonIdentityRefused)
	}
}

// TestRefused: a folder refused because its account does not agree
// ends the version of the kind it serves when that runs as the same
// account, keeps it serving when it runs as another, and leaves alone a
// kind another folder serves.
func TestRefused(t *testing.T) {
	gk := schema.GroupKind{Group: "e.io", Kind: "Widget"}
	running := func(dir, account string) *kindController {
		k := folderOf(dir, "e.io", "Widget")
		k.Spec.ServiceAccountName = account
		return &kindController{kind: k, identity: identity{account: account, how: byKindYAML}}
	}
	cases := []struct {
		name            string
		running         *kindController
		keep, withdrawn bool
	}{
		{name: "same folder, same account: withdrawn", running: running("configmap/ops/w", "team-a"), withdrawn: true},
		{name: "same folder, another account: the last good version serves", running: running("configmap/ops/w", "team-b"), keep: true},
		{name: "another folder's kind: left alone", running: running("configmap/ops/other", "team-a")},
		{name: "not running", running: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manager{reported: map[string]string{}}
			r := &syncRound{m: m, log: klog.Background(), folders: &folders{from: map[string]Folders{}},
				running: map[schema.GroupKind]*kindController{}, keep: map[schema.GroupKind]bool{}, stopWhy: map[schema.GroupKind]string{}}
			if tc.running != nil {
				r.running[gk] = tc.running
			}
			r.refused("configmap/ops/w", gk, "team-a", errors.New("does not agree"))
			if withdrawn := r.stopWhy[gk] != ""; r.keep[gk] != tc.keep || withdrawn != tc.withdrawn {
				t.Errorf("keep %v, stopping %q; want keep %v, withdrawn %v", r.keep[gk], r.stopWhy[gk], tc.keep, tc.withdrawn)
			}
			if m.reported["configmap/ops/w"] != "does not agree" {
				t.Errorf("not reported: %v", m.reported)
			}
		})
	}
}
