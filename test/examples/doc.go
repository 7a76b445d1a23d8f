// Package examples tests the example kinds this repository ships, offline
// and in milliseconds: every folder of templates/ with its CRD in crds/
// and its sample in examples/, through engine/render exactly as the
// operator renders them (the folder compiled by catalog.LoadKind, then
// Kind.Children and Kind.Status), with a fake render.Lookup for the
// informer caches and a fixed clock. It has no code of its own: only its tests (package
// examples_test). What they hold each shipped folder to:
//
//   - Its render (TestGolden): children and status of the sample, against
//     testdata/<folder>/golden.yaml; the children carry nothing the engine
//     sets and decode strictly into their Kubernetes types.
//   - Its status on a first reconcile with no children yet
//     (TestStatusWithoutChildren), and on a sample missing a field
//     (TestBadInput: a *render.Error naming the template's file and line).
//   - Its lookups: the fake refuses what kind.yaml does not declare and
//     what lies outside the parent's namespace (TestLookupsAreEnforced), so
//     the other tests' silence means the templates read only what they may.
//   - Its CRD (TestCRDs): the one kind.yaml's short schema generates, with
//     the engine's status fields and printer columns, and a sample it
//     accepts.
//   - Its delivery in-cluster (TestKustomizationListsEveryFile): every file
//     of the folder in templates/kustomization.yaml's ConfigMap.
//   - Per example, what its tutorial promises (TestAtSchedule, TestAtPhase,
//     TestMyDaemonSet*, TestAppServiceOptionalFields); BenchmarkRender is
//     one reconcile's render cost of each (docs/benchmarks.md).
//
// The examples in a real control plane are test/e2e's. After an intended
// change of a render, rewrite the golden files and review the diff:
//
//	go test ./test/examples -run TestGolden -update
package examples
