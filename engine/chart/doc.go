// Package chart makes a Helm chart a kind folder: it loads the chart with
// Helm's own packages (pkg/chart/loader, pkg/chartutil), parses every
// template of the chart and of the subcharts it can enable into one
// render.Set, in Helm's parse order, and for each object builds what Helm's
// engine would give each template: .Values (the chart's values, the
// object's spec over them, the kind's overrideValues over everything),
// .Release, .Chart, .Capabilities, .Files, .Template and .Subcharts.
//
// It sits beside the plain folder format in the flow:
//
//	catalog: a folder with Chart.yaml -> chart.Load (this package)
//	  -> per object: Chart.Dots (values, scopes, enabled subcharts)
//	  -> render: Set.Children with Input.Dots
//	  -> Order (this package): hooks become apply order
//	  -> reconcile: plan, apply in that order, status
//
// What a folder's author or an object's author could make the operator do
// through Helm's packages is bounded here, since a kind folder may be any
// labelled ConfigMap:
//   - archive.go: a packaged chart and every subchart archive nested in it
//     unpack against one count (DefaultMaxUnpacked, run
//     --chart-max-unpacked), refused before what passes it is allocated;
//     Helm's loader never unpacks an archive itself.
//   - schema.go: values.schema.json is compiled once, at load, with no
//     loader: a schema that names a URL or a file is refused at its line,
//     where Helm's validation would fetch it at every render.
//   - work.go: what Dots does for an object (its values, Helm's copies of
//     them, the dependencies, the schema's validation) is the render's,
//     under the render's budget (render.Input.Spent).
//
// Rendering stays the engine's (engine/render): the same budgets, the same
// functions, lookup confined to the kinds declared. What a chart needs of
// Helm's storage (release Secrets, revisions) is not kept: the children are
// tracked as every folder's are (docs/helm.md).
package chart
