package crdinstall

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/requeue"
)

const testManager = "operator"

var crdResource = crdMapping.Resource

// fakeCRD is the CRD of kind in group, serving v1 (and storing it) with a
// spec of two fields.
func fakeCRD(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"message":  {Type: "string"},
		"replicas": {Type: "integer"},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
			}},
		},
	}
}

// withVersion adds a served version v2 and a label: what a folder's
// crd.yaml adds to an existing CRD.
func withVersion(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	c = c.DeepCopy()
	v2 := *c.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	c.Spec.Versions = append(c.Spec.Versions, v2)
	c.Labels = map[string]string{"team": "folder"}
	return c
}

// live is c as the API server has it: a uid, a resourceVersion, a
// generation, these managedFields, and Established.
func live(t *testing.T, c *apiextensionsv1.CustomResourceDefinition, managers ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	t.Helper()
	c = c.DeepCopy()
	c.UID, c.ResourceVersion, c.Generation = "uid-live", "100", 1
	c.ManagedFields = managers
	c.Status = apiextensionsv1.CustomResourceDefinitionStatus{
		Conditions:     []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}},
		StoredVersions: []string{"v1"},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, APIVersion: "apiextensions.k8s.io/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}
}

var (
	kubectlApply  = entry("kubectl", metav1.ManagedFieldsOperationApply, "")
	apiserverStat = entry("kube-apiserver", metav1.ManagedFieldsOperationUpdate, "status")
	ourApply      = entry(testManager, metav1.ManagedFieldsOperationApply, "")
	kubectlLabel  = entry("kubectl-label", metav1.ManagedFieldsOperationUpdate, "")
)

// server is the fake API server's apply, as far as Install relies on it:
// a resourceVersion in the body is a precondition; an apply over an
// existing CRD keeps its managers and adds ours; an apply of no spec
// withdraws ours, giving back the CRD as it was before (withdrawn). race
// runs once, before the next apply: it may fail it, or create the CRD as
// someone else would have just before it.
type server struct {
	t         *testing.T
	client    *dynamicfake.FakeDynamicClient
	race      func(s *server, name string) error
	withdrawn *unstructured.Unstructured
	// metadata of each apply, in order.
	metadata []map[string]any
}

func (s *server) apply(action clienttesting.Action) (bool, runtime.Object, error) {
	p := action.(clienttesting.PatchActionImpl)
	if p.GetPatchType() != types.ApplyPatchType || p.PatchOptions.FieldManager != testManager ||
		(p.PatchOptions.Force != nil && *p.PatchOptions.Force) {
		s.t.Errorf("patch %s, options %+v: want a server-side apply as %s, not forced", p.GetPatchType(), p.PatchOptions, testManager)
	}
	var body map[string]any
	if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
		s.t.Fatalf("apply body: %v", err)
	}
	meta, _ := body["metadata"].(map[string]any)
	s.metadata = append(s.metadata, meta)
	if s.race != nil {
		race := s.race
		s.race = nil
		if err := race(s, p.GetName()); err != nil {
			return true, nil, err
		}
	}
	tracker := s.client.Tracker()
	if _, ok := body["spec"]; !ok {
		if s.withdrawn == nil {
			s.t.Fatalf("an apply without a spec, but nothing to withdraw: %s", p.GetPatch())
		}
		return true, s.withdrawn, tracker.Update(crdResource, s.withdrawn.DeepCopy(), "")
	}
	old, err := tracker.Get(crdResource, "", p.GetName())
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return true, nil, err
	}
	out := (&unstructured.Unstructured{Object: body}).DeepCopy()
	out.SetUID("uid-created")
	out.SetResourceVersion("200")
	out.SetGeneration(1)
	managed := []metav1.ManagedFieldsEntry{}
	if exists {
		o := old.(*unstructured.Unstructured)
		if rv, ok := meta["resourceVersion"]; ok && rv != o.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(crdResource.GroupResource(), p.GetName(), errors.New("the object has been modified"))
		}
		out.SetUID(o.GetUID())
		out.SetGeneration(o.GetGeneration() + 1)
		managed = o.GetManagedFields()
	}
	if !slices.ContainsFunc(managed, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == testManager && e.Operation == "Apply" }) {
		managed = append(managed, ourApply)
	}
	out.SetManagedFields(managed)
	_ = unstructured.SetNestedSlice(out.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
	if exists {
		err = tracker.Update(crdResource, out, "")
	} else {
		err = tracker.Create(crdResource, out, "")
	}
	return true, out, err
}

func TestInstall(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "a.example.com", Version: "v1", Resource: "widgets"}
	ours := fakeCRD("a.example.com", "Widget")
	cases := []struct {
		name string
		// kind is kind.yaml's; next the folder's CRD; existing what the
		// cluster has.
		kind     schema.GroupVersionKind
		next     *apiextensionsv1.CustomResourceDefinition
		existing *unstructured.Unstructured
		objects  []runtime.Object
		race     func(s *server, name string) error
		// wantErr: "" for none, else substrings of the error.
		wantErr []string
		// errAs is the error's type, when it has one.
		errAs func(error) bool
		// gets and patches are the requests sent.
		gets, patches int
		// unchanged: the existing CRD must be exactly as it was.
		unchanged bool
	}{
		{name: "core group", kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, next: fakeCRD("", "Pod"),
			wantErr: []string{"CRD pods. refused, nothing installed", `kind.yaml names group "", and the core API group`}, errAs: isReserved},
		{name: "a group without a dot", kind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, next: fakeCRD("apps", "Deployment"),
			wantErr: []string{"CRD deployments.apps refused", `kind.yaml names group "apps", and a group without a dot`}, errAs: isReserved},
		{name: "a *.k8s.io group", kind: schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Gadget"}, next: fakeCRD("networking.k8s.io", "Gadget"),
			wantErr: []string{"gadgets.networking.k8s.io refused", "k8s.io, kubernetes.io and their subdomains belong to Kubernetes"}, errAs: isReserved},
		{name: "an approved *.k8s.io CRD group", kind: schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"},
			next: func() *apiextensionsv1.CustomResourceDefinition {
				c := fakeCRD("gateway.networking.k8s.io", "Gateway")
				c.Annotations = map[string]string{"api-approved.kubernetes.io": "unapproved, experimental-only"}
				return c
			}(),
			wantErr: []string{"gateways.gateway.networking.k8s.io refused"}, errAs: isReserved},
		{name: "a *.kubernetes.io group", kind: schema.GroupVersionKind{Group: "x.kubernetes.io", Version: "v1", Kind: "Widget"}, next: fakeCRD("x.kubernetes.io", "Widget"),
			wantErr: []string{"k8s.io, kubernetes.io and their subdomains belong to Kubernetes"}, errAs: isReserved},
		{name: "a *.x-k8s.io group", kind: schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1", Kind: "Cluster"}, next: fakeCRD("cluster.x-k8s.io", "Cluster"),
			wantErr: []string{"clusters.cluster.x-k8s.io refused", "x-k8s.io and its subdomains are Kubernetes' for its SIG projects"}, errAs: isReserved},
		{name: "kind.yaml of a built-in group, crd.yaml of another", kind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			next: fakeCRD("a.example.com", "Deployment"), wantErr: []string{"deployments.a.example.com refused", `kind.yaml names group "apps"`}, errAs: isReserved},
		{name: "crd.yaml of a built-in group, kind.yaml of another", kind: schema.GroupVersionKind{Group: "a.example.com", Version: "v1", Kind: "Widget"},
			next: fakeCRD("networking.k8s.io", "Widget"), wantErr: []string{`the folder's CRD names group "networking.k8s.io"`}, errAs: isReserved},
		{name: "a built-in kind without a CRD: nothing to install", kind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
		{name: "group differs from kind.yaml's", kind: schema.GroupVersionKind{Group: "a.example.com", Version: "v1", Kind: "Widget"},
			next: fakeCRD("b.example.com", "Widget"), wantErr: []string{"defines Widget.b.example.com, but kind.yaml serves Widget.a.example.com"}},
		{name: "installed by kubectl", kind: widgets.GroupVersion().WithKind("Widget"), next: withVersion(ours),
			existing: live(t, ours, kubectlApply, apiserverStat), gets: 1, unchanged: true, errAs: isNotOwned,
			wantErr: []string{"CRD widgets.a.example.com was not created by this operator", "field manager operator",
				"managed by kubectl)", "remove crd.yaml from the folder",
				"kubectl apply --server-side --field-manager=operator -f templates/widget/crd.yaml"}},
		{name: "installed by kubectl, labelled by kubectl", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours, kubectlApply, kubectlLabel, apiserverStat), gets: 1, unchanged: true, errAs: isNotOwned,
			wantErr: []string{"managed by kubectl, kubectl-label)"}},
		{name: "our name, but an update, not an apply", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours, entry(testManager, metav1.ManagedFieldsOperationUpdate, "")), gets: 1, unchanged: true, errAs: isNotOwned,
			wantErr: []string{"managed by operator)"}},
		{name: "our name on the status only", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours, kubectlApply, entry(testManager, metav1.ManagedFieldsOperationApply, "status")), gets: 1, unchanged: true, errAs: isNotOwned,
			wantErr: []string{"managed by kubectl)"}},
		{name: "no managedFields", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours), gets: 1, unchanged: true, errAs: isNotOwned,
			wantErr: []string{"no field manager recorded"}},
		{name: "ours, labelled by kubectl later: updated", kind: widgets.GroupVersion().WithKind("Widget"), next: withVersion(ours),
			existing: live(t, ours, ourApply, kubectlLabel, apiserverStat), gets: 2, patches: 1},
		{name: "ours, unchanged: applied again", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours, ourApply), gets: 2, patches: 1},
		{name: "the apply forbidden: marked as the door marks every call", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours, ourApply), gets: 1, patches: 1, unchanged: true,
			race: func(_ *server, name string) error {
				return apierrors.NewForbidden(crdResource.GroupResource(), name, errors.New(`User "operator" cannot patch resource "customresourcedefinitions"`))
			},
			wantErr: []string{"apply CRD widgets.a.example.com", "cannot patch"}, errAs: markedForbidden},
		{name: "ours, a change that removes a field an object sets", kind: widgets.GroupVersion().WithKind("Widget"),
			next: func() *apiextensionsv1.CustomResourceDefinition {
				c := ours.DeepCopy()
				delete(c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "replicas")
				return c
			}(),
			existing: live(t, ours, ourApply),
			objects: []runtime.Object{&unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "a.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "namespace": "ns"},
				"spec": map[string]any{"replicas": int64(2)},
			}}},
			gets: 1, unchanged: true, errAs: isRefused, wantErr: []string{"removes field spec.replicas, which object ns/w1 sets"}},
		{name: "absent: created", kind: widgets.GroupVersion().WithKind("Widget"), next: ours, gets: 2, patches: 1},
		{name: "absent, then created by kubectl before our apply", kind: widgets.GroupVersion().WithKind("Widget"), next: withVersion(ours),
			race: func(s *server, name string) error {
				s.withdrawn = live(s.t, ours, kubectlApply)
				if err := s.client.Tracker().Create(crdResource, s.withdrawn.DeepCopy(), ""); err != nil {
					s.t.Fatal(err)
				}
				return nil
			},
			gets: 1, patches: 2, unchanged: true, errAs: isNotOwned,
			wantErr: []string{"was not created by this operator", "someone else created it between the operator's read and its create, the operator's apply was withdrawn; managed by kubectl)"}},
		{name: "ours, changed by someone between our read and our apply", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours, ourApply),
			race: func(s *server, name string) error {
				return apierrors.NewConflict(crdResource.GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
			},
			gets: 3, patches: 2},
		{name: "ours, a field another manager set to another value", kind: widgets.GroupVersion().WithKind("Widget"), next: ours,
			existing: live(t, ours, ourApply, kubectlApply),
			race: func(s *server, name string) error {
				err := apierrors.NewConflict(crdResource.GroupResource(), name, errors.New(`Apply failed with 1 conflict: conflict with "kubectl": .spec.versions`))
				err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".spec.versions"}}
				return err
			},
			gets: 1, patches: 1, wantErr: []string{"another manager owns these fields", "--force-conflicts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects := tc.objects
			if tc.existing != nil {
				objects = append(objects, tc.existing.DeepCopy())
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				crdResource: "CustomResourceDefinitionList", widgets: "WidgetList",
			}, objects...)
			srv := &server{t: t, client: client, race: tc.race}
			client.PrependReactor("patch", "customresourcedefinitions", srv.apply)
			errNone := errors.New("no CRD")
			inst := New(kube.NewForClients(kube.Clients{Dynamic: client}, testManager), func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error) {
				if tc.next == nil {
					return nil, fmt.Errorf("kind.yaml: %w", errNone)
				}
				return tc.next.DeepCopy(), nil
			}, errNone)
			inst.EstablishTimeout = 2 * time.Second
			k := &catalog.Kind{Name: "widget", Dir: "templates/widget", GVK: tc.kind, CRD: []byte("# crd.yaml")}

			err := inst.Install(t.Context(), k)
			t.Logf("Install: %v", err)
			switch {
			case len(tc.wantErr) == 0 && err != nil:
				t.Fatalf("Install: %v", err)
			case len(tc.wantErr) > 0 && err == nil:
				t.Fatalf("Install succeeded, want an error with %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q", w)
				}
			}
			if tc.errAs != nil && !tc.errAs(err) {
				t.Errorf("error of type %T", err)
			}

			var gets, patches int
			for _, a := range client.Actions() {
				if a.GetResource() != crdResource {
					continue
				}
				switch a.GetVerb() {
				case "get":
					gets++
				case "patch":
					patches++
				default:
					t.Errorf("unexpected %s of a CRD", a.GetVerb())
				}
			}
			if gets != tc.gets || patches != tc.patches {
				t.Errorf("%d gets and %d patches of the CRD, want %d and %d", gets, patches, tc.gets, tc.patches)
			}
			for n, meta := range srv.metadata {
				rv, ok := meta["resourceVersion"]
				switch {
				case meta["uid"] != nil:
					t.Errorf("apply %d sets metadata.uid %v", n, meta["uid"])
				case tc.existing != nil && n == 0 && (!ok || rv != tc.existing.GetResourceVersion()):
					t.Errorf("the update of %s has resourceVersion %v, want the one read (%s) as a precondition", tc.existing.GetName(), rv, tc.existing.GetResourceVersion())
				case tc.existing == nil && n == 0 && ok:
					t.Errorf("the create has resourceVersion %v", rv)
				}
			}
			if tc.unchanged {
				now, err := client.Tracker().Get(crdResource, "", tc.next.Name)
				if err != nil {
					t.Fatal(err)
				}
				want := tc.existing
				if want == nil { // created by the race
					want = live(t, ours, kubectlApply)
				}
				if !equalJSON(t, now, want) {
					t.Errorf("the existing CRD changed:\n%v\nwas\n%v", now, want)
				}
			}
		})
	}
}

// markedForbidden: a Forbidden, with the door's mark (terminal, tried
// again after a minute).
func markedForbidden(err error) bool {
	m, ok := requeue.Of(err)
	return ok && m.Terminal && m.After == time.Minute && apierrors.IsForbidden(err)
}

func isReserved(err error) bool {
	var e *ReservedGroupError
	return errors.As(err, &e)
}

func isNotOwned(err error) bool {
	var e *NotOwnedError
	return errors.As(err, &e)
}

func isRefused(err error) bool {
	var e *RefusedError
	return errors.As(err, &e)
}

func equalJSON(t *testing.T, a, b runtime.Object) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func TestReservedGroup(t *testing.T) {
	for group, reserved := range map[string]bool{
		"": true, "apps": true, "batch": true, "policy": true, "autoscaling": true, "example": true,
		"k8s.io": true, "networking.k8s.io": true, "metrics.k8s.io": true, "gateway.networking.k8s.io": true,
		"kubernetes.io": true, "x.kubernetes.io": true, "Apps.K8s.IO": true, "networking.k8s.io.": true,
		"x-k8s.io": true, "cluster.x-k8s.io": true, "gateway.networking.x-k8s.io": true,
		"example.com": false, "a.example.com": false, "k8s.io.example.com": false, "notk8s.io": false,
		"my-k8s.io": false, "kubernetes.io.example.com": false, "cache.example.com": false,
	} {
		if got := ReservedGroup(group) != ""; got != reserved {
			t.Errorf("ReservedGroup(%q) = %q, want reserved %v", group, ReservedGroup(group), reserved)
		}
	}
}

func TestOwnedAndManagers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entries  []metav1.ManagedFieldsEntry
		owned    bool
		managers string
	}{
		{"none", nil, false, ""},
		{"kubectl", []metav1.ManagedFieldsEntry{kubectlApply, apiserverStat}, false, "kubectl"},
		{"ours", []metav1.ManagedFieldsEntry{ourApply, apiserverStat}, true, "operator"},
		{"ours and others", []metav1.ManagedFieldsEntry{kubectlApply, ourApply, kubectlLabel, apiserverStat}, true, "kubectl,operator,kubectl-label"},
		{"ours by update", []metav1.ManagedFieldsEntry{entry(testManager, metav1.ManagedFieldsOperationUpdate, "")}, false, "operator"},
		{"ours on status", []metav1.ManagedFieldsEntry{entry(testManager, metav1.ManagedFieldsOperationApply, "status")}, false, ""},
		{"another operator", []metav1.ManagedFieldsEntry{entry("operator-2", metav1.ManagedFieldsOperationApply, "")}, false, "operator-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.entries}}
			if got := Owned(c, testManager); got != tc.owned {
				t.Errorf("Owned = %v, want %v", got, tc.owned)
			}
			if got := strings.Join(Managers(c), ","); got != tc.managers {
				t.Errorf("Managers = %q, want %q", got, tc.managers)
			}
		})
	}
}
