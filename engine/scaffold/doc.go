// Package scaffold writes a new kind folder that runs as it is: kind.yaml
// with a short schema, a child template and status.yaml, the CRD generated
// from that schema, and a sample object. It is `operator create kind`
// (docs/create.md), the first step of a template author's loop:
//
//	create kind (this package) -> lint -> run --install-crds -> kubectl apply the sample
//
// It sits beside the pipeline, not in it: nothing of a running operator
// calls it, and it calls the catalog and engine/crd exactly as `run` and
// `operator crd` do, so that what it writes is what they read.
//
// # Responsibilities
//
//   - Validate the names before anything is made (Options.Validate): a
//     group that is a DNS subdomain with a dot and not Kubernetes' own, an
//     API version (v1, v1beta1, v1alpha1), an UpperCamelCase kind short
//     enough that the folder, the plural and the sample's name stay DNS
//     labels.
//   - Render the folder from files/*.tmpl (kind.yaml, _helpers.tpl,
//     deployment.yaml, status.yaml), for a namespaced or a cluster-scoped
//     kind. The scaffold's own templates use [[ ]] delimiters, so the {{ }}
//     of the folder's templates pass through as text.
//   - Prove the folder before writing it: it is loaded by the catalog as
//     the operator loads a folder, and its kind.yaml must make a CRD with
//     engine/crd; the CRD file is that CRD, with the header `operator crd`
//     writes (Files).
//   - Write nothing over anything (Write): every path is checked first and
//     an existing one refuses the whole scaffold (*ExistsError); files are
//     created exclusively, so one that appears meanwhile is not overwritten
//     either.
//   - Add a version to an existing folder (AddVersion, `operator create
//     version`): list it in kind.yaml's versions, or make it the hub, by
//     splicing text where go.yaml.in/yaml/v3's nodes say (every other byte
//     of kind.yaml stays; the result is decoded and compared with the
//     original), and write the two identity conversion templates between
//     it and the hub; the folder must load with the version before
//     anything is written, and nothing is written over (*ExistsError).
//
// # Workflow
//
// Files(o) validates, renders the folder's files, loads them as a kind,
// generates the CRD, renders the sample, and returns them all (folder,
// CRD, sample) with the plural and the CRD's name, writing nothing; the
// command prints that list and what to run next. Write(o) is Files then the
// checks and the writes. The golden files of testdata/ hold each scope's
// output.
package scaffold
