package rbac

import (
	"github.com/tmplop/operator/engine/catalog"

	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/webhook"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// moduleRoot is the repository's root, from this package's directory.
const moduleRoot = "../.."

// TestGolden generates the RBAC of each case and compares it with
// testdata/golden/<case>.yaml. Run `go test ./engine/rbac -run TestGolden
// -update` to rewrite them after an intended change, and review the diff.
//
// The cases run from the module's root, so that paths in the output read
// as they do in deploy/rbac.yaml.
func TestGolden(t *testing.T) {
	goldenDir, err := filepath.Abs("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	const data = "engine/rbac/testdata"
	cases := []struct {
		name string
		opts Options
	}{
		// The shipped folders, one at a time.
		{"appservice", Options{Templates: "templates/appservice", CRDs: []string{"crds"}}},
		{"at", Options{Templates: "templates/at", CRDs: []string{"crds"}}},
		{"helloworld", Options{Templates: "templates/helloworld", CRDs: []string{"crds"}}},
		{"memcached", Options{Templates: "templates/memcached", CRDs: []string{"crds"}}},
		{"mydaemonset", Options{Templates: "templates/mydaemonset", CRDs: []string{"crds"}}},
		// A folder with serviceAccountName, in another namespace and under
		// other names.
		{"identity", Options{Templates: data + "/folders/identity", CRDs: []string{data + "/crds"},
			Namespace: "platform", ServiceAccount: "tmplop", Name: "tmplop"}},
		// A chart with a test hook, a rollback hook and a pre-install
		// Job: no rights for the kinds of the hooks never applied.
		{"chart", Options{Templates: data + "/folders/chart", CRDs: []string{data + "/crds"}}},
		// Three folders: one served as the operator; two under one
		// ServiceAccount, one of them with computed kinds declared in
		// children, one a built-in kind.
		{"mixed", Options{Templates: data + "/roots/mixed", CRDs: []string{data + "/crds"}}},
		// The same under run --default-service-account: plain moves to
		// the default account, and the operator keeps its watches only.
		{"default-account", Options{Templates: data + "/roots/mixed", CRDs: []string{data + "/crds"}, DefaultServiceAccount: "operator-kinds"}},
		// operator plan's roles: reads only (a local diff), and with the
		// create and patch of its dry-run applies.
		{"plan", Options{Templates: "templates/memcached", CRDs: []string{"crds"}, Plan: true}},
		{"plan-dry-run", Options{Templates: data + "/roots/mixed", CRDs: []string{data + "/crds"}, PlanDryRun: true}},
	}
	t.Chdir(moduleRoot)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var warnings []string
			tc.opts.Warn = func(msg string) { warnings = append(warnings, msg) }
			got, err := Generate(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings: %q", warnings)
			}
			checkValid(t, got)
			compareGolden(t, filepath.Join(goldenDir, tc.name+".yaml"), got,
				"go test ./engine/rbac -run TestGolden -update")
		})
	}
}

// TestDeployRBAC checks that deploy/rbac.yaml is what `operator rbac`
// makes of templates/ and crds/ today, for the operator deploy/operator.yaml
// runs: its namespace, its ServiceAccount and the flags of its Deployment
// (--default-service-account, --field-manager). A change of either side
// alone fails here.
func TestDeployRBAC(t *testing.T) {
	t.Chdir(moduleRoot)
	opts := deployOptions(t)
	if opts.DefaultServiceAccount != DeployDefaultServiceAccount {
		t.Errorf("deploy/operator.yaml runs --default-service-account=%s, rbac.DeployDefaultServiceAccount is %s", opts.DefaultServiceAccount, DeployDefaultServiceAccount)
	}
	got, err := Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "deploy/rbac.yaml", got, "go run ./cmd/operator "+strings.TrimPrefix(opts.Command(), "operator ")+" > deploy/rbac.yaml")
}

// deployOptions are the Options of the operator deploy/operator.yaml runs.
func deployOptions(t *testing.T) Options {
	t.Helper()
	data, err := os.ReadFile("deploy/operator.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Templates: "templates", CRDs: []string{"crds"}}
	found := false
	webhookCertDir := ""
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatalf("deploy/operator.yaml: %v", err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		found = true
		opts.Namespace, opts.ServiceAccount = d.Namespace, d.Spec.Template.Spec.ServiceAccountName
		for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
			name, value, _ := strings.Cut(arg, "=")
			switch name {
			case "--default-service-account":
				opts.DefaultServiceAccount = value
			case "--field-manager":
				opts.FieldManager = value
			case "--webhook-bind-address":
				// The webhook keeps its certificate in a Secret unless it
				// is given one (--webhook-cert-dir, below).
				opts.Webhook = value != "" && value != "0"
			case "--webhook-cert-dir":
				webhookCertDir = value
			case "--state-namespace", "--namespace":
				t.Errorf("deploy/operator.yaml runs %s: deployOptions does not know how operator rbac follows it", arg)
			}
		}
	}
	if !found {
		t.Fatal("deploy/operator.yaml holds no Deployment")
	}
	if webhookCertDir != "" {
		opts.Webhook = false
	}
	return opts
}

// TestDeployLeastPrivilege checks what deploy/rbac.yaml must hold whatever
// the folders are, so that a regeneration with other options, or an edit,
// fails here: the default account, which every folder added later runs as,
// is bound to nothing; each shipped folder has an account of its own,
// which agrees to serve its kind alone and is bound to its role alone; the
// operator may impersonate exactly these accounts.
func TestDeployLeastPrivilege(t *testing.T) {
	t.Chdir(moduleRoot)
	opts := deployOptions(t)
	data, err := os.ReadFile("deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	serves := map[string]string{}  // account -> its annotation
	bound := map[string][]string{} // account -> the roles bound to it
	var impersonate []string
	for _, doc := range strings.Split(string(data), "\n---\n")[1:] {
		var u struct {
			Kind     string
			Metadata struct {
				Name, Namespace string
				Annotations     map[string]string
			}
			RoleRef  rbacv1.RoleRef
			Subjects []rbacv1.Subject
			Rules    []rbacv1.PolicyRule
		}
		if err := yaml.Unmarshal([]byte(doc), &u); err != nil {
			t.Fatalf("deploy/rbac.yaml: %v in\n%s", err, doc)
		}
		switch u.Kind {
		case "ServiceAccount":
			serves[u.Metadata.Name] = u.Metadata.Annotations[annotationServes]
		case "ClusterRoleBinding", "RoleBinding":
			for _, sub := range u.Subjects {
				if sub.Kind == rbacv1.ServiceAccountKind && sub.Namespace == opts.Namespace {
					bound[sub.Name] = append(bound[sub.Name], u.Kind+" "+u.RoleRef.Name)
				}
			}
		case "Role":
			for _, r := range u.Rules {
				if slices.Contains(r.Verbs, "impersonate") {
					impersonate = append(impersonate, r.ResourceNames...)
				}
			}
		}
	}
	def := opts.DefaultServiceAccount
	if def == "" {
		t.Fatal("deploy/operator.yaml runs no --default-service-account: every folder added later would run with the operator's rights")
	}
	if _, ok := serves[def]; !ok {
		t.Errorf("deploy/rbac.yaml holds no ServiceAccount %s (the default account)", def)
	}
	if got := bound[def]; len(got) > 0 {
		t.Errorf("the default account %s is bound to %q: every folder added later, by whoever may write a kind-folder ConfigMap, would have those rights", def, got)
	}
	if serves[def] != "" {
		t.Errorf("the default account %s agrees to serve %q: it must be no kind's account", def, serves[def])
	}
	kinds, err := catalog.LoadEvery(opts.Templates)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{def}
	accountOf := map[string]string{}
	for _, k := range kinds {
		f := &Folder{Kind: k}
		sa := k.Spec.ServiceAccountName
		if sa == "" {
			sa = opts.KindAccount(f)
		}
		want = append(want, sa)
		if other, ok := accountOf[sa]; ok {
			t.Errorf("folders %s and %s share the account %s: each has the other's rights", other, k.Name, sa)
		}
		accountOf[sa] = k.Name
		if got := serves[sa]; got != k.GVK.GroupKind().String() {
			t.Errorf("folder %s's account %s agrees to serve %q, want its kind %s alone", k.Name, sa, got, k.GVK.GroupKind())
		}
		if got := bound[sa]; !slices.Equal(got, []string{"ClusterRoleBinding " + opts.KindAccount(f)}) {
			t.Errorf("folder %s's account %s is bound to %q, want its own role %s alone", k.Name, sa, got, opts.KindAccount(f))
		}
	}
	slices.Sort(want)
	slices.Sort(impersonate)
	if !slices.Equal(impersonate, want) {
		t.Errorf("the operator may impersonate %q, want exactly the kinds' accounts and the default %q", impersonate, want)
	}
}

func compareGolden(t *testing.T, path string, got []byte, regenerate string) {
	t.Helper()
	if !golden.Check(t, path, got) {
		t.Logf("to regenerate %s, run:\n  %s\nand review the change", path, regenerate)
	}
}

// checkValid decodes every document as its kind, strictly, and checks that
// no rule holds a wildcard.
func checkValid(t *testing.T, stream []byte) {
	t.Helper()
	docs := strings.Split(string(stream), "\n---\n")
	for _, doc := range docs[1:] {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		var rules []rbacv1.PolicyRule
		switch tm.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			mustStrict(t, doc, &r)
			rules = r.Rules
		case "Role":
			var r rbacv1.Role
			mustStrict(t, doc, &r)
			rules = r.Rules
		case "ClusterRoleBinding", "RoleBinding", "ServiceAccount", "ConfigMap":
		default:
			t.Errorf("unexpected kind %q", tm.Kind)
		}
		for _, r := range rules {
			for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs, r.ResourceNames) {
				if strings.Contains(s, "*") {
					t.Errorf("wildcard in %+v", r)
				}
			}
			if len(r.APIGroups) != 1 || len(r.Resources) == 0 || len(r.Verbs) == 0 {
				t.Errorf("rule %+v", r)
			}
		}
	}
}

func mustStrict(t *testing.T, doc string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
		t.Fatalf("%v in\n%s", err, doc)
	}
}

// TestRolesOfIdentity checks the model on the mixed case: what moves from
// the operator to a kind's own account, and what stays.
func TestRolesOfIdentity(t *testing.T) {
	t.Chdir(moduleRoot)
	folders, res := analyzed(t, "engine/rbac/testdata/roots/mixed", "engine/rbac/testdata/crds")
	s := Objects(Options{}, folders, res)
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range s.Objects {
		switch r := o.Object.(type) {
		case *rbacv1.ClusterRole:
			roles["ClusterRole "+r.Name] = r.Rules
		case *rbacv1.Role:
			roles["Role "+r.Namespace+"/"+r.Name] = r.Rules
		}
	}
	// verbs are the verbs of every rule of role on the resource, by name
	// or not.
	verbs := func(role, group, resource string) string {
		var out []string
		for _, r := range roles[role] {
			if r.APIGroups[0] == group && slices.Contains(r.Resources, resource) {
				out = append(out, r.Verbs...)
			}
		}
		slices.Sort(out)
		return strings.Join(slices.Compact(out), " ")
	}
	checks := []struct{ role, group, resource, want string }{
		// plain is the operator's.
		{"ClusterRole operator", "example.com", "widgets", "get list patch watch"},
		{"ClusterRole operator", "example.com", "widgets/status", "get patch update"},
		{"ClusterRole operator", "", "configmaps", "create delete get list patch watch"},
		{"ClusterRole operator", "", "secrets", "get list watch"}, // plain's lookup and tenant's child watch
		// tenant's and team's children are watched by the operator, not written.
		{"ClusterRole operator", "networking.k8s.io", "networkpolicies", "get list watch"},
		{"ClusterRole operator", "", "resourcequotas", "get list watch"},
		{"ClusterRole operator", "example.com", "gadgetry", ""},
		{"ClusterRole operator", "", "namespaces", ""},
		// tenant's own role, with the kinds kind.yaml declares.
		{"ClusterRole operator-kind-tenant", "example.com", "gadgetry", "get list patch watch"},
		{"ClusterRole operator-kind-tenant", "example.com", "gadgetry/status", "get patch update"},
		{"ClusterRole operator-kind-tenant", "example.com", "gadgetry/finalizers", "update"},
		{"ClusterRole operator-kind-tenant", "", "secrets", "create delete get list patch watch"},
		{"ClusterRole operator-kind-tenant", "", "configmaps", "create delete get list patch watch"},
		{"ClusterRole operator-kind-tenant", "", "namespaces", "get list watch"},
		{"ClusterRole operator-kind-tenant", "example.com", "widgets", ""},
		// team serves a built-in kind: no status.
		{"ClusterRole operator-kind-team", "", "namespaces", "get list patch watch"},
		{"ClusterRole operator-kind-team", "", "namespaces/status", ""},
		{"ClusterRole operator-kind-team", "", "namespaces/finalizers", "update"},
		{"ClusterRole operator-kind-team", "", "resourcequotas", "create delete get list patch watch"},
		// The operator's namespace.
		{"Role operator-system/operator", "", "serviceaccounts", "get impersonate"},
		// Folders read; the inventory written by name only: no create.
		{"Role operator-system/operator", "", "configmaps", "get list patch watch"},
		{"Role operator-system/operator", "coordination.k8s.io", "leases", "create delete get list update watch"},
		// The revision records, and the rollout state patched on them.
		{"Role operator-system/operator", "apps", "controllerrevisions", "create delete list patch update watch"},
	}
	for _, c := range checks {
		if got := verbs(c.role, c.group, c.resource); got != c.want {
			t.Errorf("%s %s/%s: verbs %q, want %q", c.role, c.group, c.resource, got, c.want)
		}
	}
	for _, r := range roles["Role operator-system/operator"] {
		if (slices.Contains(r.Verbs, "impersonate") || r.Resources[0] == "serviceaccounts") && !slices.Equal(r.ResourceNames, []string{"gadget-writer"}) {
			t.Errorf("%v on ServiceAccounts %q, want exactly [gadget-writer]", r.Verbs, r.ResourceNames)
		}
		// Patched: the inventory by name, and the revision records (their
		// rollout state), whose names are the folders' fingerprints.
		if slices.Contains(r.Verbs, "patch") && !slices.Equal(r.ResourceNames, []string{"operator-inventory"}) && !slices.Equal(r.Resources, []string{"controllerrevisions"}) {
			t.Errorf("patch on %s %q, want only the inventory by name and the revision records", r.Resources, r.ResourceNames)
		}
	}
	var sas []string
	for _, o := range s.Objects {
		if sa, ok := o.Object.(*corev1.ServiceAccount); ok {
			sas = append(sas, sa.Namespace+"/"+sa.Name)
		}
	}
	if !slices.Equal(sas, []string{"operator-system/gadget-writer"}) {
		t.Errorf("ServiceAccounts %q, want only gadget-writer, shared by tenant and team", sas)
	}
}

// TestDefaultAccount: under run --default-service-account no folder runs
// with the operator's rights, nor with the default account's: plain,
// which names no account, gets one of its own that agrees to serve its
// kind and holds its rules; the default account is generated, impersonable
// and bound to nothing, so that a folder added later (which runs as it)
// can do nothing. The operator keeps the reads of its watches, and lists
// the accounts to find which agrees to serve a kind.
func TestDefaultAccount(t *testing.T) {
	t.Chdir(moduleRoot)
	folders, res := analyzed(t, "engine/rbac/testdata/roots/mixed", "engine/rbac/testdata/crds")
	s := Objects(Options{DefaultServiceAccount: "operator-kinds"}, folders, res)
	var operator, plain *rbacv1.ClusterRole
	var role *rbacv1.Role
	sas := map[string]*corev1.ServiceAccount{}
	bound := map[string][]string{} // account -> the roles bound to it
	for _, o := range s.Objects {
		switch r := o.Object.(type) {
		case *rbacv1.ClusterRole:
			switch r.Name {
			case "operator":
				operator = r
			case "operator-kind-plain":
				plain = r
			}
		case *rbacv1.Role:
			role = r
		case *rbacv1.ClusterRoleBinding:
			for _, sub := range r.Subjects {
				bound[sub.Name] = append(bound[sub.Name], r.RoleRef.Name)
			}
		case *rbacv1.RoleBinding:
			for _, sub := range r.Subjects {
				bound[sub.Name] = append(bound[sub.Name], r.RoleRef.Name)
			}
		case *corev1.ServiceAccount:
			sas[r.Name] = r
		}
	}
	if operator == nil || plain == nil || role == nil {
		t.Fatalf("want ClusterRoles operator and operator-kind-plain and the Role; got %d objects", len(s.Objects))
	}
	for _, r := range operator.Rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" && r.Resources[0] != "events" && r.APIGroups[0] != "authentication.k8s.io" && r.APIGroups[0] != "authorization.k8s.io" {
				t.Errorf("the operator's ClusterRole may %s %s/%v: under a default account it only watches", v, r.APIGroups[0], r.Resources)
			}
		}
	}
	if got := bound["operator-kind-plain"]; !slices.Equal(got, []string{"operator-kind-plain"}) {
		t.Errorf("roles bound to plain's own account: %q, want exactly its role", got)
	}
	if sa := sas["operator-kind-plain"]; sa == nil || sa.Annotations[annotationServes] != "Widget.example.com" {
		t.Errorf("plain's account %+v, want it generated, agreeing to serve plain's kind Widget.example.com", sa)
	}
	if got := bound["operator-kinds"]; len(got) > 0 {
		t.Errorf("the default account is bound to %q: every folder added later would have those rights", got)
	}
	if sa := sas["operator-kinds"]; sa == nil || len(sa.Annotations) != 0 {
		t.Errorf("default account %+v, want it generated, agreeing to serve nothing", sa)
	}
	if sa := sas["gadget-writer"]; sa == nil || sa.Annotations[annotationServes] != "Gadget.example.com,Namespace" {
		t.Errorf("gadget-writer %+v, want annotation %s listing the kinds of the folders that name it", sa, annotationServes)
	}
	var impersonate, listed []string
	for _, r := range role.Rules {
		if r.Resources[0] != "serviceaccounts" {
			continue
		}
		switch {
		case slices.Equal(r.Verbs, []string{"impersonate"}):
			impersonate = r.ResourceNames
		case slices.Equal(r.Verbs, []string{"list"}) && len(r.ResourceNames) == 0:
			listed = r.Verbs
		default:
			t.Errorf("the operator's Role: %v on ServiceAccounts %q, want only impersonate by name and list", r.Verbs, r.ResourceNames)
		}
	}
	if !slices.Equal(impersonate, []string{"gadget-writer", "operator-kind-plain", "operator-kinds"}) {
		t.Errorf("impersonate on %q, want every kind's account and the default", impersonate)
	}
	if listed == nil {
		t.Errorf("no list of ServiceAccounts in the operator's Role: run could not find the account that agrees to serve a kind")
	}
}

// TestAllowClusterScopedGrantsNothing: kind.yaml allowClusterScoped is the
// folder's own word, so it must not widen what the folder's account may:
// the rules are the same with it and without.
func TestAllowClusterScopedGrantsNothing(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "escape")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(folder, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Name }}\n  namespace: kube-system\n")
	var out [2]string
	for i, kind := range []string{"apiVersion: example.com/v1\nkind: Widget\n", "apiVersion: example.com/v1\nkind: Widget\nallowClusterScoped: true\n"} {
		write("kind.yaml", kind)
		got, err := Generate(Options{Templates: dir, CRDs: []string{"testdata/crds"}, DefaultServiceAccount: "operator-kinds"})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(got)
	}
	if out[0] != out[1] {
		t.Errorf("allowClusterScoped changed the RBAC:\nwithout:\n%s\nwith:\n%s", out[0], out[1])
	}
}

func TestGenerateErrors(t *testing.T) {
	kind := "apiVersion: example.com/v1\nkind: Widget\n"
	cases := []struct {
		name  string
		files map[string]string // relative to the templates directory
		opts  Options
		want  []string
	}{
		{
			name:  "computed kind",
			files: map[string]string{"w/kind.yaml": kind, "w/cm.yaml": "apiVersion: v1\nkind: {{ .Spec.kind }}\nmetadata: {name: x}\n"},
			want: []string{"w/cm.yaml:2: cannot know statically which kind this manifest is (the kind comes from {{.Spec.kind}}); declare the kinds it can render in ",
				"w/kind.yaml children"},
		},
		{
			name: "every unknown of every folder",
			files: map[string]string{
				"a/kind.yaml": kind, "a/raw.yaml": "{{ toYaml .Spec.manifest }}\n",
				"b/kind.yaml": "apiVersion: example.com/v1\nkind: Gadget\n", "b/x.yaml": "apiVersion: {{ .Spec.v }}\nkind: Job\nmetadata: {name: x}\n",
			},
			want: []string{"a/raw.yaml:1: cannot know statically", "(no literal kind: line in this manifest)",
				"b/x.yaml:1: cannot know statically", "(the apiVersion comes from {{.Spec.v}})"},
		},
		{
			name:  "template that does not parse",
			files: map[string]string{"w/kind.yaml": kind, "w/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n{{ if }}\n"},
			want:  []string{"w/cm.yaml:3: "},
		},
		{
			name:  "bad kind.yaml",
			files: map[string]string{"w/kind.yaml": kind + "colour: blue\n"},
			want:  []string{"w/kind.yaml:3: ", "colour"},
		},
		{
			name:  "two folders for one kind",
			files: map[string]string{"a/kind.yaml": kind, "b/kind.yaml": kind},
			want:  []string{"b: kind Widget.example.com is already served by "},
		},
		{
			name:  "no kind folder",
			files: map[string]string{"README.md": "nothing"},
			want:  []string{"no kind folder"},
		},
		{
			name:  "the operator's own account as a kind's",
			files: map[string]string{"w/kind.yaml": kind + "serviceAccountName: operator\n"},
			want:  []string{"w/kind.yaml: serviceAccountName \"operator\" is the operator's own ServiceAccount"},
		},
		{
			name:  "the default account as a kind's",
			files: map[string]string{"w/kind.yaml": kind + "serviceAccountName: operator-kinds\n"},
			opts:  Options{DefaultServiceAccount: "operator-kinds"},
			want:  []string{"w/kind.yaml: serviceAccountName \"operator-kinds\" is --default-service-account, the account of every kind that has none of its own: it holds no right"},
		},
		{
			name:  "a generated account another folder names",
			files: map[string]string{"w/kind.yaml": kind, "g/kind.yaml": "apiVersion: example.com/v1\nkind: Gadget\nserviceAccountName: operator-kind-w\n"},
			opts:  Options{DefaultServiceAccount: "operator-kinds"},
			want:  []string{"/w: the account generated for this folder, \"operator-kind-w\", is the serviceAccountName of ", "/g: one kind would have the other's rights"},
		},
		{
			name:  "a folder name that names no account",
			files: map[string]string{"My_Widget/kind.yaml": kind},
			opts:  Options{DefaultServiceAccount: "operator-kinds"},
			want:  []string{"/My_Widget: the folder's name makes no ServiceAccount name (\"operator-kind-My_Widget\"", "name one in kind.yaml serviceAccountName"},
		},
		{
			name:  "bad --service-account",
			files: map[string]string{"w/kind.yaml": kind},
			opts:  Options{ServiceAccount: "Not_A_Name"},
			want:  []string{"--service-account \"Not_A_Name\""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.opts.Templates = dir
			_, err := Generate(tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestResources(t *testing.T) {
	// The built-in table against the names the API server serves.
	known := map[schema.GroupKind]string{
		{Kind: "Endpoints"}:                                                             "endpoints",
		{Kind: "Pod"}:                                                                   "pods",
		{Kind: "Service"}:                                                               "services",
		{Kind: "ConfigMap"}:                                                             "configmaps",
		{Kind: "Secret"}:                                                                "secrets",
		{Kind: "ServiceAccount"}:                                                        "serviceaccounts",
		{Kind: "PersistentVolumeClaim"}:                                                 "persistentvolumeclaims",
		{Kind: "ResourceQuota"}:                                                         "resourcequotas",
		{Kind: "Namespace"}:                                                             "namespaces",
		{Kind: "Node"}:                                                                  "nodes",
		{Group: "apps", Kind: "Deployment"}:                                             "deployments",
		{Group: "apps", Kind: "StatefulSet"}:                                            "statefulsets",
		{Group: "apps", Kind: "DaemonSet"}:                                              "daemonsets",
		{Group: "batch", Kind: "CronJob"}:                                               "cronjobs",
		{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:                         "horizontalpodautoscalers",
		{Group: "networking.k8s.io", Kind: "Ingress"}:                                   "ingresses",
		{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                             "networkpolicies",
		{Group: "networking.k8s.io", Kind: "IngressClass"}:                              "ingressclasses",
		{Group: "policy", Kind: "PodDisruptionBudget"}:                                  "poddisruptionbudgets",
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                "clusterrolebindings",
		{Group: "storage.k8s.io", Kind: "StorageClass"}:                                 "storageclasses",
		{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}:                           "csistoragecapacities",
		{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:                              "endpointslices",
		{Group: "coordination.k8s.io", Kind: "Lease"}:                                   "leases",
		{Group: "events.k8s.io", Kind: "Event"}:                                         "events",
		{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                             "priorityclasses",
		{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: "validatingwebhookconfigurations",
	}
	res, err := NewResources("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	res.Warn = func(msg string) { warnings = append(warnings, msg) }
	for gk, want := range known {
		if got := res.Resource(gk); got.Resource != want || got.Group != gk.Group {
			t.Errorf("%s: %s, want %s", gk, got, want)
		}
	}
	for _, notAResource := range []schema.GroupKind{{Group: "apps", Kind: "Scale"}, {Group: "policy", Kind: "Eviction"}, {Group: "apps", Kind: "DeploymentList"}, {Kind: "DeleteOptions"}} {
		if _, ok := builtIn()[notAResource]; ok {
			t.Errorf("%s is in the built-in table", notAResource)
		}
	}
	// CRDs win over the guess; a kind known nowhere is guessed, with one warning.
	if got := res.Resource(schema.GroupKind{Group: "example.com", Kind: "Gadget"}); got.Resource != "gadgetry" {
		t.Errorf("Gadget: %s, want gadgetry from the CRD", got)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings for known kinds: %q", warnings)
	}
	for range 2 {
		if got := res.Resource(schema.GroupKind{Group: "other.example.com", Kind: "Policy"}); got.Resource != "policies" {
			t.Errorf("guess: %s", got)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `Policy.other.example.com`) || !strings.Contains(warnings[0], `"policies"`) {
		t.Errorf("warnings: %q", warnings)
	}
	if _, err := NewResources("testdata/no-such-dir"); err == nil {
		t.Errorf("no error for a missing --crds directory")
	}
}

// analyzed loads and analyzes the folders of templates, with the
// resources of the CRDs in crds.
func analyzed(t *testing.T, templates, crds string) ([]*Folder, *Resources) {
	t.Helper()
	kinds, err := catalog.LoadEvery(templates)
	if err != nil {
		t.Fatal(err)
	}
	var folders []*Folder
	for _, k := range kinds {
		f, err := AnalyzeFolder(k)
		if err != nil {
			t.Fatal(err)
		}
		folders = append(folders, f)
	}
	res, err := NewResources(crds)
	if err != nil {
		t.Fatal(err)
	}
	return folders, res
}

// TestInstallCRDs: --install-crds may read and change exactly the folders'
// own CRDs, and create (which RBAC cannot restrict by name).
func TestInstallCRDs(t *testing.T) {
	t.Chdir(moduleRoot)
	for _, install := range []bool{false, true} {
		folders, res := analyzed(t, "templates", "crds")
		var got []rbacv1.PolicyRule
		for _, o := range Objects(Options{InstallCRDs: install}, folders, res).Objects {
			if r, ok := o.Object.(*rbacv1.ClusterRole); ok && r.Name == DefaultName {
				for _, rule := range r.Rules {
					if slices.Contains(rule.Resources, "customresourcedefinitions") {
						got = append(got, rule)
					}
				}
			}
		}
		if !install {
			if len(got) > 0 {
				t.Errorf("without --install-crds: CRD rules %+v", got)
			}
			continue
		}
		want := []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"create"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "patch"},
				ResourceNames: []string{"appservices.app.example.com", "ats.cnat.programming-kubernetes.info", "helloworlds.test.jiaozi.com",
					"memcacheds.cache.example.com", "migratedapps.demo.tmplop.io", "mydaemonsets.apps.zhongmingmao.io", "webapps.charts.tmplop.io"}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("with --install-crds: CRD rules\n%+v\nwant\n%+v", got, want)
		}
	}
}

// TestWebhookSecret checks the operator's rights on the conversion
// webhook's Secret: none for folders of one version without --webhook;
// with --webhook, or a folder of several versions, that Secret alone by
// name (read, watch, renew) and create, which RBAC cannot restrict by name.
func TestWebhookSecret(t *testing.T) {
	t.Chdir(moduleRoot)
	if WebhookSecretName != webhook.DefaultSecretName {
		t.Fatalf("WebhookSecretName %q is not the webhook's Secret %q", WebhookSecretName, webhook.DefaultSecretName)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "update", "watch"}, ResourceNames: []string{WebhookSecretName}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
	}
	cases := []struct {
		name      string
		templates string
		webhook   bool
		want      []rbacv1.PolicyRule
	}{
		{"one version", "templates", false, nil},
		{"one version, --webhook", "templates", true, want},
		{"several versions", "engine/crd/testdata/folders/versions", false, want},
		{"several versions, --webhook", "engine/crd/testdata/folders/versions", true, want},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			folders, res := analyzed(t, tc.templates, "crds")
			var got []rbacv1.PolicyRule
			for _, o := range Objects(Options{Webhook: tc.webhook}, folders, res).Objects {
				r, ok := o.Object.(*rbacv1.Role)
				if !ok || r.Name != DefaultName {
					continue
				}
				for _, rule := range r.Rules {
					if slices.Contains(rule.Resources, "secrets") {
						got = append(got, rule)
					}
				}
			}
			slices.SortFunc(got, func(a, b rbacv1.PolicyRule) int { return len(b.ResourceNames) - len(a.ResourceNames) })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Secret rules of the operator's Role:\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
	if got, want := (Options{Templates: "templates", Webhook: true}).Command(), "operator rbac --templates templates --webhook"; got != want {
		t.Errorf("Command() = %q, want %q", got, want)
	}

	// Another name (run --webhook-secret, two operators in a namespace):
	// that Secret alone, and the command says so.
	folders, res := analyzed(t, "templates", "crds")
	o := Options{Templates: "templates", Webhook: true, WebhookSecret: "second-webhook-cert"}
	var named []string
	for _, obj := range Objects(o, folders, res).Objects {
		if r, ok := obj.Object.(*rbacv1.Role); ok && r.Name == DefaultName {
			for _, rule := range r.Rules {
				if slices.Contains(rule.Resources, "secrets") {
					named = append(named, rule.ResourceNames...)
				}
			}
		}
	}
	if !slices.Equal(named, []string{"second-webhook-cert"}) {
		t.Errorf("Secrets named with --webhook-secret: %q, want [second-webhook-cert]", named)
	}
	if got, want := o.Command(), "operator rbac --templates templates --webhook --webhook-secret second-webhook-cert"; got != want {
		t.Errorf("Command() = %q, want %q", got, want)
	}
}
