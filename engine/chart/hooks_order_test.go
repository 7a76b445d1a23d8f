package chart

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/render"
)

func manifest(file, name string, ann map[string]string) render.Manifest {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetName(name)
	o.SetAnnotations(ann)
	return render.Manifest{Template: file, Object: o}
}

func hook(events, weight string) map[string]string {
	ann := map[string]string{HookAnnotation: events}
	if weight != "" {
		ann[HookWeightAnnotation] = weight
	}
	return ann
}

func TestOrder(t *testing.T) {
	cases := []struct {
		name      string
		in        []render.Manifest
		groups    []string // Template of each manifest kept, in order
		dependsOn map[string][]string
		deletes   []string
		posts     []string
	}{
		{
			name:   "no hooks: no order",
			in:     []render.Manifest{manifest("c/templates/a.yaml", "a", nil), manifest("c/templates/b.yaml", "b", nil)},
			groups: []string{"c/templates/a.yaml", "c/templates/b.yaml"},
		},
		{
			name: "pre hooks by weight, then resources, then post hooks",
			in: []render.Manifest{
				manifest("c/templates/deploy.yaml", "d", nil),
				manifest("c/templates/migrate.yaml", "m", hook("pre-install,pre-upgrade", "5")),
				manifest("c/templates/secret.yaml", "s", hook("pre-install", "-5")),
				manifest("c/templates/notify.yaml", "n", hook("post-install, post-upgrade", "")),
			},
			groups: []string{"c/templates/deploy.yaml", "c/templates/migrate.yaml", "c/templates/secret.yaml", "c/templates/notify.yaml"},
			dependsOn: map[string][]string{
				"c/templates/migrate.yaml": {"c/templates/secret.yaml"},
				"c/templates/deploy.yaml":  {"c/templates/migrate.yaml", "c/templates/secret.yaml"},
				"c/templates/notify.yaml":  {"c/templates/deploy.yaml", "c/templates/migrate.yaml", "c/templates/secret.yaml"},
			},
		},
		{
			name: "test, rollback and unknown hooks are not children; pre-delete and post-delete apart",
			in: []render.Manifest{
				manifest("c/templates/tests/t.yaml", "t", hook("test", "")),
				manifest("c/templates/rb.yaml", "rb", hook("pre-rollback", "")),
				manifest("c/templates/pd.yaml", "pd", hook("post-delete", "")),
				manifest("c/templates/odd.yaml", "odd", hook("pre-install,sometime", "")),
				manifest("c/templates/cleanup.yaml", "cleanup", hook("pre-delete", "")),
				manifest("c/templates/both.yaml", "both", hook("pre-delete, Post-Delete", "")),
				manifest("c/templates/oddpd.yaml", "oddpd", hook("post-delete,sometime", "")),
				manifest("c/templates/x.yaml", "x", nil),
			},
			groups:  []string{"c/templates/x.yaml"},
			deletes: []string{"cleanup", "both"},
			posts:   []string{"pd", "both"},
		},
		{
			name: "a post-delete hook that is also an install hook is a child too",
			in: []render.Manifest{
				manifest("c/templates/j.yaml", "j", hook("post-install,post-delete", "")),
			},
			groups: []string{"c/templates/j.yaml"},
			posts:  []string{"j"},
		},
		{
			name: "a file of several stages: one group per stage",
			in: []render.Manifest{
				manifest("c/templates/mixed.yaml", "job", hook("pre-upgrade", "1")),
				manifest("c/templates/mixed.yaml", "cm", nil),
			},
			groups:    []string{"c/templates/mixed.yaml [pre hook, weight 1]", "c/templates/mixed.yaml [resources]"},
			dependsOn: map[string][]string{"c/templates/mixed.yaml [resources]": {"c/templates/mixed.yaml [pre hook, weight 1]"}},
		},
		{
			name: "an unreadable weight is 0, as in Helm",
			in: []render.Manifest{
				manifest("c/templates/a.yaml", "a", hook("pre-install", "heavy")),
				manifest("c/templates/b.yaml", "b", hook("pre-install", "-1")),
			},
			groups:    []string{"c/templates/a.yaml", "c/templates/b.yaml"},
			dependsOn: map[string][]string{"c/templates/a.yaml": {"c/templates/b.yaml"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Order(tc.in)
			var groups []string
			for _, m := range o.Manifests {
				groups = append(groups, m.Template)
			}
			if !reflect.DeepEqual(groups, tc.groups) {
				t.Errorf("groups = %q, want %q", groups, tc.groups)
			}
			if !reflect.DeepEqual(o.DependsOn, tc.dependsOn) {
				t.Errorf("dependsOn = %v, want %v", o.DependsOn, tc.dependsOn)
			}
			var deletes []string
			for _, m := range o.DeleteHooks {
				deletes = append(deletes, m.Object.GetName())
			}
			if !reflect.DeepEqual(deletes, tc.deletes) {
				t.Errorf("delete hooks = %q, want %q", deletes, tc.deletes)
			}
			var posts []string
			for _, m := range o.PostDeleteHooks {
				posts = append(posts, m.Object.GetName())
			}
			if !reflect.DeepEqual(posts, tc.posts) {
				t.Errorf("post-delete hooks = %q, want %q", posts, tc.posts)
			}
		})
	}
}

func TestIsPostDeleteHook(t *testing.T) {
	for ann, want := range map[string]bool{
		"":                         false,
		"post-delete":              true,
		"pre-delete, post-delete":  true,
		"pre-delete":               false,
		"post-install":             false,
		"post-delete,someday":      false, // Helm skips the manifest
		" POST-DELETE ":            true,
		"post-install,post-delete": true,
	} {
		a := map[string]string{}
		if ann != "" {
			a[HookAnnotation] = ann
		}
		if got := IsPostDeleteHook(a); got != want {
			t.Errorf("IsPostDeleteHook(%q) = %v, want %v", ann, got, want)
		}
	}
}

// TestNeverApplied: what operator rbac may leave out agrees with Order,
// which applies a manifest at install and upgrade (Manifests) or at the
// deletion (DeleteHooks, PostDeleteHooks).
func TestNeverApplied(t *testing.T) {
	for events, want := range map[string]bool{
		"test":                 true,
		"test-success":         true,
		" Test ":               true,
		"test,test-success":    true,
		"pre-rollback":         true,
		"post-rollback,test":   true,
		"someday":              true, // Helm skips the manifest
		"test,pre-install":     false,
		"pre-install":          false,
		"post-upgrade":         false,
		"pre-delete":           false,
		"test,post-delete":     false,
		"pre-install,someday":  true, // an unknown name skips the whole manifest
		"post-install, test":   false,
		"pre-upgrade,rollback": true,
	} {
		if got := NeverApplied(events); got != want {
			t.Errorf("NeverApplied(%q) = %v, want %v", events, got, want)
		}
		o := Order([]render.Manifest{manifest("tests/pod.yaml", "p", hook(events, ""))})
		applied := len(o.Manifests)+len(o.DeleteHooks)+len(o.PostDeleteHooks) > 0
		if applied == NeverApplied(events) {
			t.Errorf("%q: Order applies it: %v, NeverApplied says %v", events, applied, NeverApplied(events))
		}
	}
}
