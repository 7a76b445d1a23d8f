package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tmplop/operator/engine/catalog/childkinds"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/convert"
	"github.com/tmplop/operator/engine/health"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/rollout"
	shortschema "github.com/tmplop/operator/engine/schema"
)

// KindFile and CRDFile are layout's, the folder contract's.
const (
	KindFile = layout.KindFile
	CRDFile  = layout.CRDFile
)

// DefaultWorkers is the number of objects of one kind reconciled at once
// when kind.yaml does not say. A reconcile spends most of its time waiting
// for the API server; ten in flight keep a server busy where two left it
// idle (docs/benchmarks.md).
const DefaultWorkers = 10

// DefaultRevisionHistoryLimit is how many old revisions of a kind are kept
// when kind.yaml does not say: a Deployment's default.
const DefaultRevisionHistoryLimit = 10

// Spec is kind.yaml: the kind a folder serves and how.
type Spec struct {
	// Selector restricts the objects of the kind that this folder serves,
	// by label, on the API server's side of the watch: objects that do not
	// match are neither cached nor touched.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// APIVersion and Kind name the watched kind as a manifest does. The
	// resource and its scope come from discovery, never from the user.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Workers is how many objects of the kind are reconciled concurrently.
	Workers int `json:"workers,omitempty"`
	// RevisionHistoryLimit is how many of the kind's old revisions are
	// kept beside the one it is served with (engine/revision,
	// docs/rollout.md); nil: DefaultRevisionHistoryLimit.
	RevisionHistoryLimit *int `json:"revisionHistoryLimit,omitempty"`
	// Rollout is how a change of the folder reaches the kind's objects:
	// all at once (absent, or "all"), or in steps that move on only when
	// the objects of the step before are Ready (engine/rollout,
	// docs/rollout.md).
	Rollout *rollout.Spec `json:"rollout,omitempty"`
	// AllowClusterScoped lets the templates render cluster-scoped children
	// and children in other namespaces than the parent's. Off by default so
	// that whoever may create the custom resource in one namespace can never
	// make the operator write outside it.
	AllowClusterScoped bool `json:"allowClusterScoped,omitempty"`
	// Lookups are the kinds the templates may read with lookup and
	// lookupSelect; nothing else is readable.
	Lookups []LookupSpec `json:"lookups,omitempty"`
	// Prune deletes children that the templates no longer render (default
	// true). false keeps them; a child may also opt out with the
	// operator.tmplop.io/prune: disabled annotation.
	Prune *bool `json:"prune,omitempty"`
	// Budget overrides the operator's render budgets for this folder.
	Budget *BudgetSpec `json:"budget,omitempty"`
	// ServiceAccountName makes every cluster call of this kind (its watch,
	// applies, prunes, lookups, status writes) impersonate this
	// ServiceAccount of the operator's namespace, so that the folder can
	// never do more than the account's RBAC allows.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Children declares child kinds that the templates render but whose
	// apiVersion or kind is computed, so that `operator rbac` cannot read
	// them from the templates' text.
	Children []ChildSpec `json:"children,omitempty"`
	// ReadyWhen judges the health of child kinds that kstatus cannot
	// (engine/health): per kind, a Go template over the live child that
	// prints true when it is ready. Parsed at load.
	ReadyWhen []ReadyWhenSpec `json:"readyWhen,omitempty"`
	// DependsOn maps a child template file to the files whose children
	// must all be Current before its own children are applied
	// (docs/readiness.md). Checked at load: the files exist, no cycle.
	DependsOn map[string][]string `json:"dependsOn,omitempty"`
	// OverrideValues, for a Helm chart, are put over every object's values
	// (its spec), as the Helm operator's watches.yaml field of that name.
	OverrideValues map[string]any `json:"overrideValues,omitempty"`
	// AdoptHelmReleases lets an object of a chart kind take over objects
	// that Helm made (label app.kubernetes.io/managed-by: Helm), each only
	// once whoever may write it consented by annotating it
	// operator.tmplop.io/parent=<Kind.group/namespace/name>: how a release
	// moves from helm install or the Helm operator to the engine
	// (docs/helm.md). It is the kind author's permission to accept that
	// consent, never the consent itself: the CR author names the object,
	// and with the name would otherwise pick any release of the namespace.
	// Off by default: without it, a Helm-made object is never taken over.
	AdoptHelmReleases bool `json:"adoptHelmReleases,omitempty"`
	// Suspend is a path into the object ("spec.suspend") whose boolean
	// true suspends it, as the annotation operator.tmplop.io/suspend:
	// "true" does: no write for it but its Suspended condition
	// (suspend.go, docs/suspend-and-drift.md).
	Suspend string `json:"suspend,omitempty"`
	// Drift is what a reconcile does with a child edited by hand in the
	// fields the operator applies while its render is unchanged: repair
	// (the default: apply it again) or warn (leave it, and report it in
	// the Drifted condition). drift.go.
	Drift string `json:"drift,omitempty"`
	// DriftIgnore are the paths of children the operator never applies,
	// so never reports nor repairs (Flux's ignore rules): per child kind,
	// JSON pointers.
	DriftIgnore []DriftIgnoreSpec `json:"driftIgnore,omitempty"`

	// The kind's CRD, in short (engine/schema): `operator crd` and
	// `run --install-crds` generate it from these fields (engine/crd). A
	// folder may instead carry its own crd.yaml; with neither, the CRD is
	// installed some other way.

	// Scope is Namespaced (default) or Cluster.
	Scope string `json:"scope,omitempty"`
	// Plural is the resource name; default: the lower-case kind, pluralised.
	Plural string `json:"plural,omitempty"`
	// SpecSchema and StatusSchema are the short schema of .spec and
	// .status: a field is `name: "type | marker=value ..."`, an object a
	// nested mapping.
	SpecSchema   map[string]any `json:"spec,omitempty"`
	StatusSchema map[string]any `json:"status,omitempty"`
	// PrinterColumns are the CRD's additionalPrinterColumns (kubectl get).
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"printerColumns,omitempty"`
	// Validation are CEL rules over the whole object (self), as the CRD's
	// x-kubernetes-validations.
	Validation []apiextensionsv1.ValidationRule `json:"validation,omitempty"`
	// Versions are the kind's other versions than the hub, apiVersion's,
	// and may list the hub for served, storage and deprecated alone;
	// absent: the hub alone (versions.go, docs/versions.md).
	Versions []VersionSpec `json:"versions,omitempty"`

	// What parseSpec works out of the fields above while it checks them,
	// kept so that nothing parses them again: the readyWhen rules' checker
	// and the OpenAPI schemas of spec and status (nil without them).
	health                   *health.Checker
	specSchema, statusSchema *apiextensionsv1.JSONSchemaProps
	// suspendPath is Suspend split at its dots; driftIgnore is DriftIgnore
	// by child kind, each path split into its tokens (drift.go).
	suspendPath []string
	driftIgnore map[schema.GroupKind][][]string
}

// ChildSpec names a kind of child.
type ChildSpec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ReadyWhenSpec is one readyWhen entry: the child kind it judges (any
// version of it) and the expression, rendered over the live child (`.`),
// that prints true when the child is ready.
type ReadyWhenSpec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Expression string `json:"expression"`
}

// BudgetSpec is kind.yaml's budget: what one render of the folder may use.
type BudgetSpec struct {
	Timeout        metav1.Duration `json:"timeout,omitempty"`
	MaxOutputBytes int64           `json:"maxOutputBytes,omitempty"`
	MaxManifests   int             `json:"maxManifests,omitempty"`
	MaxCalls       int             `json:"maxCalls,omitempty"`
}

// LookupSpec declares one readable kind.
type LookupSpec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// AllNamespaces lets templates read this kind in every namespace, not
	// only the parent's. Cluster-scoped kinds (Nodes) need no such opt-in.
	AllNamespaces bool `json:"allNamespaces,omitempty"`
	// Selector restricts what is read, and cached, to the objects with
	// these labels, on the API server's side of the watch.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// Kind is one loaded kind folder.
type Kind struct {
	// Name is the folder's name, e.g. "memcached".
	Name string
	// Dir is the folder's path, or for a folder delivered in a ConfigMap
	// "configmap/<namespace>/<name>": where it came from.
	Dir string
	// GVK is the watched kind.
	GVK  schema.GroupVersionKind
	Spec Spec
	// Files are the folder's files that have a role, as read at load.
	Files layout.Files
	// Templates are the folder's parsed templates.
	Templates *render.Set
	// Health judges the children's readiness: kstatus, and the folder's
	// readyWhen rules, parsed once at load.
	Health *health.Checker
	// Fingerprint identifies the folder's content at load (see Fingerprint).
	Fingerprint string
	// CRD is the folder's crd.yaml, nil when it has none (engine/crd
	// reads it).
	CRD []byte

	// format is what the folder's format adds to the pipeline (a folder of
	// templates, a Helm chart): the Kind's methods ask it, so that no
	// consumer branches on the format (format.go). Nil in a Kind made
	// without Compile: a folder of Templates.
	format Format

	// childKinds answers ChildKinds, once.
	childKinds func() ([]childkinds.Kind, error)

	// versions are the kind's versions, resolved (Versions); converter
	// converts between them, nil for one version (versions.go).
	versions  []Version
	converter *convert.Converter
}

// Workers is the number of concurrent reconciles for the kind.
func (k *Kind) Workers() int {
	if k.Spec.Workers > 0 {
		return k.Spec.Workers
	}
	return DefaultWorkers
}

// RevisionHistoryLimit is how many old revisions of the kind are kept
// beside the one it is served with.
func (k *Kind) RevisionHistoryLimit() int {
	if l := k.Spec.RevisionHistoryLimit; l != nil {
		return *l
	}
	return DefaultRevisionHistoryLimit
}

// Pruning reports whether children no longer rendered are deleted.
func (k *Kind) Pruning() bool { return k.Spec.Prune == nil || *k.Spec.Prune }

// RenderBudget returns the folder's render budget over base (the
// operator's flags): kind.yaml's fields win where set.
func (k *Kind) RenderBudget(base render.Budget) render.Budget {
	if k.Spec.Budget == nil {
		return base
	}
	b := k.Spec.Budget
	return base.Merge(render.Budget{Timeout: b.Timeout.Duration, MaxOutputBytes: b.MaxOutputBytes,
		MaxManifests: b.MaxManifests, MaxCalls: b.MaxCalls})
}

// ObjectSelector is Spec.Selector as a label selector string for list and
// watch requests ("" for every object).
func (k *Kind) ObjectSelector() string {
	s, _ := selectorString(k.Spec.Selector) // checked at load
	return s
}

// LookupGVKs returns the declared lookup kinds.
func (k *Kind) LookupGVKs() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(k.Spec.Lookups))
	for _, l := range k.Spec.Lookups {
		out = append(out, schema.FromAPIVersionAndKind(l.APIVersion, l.Kind))
	}
	return out
}

// Limits are what compiling a kind folder may take: a folder is written
// by whoever may write a labelled ConfigMap, and compiling it must cost
// the operator little whatever it holds. The zero value is the defaults.
type Limits struct {
	// MaxUnpacked bounds what a chart's archives unpack to, all of them
	// together: a ConfigMap folder's packaged chart and the subchart
	// archives nested in it or in a chart folder (run
	// --chart-max-unpacked; 0: chart.DefaultMaxUnpacked).
	MaxUnpacked int64
}

// LoadKind loads one kind folder.
func LoadKind(dir string) (*Kind, error) {
	return LoadKindFS(filepath.Base(dir), dir, os.DirFS(dir))
}

// LoadKindFS loads the kind folder held by fsys (a directory, or the keys of
// a ConfigMap). name is the folder's name; source says where it came from,
// in errors and logs, and identifies the folder across reloads.
func LoadKindFS(name, source string, fsys fs.FS) (*Kind, error) {
	return Limits{}.loadKindFS(name, source, fsys)
}

func (l Limits) loadKindFS(name, source string, fsys fs.FS) (*Kind, error) {
	files, err := ReadFolder(fsys)
	if err != nil {
		return nil, err
	}
	return l.Compile(name, source, files)
}

// ReadFolder reads a kind folder's files: the top-level files that have a
// role (layout.Read), or every file of a Helm chart (chart.Read).
func ReadFolder(fsys fs.FS) (layout.Files, error) {
	if chart.IsChart(fsys) {
		return chart.Read(fsys)
	}
	return layout.Read(fsys)
}

// Compile turns a folder's files into its Kind within the default
// Limits: every fact about the folder is worked out here, once, and read
// by the controller, reconcile, lint, rbac and the commands.
func Compile(name, source string, files layout.Files) (*Kind, error) {
	return Limits{}.Compile(name, source, files)
}

// ReadSpec reads the folder's kind.yaml alone: the kind it serves and as
// which ServiceAccount, known before the folder is compiled, so that a
// folder whose account does not agree to serve its kind costs nothing
// more to refuse (engine/controller).
func ReadSpec(files layout.Files) (*Spec, error) {
	data, ok := files[KindFile]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", KindFile, fs.ErrNotExist)
	}
	spec, err := parseSpec(data)
	if err != nil {
		err = kindYAMLError(data, err)
		if re, ok := errors.AsType[*render.Error](err); !ok || re.Template != KindFile {
			err = render.At(KindFile, 0, render.CodeKindYAML, err)
		}
		return nil, err
	}
	return spec, nil
}

// fieldErr is err as a mistake of kind.yaml's field at path, which
// kindYAMLError locates.
func fieldErr(err error, path ...string) error { return render.Field(err, path...) }

// kindYAMLError is err, when it is a mistake of a field of kind.yaml
// (data: a render.FieldError, a short schema's), as the *render.Error at
// the field's line; any other error as it is.
func kindYAMLError(data []byte, err error) error {
	if _, ok := errors.AsType[*render.FieldError](err); ok {
		// Before a render.Error it wraps: a readyWhen's.
		return render.AtField(KindFile, data, render.CodeKindYAML, err)
	}
	if se, ok := errors.AsType[*shortschema.Error](err); ok {
		return render.At(KindFile, render.YAMLPathLine(data, se.Keys()...), render.CodeKindYAML, err)
	}
	return err
}

// GroupKind is the kind the folder serves.
func (s *Spec) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(s.APIVersion, s.Kind).GroupKind()
}

// Compile is Compile within l.
func (l Limits) Compile(name, source string, files layout.Files) (*Kind, error) {
	spec, err := ReadSpec(files)
	if err != nil {
		return nil, err
	}
	crd, hasCRD := files[CRDFile]
	if hasCRD && len(spec.Versions) > 0 {
		// The CRD's versions are the crd.yaml's, as its schemas are.
		return nil, kindYAMLError(files[KindFile], fieldErr(fmt.Errorf("the folder has a %s: its versions are the %s's; remove versions from %s, or the %s", CRDFile, CRDFile, KindFile, CRDFile),
			"versions"))
	}
	if hasCRD && spec.HasCRDSchema() {
		// Two descriptions of one CRD would drift apart.
		return nil, kindYAMLError(files[KindFile], fieldErr(fmt.Errorf("the folder has a %s: remove spec, status, printerColumns and validation from %s, or the %s", CRDFile, KindFile, CRDFile),
			spec.schemaField()))
	}
	format, set, err := l.loadFormat(files, spec)
	if err != nil {
		return nil, kindYAMLError(files[KindFile], err)
	}
	if err := checkDependsOn(spec.DependsOn, set.ChildTemplates()); err != nil {
		return nil, kindYAMLError(files[KindFile], err)
	}
	if set.HasStatus() && spec.builtIn() {
		// Their status belongs to Kubernetes' own controllers, and their
		// schemas have no place for the engine's conditions.
		return nil, render.At(layout.StatusFile, 0, render.CodeFolder,
			fmt.Errorf("the status of built-in kind %s is not the operator's to write; remove %s", spec.Kind, layout.StatusFile))
	}
	k := &Kind{
		Name:        name,
		Dir:         source,
		GVK:         schema.FromAPIVersionAndKind(spec.APIVersion, spec.Kind),
		Spec:        *spec,
		Files:       files,
		Templates:   set,
		Health:      spec.health,
		Fingerprint: files.Fingerprint(),
		CRD:         crd,
		format:      format,
	}
	k.childKinds = sync.OnceValues(k.analyzeChildKinds)
	if k.Staged() && !k.RecordsRevision() {
		// A step moves on when its objects say they were reconciled with
		// the new revision, and these objects cannot say it.
		return nil, kindYAMLError(files[KindFile], fieldErr(errors.New("rollout: steps read each object's status.observedRevision, which this kind's objects cannot hold (a built-in kind, or a crd.yaml whose status schema does not declare observedRevision): use rollout: all, or declare the field"), "rollout"))
	}
	var fromCRD []Version
	if hasCRD && len(files.Conversions()) > 0 {
		// A crd.yaml of several versions and no conversion templates is
		// as it was before folders had versions: its own conversion (None:
		// the API server rewrites apiVersion alone), and the kind the hub
		// alone. Its templates make it a kind of several versions.
		fromCRD = crdVersions(crd)
	}
	k.versions = versionsOf(spec, fromCRD)
	if _, ofTemplates := format.(templates); len(k.versions) > 1 && !ofTemplates {
		// A chart's values are its objects' spec: converting them is
		// for the chart format to say, which it does not yet.
		return nil, kindYAMLError(files[KindFile], fieldErr(fmt.Errorf("versions: a %s kind has one version for now: conversion is for folders of templates", format.Name()), "versions"))
	}
	if k.converter, err = compileConverter(files, k.versions, k.RenderBudget(render.Budget{})); err != nil {
		return nil, err
	}
	return k, nil
}

func parseSpec(data []byte) (*Spec, error) {
	var s Spec
	if err := render.DecodeYAML(KindFile, data, &s, render.CodeKindYAML); err != nil {
		return nil, err
	}
	if err := validAPIVersionKind(s.APIVersion, s.Kind); err != nil {
		return nil, fieldErr(err, "apiVersion")
	}
	if s.Workers < 0 {
		return nil, fieldErr(fmt.Errorf("workers must not be negative, got %d", s.Workers), "workers")
	}
	if l := s.RevisionHistoryLimit; l != nil && *l < 0 {
		return nil, fieldErr(fmt.Errorf("revisionHistoryLimit must not be negative, got %d", *l), "revisionHistoryLimit")
	}
	if _, err := selectorString(s.Selector); err != nil {
		return nil, fieldErr(fmt.Errorf("selector: %w", err), "selector")
	}
	seen := map[schema.GroupKind]int{}
	for i, l := range s.Lookups {
		item := fmt.Sprintf("lookups[%d]", i)
		if err := validAPIVersionKind(l.APIVersion, l.Kind); err != nil {
			return nil, fieldErr(fmt.Errorf("%s: %w", item, err), item)
		}
		if _, err := selectorString(l.Selector); err != nil {
			return nil, fieldErr(fmt.Errorf("%s.selector: %w", item, err), item, "selector")
		}
		gk := schema.FromAPIVersionAndKind(l.APIVersion, l.Kind).GroupKind()
		if j, dup := seen[gk]; dup {
			return nil, fieldErr(fmt.Errorf("%s: %s is already declared by lookups[%d]", item, gk, j), item)
		}
		seen[gk] = i
	}
	for i, c := range s.Children {
		if err := validAPIVersionKind(c.APIVersion, c.Kind); err != nil {
			item := fmt.Sprintf("children[%d]", i)
			return nil, fieldErr(fmt.Errorf("%s: %w", item, err), item)
		}
	}
	for i, r := range s.ReadyWhen {
		if err := validAPIVersionKind(r.APIVersion, r.Kind); err != nil {
			item := fmt.Sprintf("readyWhen[%d]", i)
			return nil, fieldErr(fmt.Errorf("%s: %w", item, err), item)
		}
	}
	var err error
	if s.health, err = s.healthChecker(); err != nil {
		return nil, fieldErr(err, "readyWhen")
	}
	for _, file := range slices.Sorted(maps.Keys(s.DependsOn)) {
		if len(s.DependsOn[file]) == 0 {
			return nil, fieldErr(fmt.Errorf("dependsOn: %s: the list of files it waits for is empty", file), "dependsOn", file)
		}
	}
	if n := s.ServiceAccountName; n != "" {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return nil, fieldErr(fmt.Errorf("serviceAccountName %q: %s", n, strings.Join(errs, "; ")), "serviceAccountName")
		}
	}
	if b := s.Budget; b != nil && (b.Timeout.Duration < 0 || b.MaxOutputBytes < 0 || b.MaxManifests < 0 || b.MaxCalls < 0) {
		return nil, fieldErr(errors.New("budget: values must not be negative"), "budget")
	}
	if r := s.Rollout; r != nil {
		if err := r.Validate(); err != nil {
			return nil, fieldErr(err, "rollout")
		}
	}
	if err := s.validSuspend(); err != nil {
		return nil, err
	}
	if err := s.validDrift(); err != nil {
		return nil, err
	}
	if err := s.validCRDFields(); err != nil {
		return nil, err
	}
	if err := s.validVersions(); err != nil {
		return nil, err
	}
	return &s, nil
}

// healthChecker is the checker of the folder's readyWhen rules.
func (s *Spec) healthChecker() (*health.Checker, error) {
	rules := make([]health.Rule, 0, len(s.ReadyWhen))
	for _, r := range s.ReadyWhen {
		rules = append(rules, health.Rule{APIVersion: r.APIVersion, Kind: r.Kind, Expression: r.Expression})
	}
	return health.NewChecker(rules)
}

// schemaField is the first field of kind.yaml that describes the kind's
// CRD (HasCRDSchema).
func (s *Spec) schemaField() string {
	switch {
	case s.SpecSchema != nil:
		return "spec"
	case s.StatusSchema != nil:
		return "status"
	case len(s.PrinterColumns) > 0:
		return "printerColumns"
	case len(s.Validation) > 0:
		return "validation"
	}
	return "versions"
}

// HasCRDSchema reports whether kind.yaml describes the kind's CRD (engine/crd
// generates it then): its schema, or its versions.
func (s *Spec) HasCRDSchema() bool {
	return s.SpecSchema != nil || s.StatusSchema != nil || len(s.PrinterColumns) > 0 || len(s.Validation) > 0 || len(s.Versions) > 0
}

// validCRDFields checks scope, plural and the short schema at load, so that
// a mistake there is a kind.yaml error naming the field, not a CRD that
// `operator crd` cannot generate or the API server refuses.
func (s *Spec) validCRDFields() error {
	switch s.Scope {
	case "", "Namespaced", "Cluster":
	default:
		return fieldErr(fmt.Errorf("scope %q: want Namespaced or Cluster", s.Scope), "scope")
	}
	if s.Plural != "" {
		if errs := validation.IsDNS1035Label(s.Plural); len(errs) > 0 {
			return fieldErr(fmt.Errorf("plural %q: %s", s.Plural, strings.Join(errs, "; ")), "plural")
		}
	}
	if s.HasCRDSchema() && s.builtIn() {
		return fieldErr(fmt.Errorf("spec, status, printerColumns, validation, versions: %s is a built-in kind, its schema is Kubernetes'", s.Kind), "kind")
	}
	var err error
	if s.SpecSchema != nil {
		if s.specSchema, err = shortschema.Parse("spec", s.SpecSchema); err != nil {
			return err
		}
	}
	if s.StatusSchema != nil {
		if s.statusSchema, err = shortschema.ParseStatus(s.StatusSchema); err != nil {
			return err
		}
	}
	return nil
}

// ShortSchemas are the OpenAPI schemas of kind.yaml's spec and status
// (engine/schema), parsed once at load; nil for a root kind.yaml does not
// describe. Each call returns copies, for the caller to complete
// (engine/crd adds the engine's status fields).
func (k *Kind) ShortSchemas() (spec, status *apiextensionsv1.JSONSchemaProps) {
	return k.Spec.specSchema.DeepCopy(), k.Spec.statusSchema.DeepCopy()
}

// checkDependsOn checks kind.yaml's dependsOn against the folder's child
// templates: every file it names is one, none waits for itself, and no
// files wait for each other in a cycle, which would wait forever.
func checkDependsOn(deps map[string][]string, children []string) error {
	isChild := map[string]bool{}
	for _, c := range children {
		isChild[c] = true
	}
	files := slices.Sorted(maps.Keys(deps))
	for _, f := range files {
		if !isChild[f] {
			return fieldErr(fmt.Errorf("dependsOn: %s is not a child template of the folder", f), "dependsOn", f)
		}
		for _, d := range deps[f] {
			switch {
			case d == f:
				return fieldErr(fmt.Errorf("dependsOn: %s waits for itself", f), "dependsOn", f)
			case !isChild[d]:
				return fieldErr(fmt.Errorf("dependsOn: %s waits for %s, which is not a child template of the folder", f, d), "dependsOn", f)
			}
		}
	}
	// Depth-first, in file order, so that the cycle reported is stable.
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(f string) error
	visit = func(f string) error {
		switch state[f] {
		case done:
			return nil
		case visiting:
			i := slices.Index(path, f)
			return fieldErr(fmt.Errorf("dependsOn: cycle %s", strings.Join(append(slices.Clone(path[i:]), f), " -> ")), "dependsOn", path[i])
		}
		state[f] = visiting
		path = append(path, f)
		for _, d := range deps[f] {
			if err := visit(d); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[f] = done
		return nil
	}
	for _, f := range files {
		if err := visit(f); err != nil {
			return err
		}
	}
	return nil
}

// selectorString converts a label selector for list and watch requests.
func selectorString(ls *metav1.LabelSelector) (string, error) {
	if ls == nil {
		return "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return "", err
	}
	return sel.String(), nil
}

// LookupSelector is a lookup's Selector as a string ("" for every object).
func (l LookupSpec) LookupSelector() string {
	s, _ := selectorString(l.Selector) // checked at load
	return s
}

// builtInGroups are the API groups of Kubernetes' own kinds. Custom
// resource groups need a dot and are not reserved *.k8s.io groups (some,
// like gateway.networking.k8s.io, are CRDs with an approval: they are not
// in this list).
var builtInGroups = map[string]bool{
	"": true, "apps": true, "batch": true, "autoscaling": true, "policy": true,
	"admissionregistration.k8s.io": true, "apiextensions.k8s.io": true, "apiregistration.k8s.io": true,
	"authentication.k8s.io": true, "authorization.k8s.io": true, "certificates.k8s.io": true,
	"coordination.k8s.io": true, "discovery.k8s.io": true, "events.k8s.io": true,
	"flowcontrol.apiserver.k8s.io": true, "internal.apiserver.k8s.io": true, "networking.k8s.io": true,
	"node.k8s.io": true, "rbac.authorization.k8s.io": true, "resource.k8s.io": true,
	"scheduling.k8s.io": true, "storage.k8s.io": true, "storagemigration.k8s.io": true,
}

// BuiltInGroup reports whether group holds Kubernetes' own kinds, whose
// status the operator never writes. A kind's is Kind.BuiltIn.
func BuiltInGroup(group string) bool { return builtInGroups[group] }

// BuiltIn reports whether the kind is one of Kubernetes' own: its status
// is Kubernetes' controllers' (the operator never writes it, a folder has
// no status.yaml), and so is its schema (no CRD of the folder's).
func (k *Kind) BuiltIn() bool { return BuiltInGroup(k.GVK.Group) }

// builtIn is BuiltIn of the kind s serves, before it is compiled.
func (s *Spec) builtIn() bool { return BuiltInGroup(s.GroupKind().Group) }

func validAPIVersionKind(apiVersion, kind string) error {
	if apiVersion == "" || kind == "" {
		return errors.New("apiVersion and kind are required")
	}
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		return fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	return nil
}
