package revision

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/layout"
)

// TestVerified: a record is rendered again only when its files are the
// folder its fingerprint and its name say, kept by this manager.
func TestVerified(t *testing.T) {
	gr := schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}
	files := layout.Files{"kind.yaml": []byte("apiVersion: cache.example.com/v1\nkind: Memcached\n"), "a.yaml": []byte("a: 1\n")}
	fp := files.Fingerprint()
	name, err := Name(gr, "op", fp)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Encode(layout.Files{"kind.yaml": files["kind.yaml"], "a.yaml": []byte("a: 2\n")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(r *appsv1.ControllerRevision)
		manager string
		wantErr string
	}{
		{name: "as written", manager: "op"},
		{name: "files edited by hand", manager: "op", edit: func(r *appsv1.ControllerRevision) { r.Data = runtime.RawExtension{Raw: other} }, wantErr: "fingerprint"},
		{name: "fingerprint annotation edited with them", manager: "op", edit: func(r *appsv1.ControllerRevision) {
			r.Data = runtime.RawExtension{Raw: other}
			r.Annotations[AnnotationFingerprint] = layout.Files{"kind.yaml": files["kind.yaml"], "a.yaml": []byte("a: 2\n")}.Fingerprint()
		}, wantErr: "not the name"},
		{name: "another manager's record", manager: "someone-else", wantErr: "not the name"},
		{name: "files omitted", manager: "op", edit: func(r *appsv1.ControllerRevision) { r.Annotations[AnnotationFiles] = "omitted" }, wantErr: "holds no files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record("ns", name, "op", gr, fp, 1, data)
			if tc.edit != nil {
				tc.edit(r)
			}
			got, err := Verified(r, gr, tc.manager)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Fingerprint() != fp {
					t.Errorf("files of fingerprint %s, want %s", got.Fingerprint(), fp)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}
