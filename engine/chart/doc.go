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
//	  -> Chart.Order (this package): hooks become apply order
//	  -> reconcile: plan, apply in that order, status
//
// Rendering stays the engine's (engine/render): the same budgets, the same
// functions, lookup confined to the kinds declared. What a chart needs of
// Helm's storage (release Secrets, revisions) is not kept: the children are
// tracked as every folder's are (docs/helm.md).
package chart
