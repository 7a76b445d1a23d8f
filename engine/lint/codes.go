package lint

import "github.com/tmplop/operator/engine/render"

// The finding codes. The hundreds say what a code is about: 0xx the
// folders and the files lint reads, 1xx renders, 2xx the children, 3xx
// the status and the CRD, 4xx lookups. A code keeps its meaning and its
// severity for good; docs/lint.md explains each one and how to fix it.
//
// The codes of the mistakes found where a folder is loaded are render's:
// the place that finds one makes it a *render.Error with its code.
const (
	CodeKindYAML        = render.CodeKindYAML // kind.yaml does not load
	CodeParse           = render.CodeParse    // a template does not parse
	CodeFolder          = render.CodeFolder   // the folder does not load for another reason
	CodeDuplicateKind   = "LNT004"            // two folders serve the same kind
	CodeDuplicateDefine = "LNT005"            // two files define the same template
	CodeInput           = render.CodeInput    // an examples or CRD file cannot be read
	CodeNoSample        = "LNT011"            // a folder has no sample
	CodeStraySample     = "LNT012"            // a sample no folder serves
	CodeNoFolders       = "LNT013"            // --templates holds no kind folder

	CodeEmptySpec        = "LNT100" // a render fails against an empty spec
	CodeRenderFailed     = "LNT101" // a render fails against a sample
	CodeBudget           = "LNT102" // a render exceeds its budget
	CodeNondeterministic = "LNT103" // a child renders differently every time
	CodeConversion       = "LNT104" // a conversion between the kind's versions fails or does not round-trip
	CodeBreaking         = "LNT105" // a breaking change between versions without a conversion
	CodeConverted        = "LNT106" // a breaking change between versions, which the conversion handles

	CodeManifest       = "LNT200" // a child the API server would refuse: no apiVersion, kind or name; labels not strings
	CodeNotYAML        = "LNT201" // a child template's output is not YAML mappings
	CodeEngineField    = "LNT202" // a child sets a field the engine sets
	CodeServerField    = "LNT203" // a child sets a field the API server sets
	CodeChildStatus    = "LNT204" // a child sets status
	CodeParentAnnot    = "LNT205" // a child sets the parent annotation
	CodePruneValue     = "LNT206" // a prune annotation other than disabled
	CodeOutside        = "LNT207" // a child outside the object's namespace
	CodeDuplicateChild = "LNT208" // two templates render the same child
	CodeComputedChild  = "LNT209" // a child kind operator rbac cannot read

	CodeStatusDropped  = "LNT300" // a status field the CRD schema drops
	CodeStatusType     = "LNT301" // a status field of the wrong type
	CodeStatusEngine   = "LNT302" // status.yaml renders what the engine owns
	CodeNoSubresource  = "LNT310" // the CRD has no status subresource
	CodeNoConditions   = "LNT311" // the CRD's status has no conditions or observedGeneration
	CodeConditionsList = "LNT312" // conditions is not a map list keyed by type
	CodeRequiredStatus = "LNT313" // the CRD's status has required fields
	CodeNoVersion      = "LNT314" // the CRD does not serve kind.yaml's version
	CodeNoCRD          = "LNT315" // no CRD found: schema checks skipped
	CodeReservedGroup  = "LNT316" // the folder's CRD is in a group run --install-crds refuses

	CodeUndeclaredLookup = "LNT400" // a literal lookup of an undeclared kind
	CodeComputedLookup   = "LNT401" // a lookup whose kind is computed
	CodeLookupRefused    = "LNT402" // a lookup refused during a render
	CodeUnusedLookup     = "LNT403" // a declared lookup no template reads
	CodeLookupNamespace  = "LNT404" // a lookup in a fixed namespace or all namespaces
)

// CodeInfo describes one code.
type CodeInfo struct {
	Code     string
	Severity Severity
	Summary  string
}

// Codes lists every code lint reports, in order.
var Codes = []CodeInfo{
	{CodeKindYAML, Error, "kind.yaml does not load"},
	{CodeParse, Error, "a template does not parse"},
	{CodeFolder, Error, "the folder does not load"},
	{CodeDuplicateKind, Error, "two folders serve the same kind"},
	{CodeDuplicateDefine, Warning, "two files define the same template"},
	{CodeInput, Error, "an examples or CRD file cannot be read"},
	{CodeNoSample, Info, "no sample object for the folder"},
	{CodeStraySample, Info, "a sample no folder serves"},
	{CodeNoFolders, Error, "no kind folder"},

	{CodeEmptySpec, Info, "a render fails against an empty spec"},
	{CodeRenderFailed, Error, "a render fails against a sample"},
	{CodeBudget, Error, "a render exceeds its budget"},
	{CodeNondeterministic, Info, "a child renders differently every time"},
	{CodeConversion, Error, "a conversion fails or does not round-trip"},
	{CodeBreaking, Error, "a breaking change between versions without a conversion"},
	{CodeConverted, Info, "a breaking change between versions, which the conversion handles"},

	{CodeManifest, Error, "a child without apiVersion, kind or metadata.name"},
	{CodeNotYAML, Error, "a child template's output is not YAML mappings"},
	{CodeEngineField, Error, "a child sets a field the engine sets"},
	{CodeServerField, Error, "a child sets a field the API server sets"},
	{CodeChildStatus, Warning, "a child sets status"},
	{CodeParentAnnot, Warning, "a child sets the operator.tmplop.io/parent annotation"},
	{CodePruneValue, Warning, "a prune annotation that is not disabled"},
	{CodeOutside, Error, "a child outside the object's namespace"},
	{CodeDuplicateChild, Error, "two templates render the same child"},
	{CodeComputedChild, Warning, "a child kind operator rbac cannot read"},

	{CodeStatusDropped, Error, "a status field the CRD schema drops"},
	{CodeStatusType, Error, "a status field of the wrong type"},
	{CodeStatusEngine, Error, "status.yaml renders a field the engine owns"},
	{CodeNoSubresource, Error, "the CRD has no status subresource"},
	{CodeNoConditions, Error, "the CRD's status has no conditions or observedGeneration"},
	{CodeConditionsList, Warning, "conditions is not a map list keyed by type"},
	{CodeRequiredStatus, Error, "the CRD's status has required fields"},
	{CodeNoVersion, Error, "the CRD does not serve kind.yaml's version"},
	{CodeNoCRD, Info, "no CRD found: schema checks skipped"},
	{CodeReservedGroup, Warning, "the folder's CRD is in a Kubernetes group"},

	{CodeUndeclaredLookup, Error, "a lookup of a kind kind.yaml does not declare"},
	{CodeComputedLookup, Warning, "a lookup whose kind is computed"},
	{CodeLookupRefused, Error, "a lookup refused during a render"},
	{CodeUnusedLookup, Info, "a declared lookup kind no template reads"},
	{CodeLookupNamespace, Warning, "a lookup in a fixed namespace or in all namespaces"},
}

// severityOf is each code's severity.
var severityOf = func() map[string]Severity {
	m := make(map[string]Severity, len(Codes))
	for _, c := range Codes {
		m[c.Code] = c.Severity
	}
	return m
}()
