// Package render is the pure templating step of the operator: it turns one
// template folder and one custom resource into the child manifests to apply
// and, once those are applied, into the resource's .status.
//
// It sits between the catalog, which finds the folders, and the apply step,
// which talks to the cluster:
//
//	catalog: reads kind.yaml, calls Parse once per folder
//	  -> render (this package): Set.Children(object) -> manifests
//	  -> apply: server-side applies the manifests, collects the live children
//	  -> render (this package): Set.Status(object + live children) -> .status
//	  -> status writer: patches .status, requeues after Result.RequeueAfter
//
// The package imports no client and does no I/O (Parse takes the files'
// text):
// cluster reads go through the caller's [Lookup] (informer caches) and the
// clock through [Input.Now], so a render is a function of its Input and can
// run offline, as `helm template` does.
//
// The design follows Helm's pkg/engine, so that chart authors find the same
// behaviour: every file of a folder is parsed into one template set so that
// named templates are shared, files named `_*` are helpers with no output,
// missing keys read as empty ("<no value>" is removed from the output),
// sprig's functions are available (bounded, see below) except env and expandenv, and Helm's
// include, tpl, required, toYaml, toYamlPretty, fromYaml, toJson, fromJson,
// toToml, fromToml and lookup
// behave as in Helm.
//
// # What templates see
//
// The dot is a map: .Object (the whole resource), .Name, .Namespace, .Spec,
// .Status, .Labels, .Annotations, and in status.yaml .Children, the live
// children by kind then name:
//
//	readyReplicas: {{ (index .Children.Deployment .Name).status.readyReplicas }}
//	readyReplicas: {{ dig "Deployment" .Name "status" "readyReplicas" 0 .Children }}
//
// The maps are never nil, so .Spec.size reads as empty on an object without
// spec; the second form also survives a kind with no children.
//
// Besides sprig and Helm's functions, templates have lookupSelect (lookup
// with a label selector), requeueAfter (render again after a duration: the
// soonest call wins, see Result.RequeueAfter) and durationUntil (from
// Input.Now to a time), which compose:
//
//	{{ requeueAfter (durationUntil .Spec.expiresAt) }}
//
// now returns Input.Now too, so a render reads a single clock.
//
// # Responsibilities
//
//   - Parse a folder's template files once (Parse), each by the role the
//     folder contract gives its name (engine/layout: *.yaml and *.yml
//     render children, status.yaml the status, `_*` files hold helpers,
//     kind.yaml and everything else are not templates), and report
//     template errors as *Error with file and line, so the caller can
//     surface them in a condition.
//   - Render each call in a clone of the parsed set with per-render functions
//     (include depth, lookup, requeueAfter, the clock) bound to the clone, so
//     one Set serves many goroutines and renders never share state.
//   - Present the object to templates as .Object, .Name, .Namespace, .Spec,
//     .Status, .Labels, .Annotations (and .Children for status.yaml), on a
//     deep copy so that templates can never mutate the caller's objects or
//     informer caches.
//   - Split child output into YAML documents, skip empty ones, decode the
//     rest as the API server would (whole numbers as int64; internal/fastyaml
//     reads the YAML templates print without yaml.v2's detour) and check that
//     each can be server-side applied (apiVersion, kind, metadata.name).
//   - Decode status.yaml into a mapping and collect the soonest requeueAfter.
//   - Hold every render to its Budget (budget.go): wall time, bytes
//     produced, manifests, calls, nesting and the work of one call,
//     counted by the render's meter (internal/budget), which every
//     function that allocates goes through with one helper: estimate,
//     refuse before the call, call, charge (budget.Bounded). The
//     parse trees are rewritten once so that loops and template calls pass
//     through the budget (guard.go: every range iteration checks the
//     deadline and is charged for what evaluating its body allocates).
//     Every function checks the deadline before it runs and is charged for
//     what it returns (funcguard.go); those that can build far more than
//     their input, copy it, or loop over it refuse before they allocate or
//     past a bound: strings (limits.go), printf (printf.go), lists and maps
//     (collections.go), splitting, joining and decoding (convert.go, with
//     YAML aliases counted by internal/fastyaml), uniq, without and has
//     (compare.go) and regular expressions (regex.go). A test lists every
//     other function with the reason it needs no more, so that a sprig
//     upgrade cannot add an unbounded one unnoticed. A render that still runs past its deadline
//     is abandoned: the caller always gets an answer within the timeout
//     plus a grace period, and the render stops at its next function call,
//     each call being bounded (render.go). While two abandoned renders of
//     one object still run, that object's renders are refused, not those
//     of the folder's other objects (runaway.go).
//   - Evaluate one expression over a value the same way (ParseExpr,
//     Expr.Eval: kind.yaml's readyWhen over a live child, engine/health):
//     the templates' functions, a Budget, abandoned past its deadline.
//   - Report what the callers' guards need: the files whose list lookups
//     came back empty, and the functions called whose results differ from
//     one call to the next.
//
// It does not read kind.yaml, apply anything, set owner references or
// labels on the manifests, or decide which children to prune: those belong
// to the callers.
package render
