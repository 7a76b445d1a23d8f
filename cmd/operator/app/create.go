package app

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tmplop/operator/engine/scaffold"
)

// NewCreateCommand groups the scaffolding commands: `create kind` and
// `create version`.
func NewCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Scaffold new things: create kind, create version",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCreateKindCommand(), newCreateVersionCommand())
	return cmd
}

// newCreateVersionCommand adds a version to an existing kind folder. A
// command of its own rather than a flag of `create kind`: it edits a
// folder that exists, from the folder's path and the version alone, where
// `create kind` makes a new one from a group and a kind and refuses one
// that exists.
func newCreateVersionCommand() *cobra.Command {
	o := scaffold.VersionOptions{}
	cmd := &cobra.Command{
		Use:   "version --folder DIR --version V [--hub]",
		Short: "Add a version to a kind folder, with its two conversion templates",
		Long: `create version adds an API version to the kind folder --folder (docs/versions.md). It lists
the version in kind.yaml's versions (made when absent, the current version first) and writes
the two conversion templates between it and the hub, convert.<from>.<to>.yaml, as identity
conversions with comments on what to edit. kind.yaml is edited in place: its comments, order
and blank lines stay.

Without --hub the new version is one more version, of the hub's schema (copied: edit it as the
version differs). With --hub it becomes the hub, what the templates see, and the version objects
are stored at: kind.yaml's apiVersion moves to it, its top-level spec is the new version's, and
the previous hub is listed with a copy of that spec (edit the new hub's as it evolves; the
operator migrates the stored objects, run --install-crds).

Nothing is overwritten: when a conversion template exists, nothing is written. The folder
written loads and lints as it is. A folder with a crd.yaml, a Helm chart, and --hub on a folder
that lists versions already are refused: add those versions by hand.`,
		Example: `  operator create version --folder templates/memcached --version v1 --hub
  operator create version --folder templates/memcached --version v1beta1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := scaffold.AddVersion(o)
			if err != nil {
				return err
			}
			return printVersionCreated(cmd.OutOrStdout(), o, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Folder, "folder", "", "the kind folder (required; e.g. templates/memcached)")
	fl.StringVar(&o.Version, "version", "", "the version to add (required; e.g. v1)")
	fl.BoolVar(&o.Hub, "hub", false, "make the new version the hub (kind.yaml's apiVersion, what the templates see) and the storage version")
	for _, f := range []string{"folder", "version"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// printVersionCreated lists the files written and what to do next.
func printVersionCreated(w io.Writer, o scaffold.VersionOptions, res *scaffold.VersionResult) error {
	var b strings.Builder
	if o.Hub {
		fmt.Fprintf(&b, "Added version %s to %s as the hub and storage version (the hub was %s):\n", o.Version, o.Folder, res.Previous)
	} else {
		fmt.Fprintf(&b, "Added version %s to %s (the hub is %s):\n", o.Version, o.Folder, res.Hub)
	}
	for i, f := range res.Files {
		what := "written"
		if i == 0 {
			what = "edited"
		}
		fmt.Fprintf(&b, "  %s (%s)\n", f.Path, what)
	}
	templates := filepath.Dir(filepath.Clean(o.Folder))
	fmt.Fprintf(&b, `
Next: edit the schemas in %[1]s/kind.yaml and the conversion templates, then
  operator crd --templates %[2]s --out crds   # the CRD file, now of several versions, if you keep one
  operator lint --templates %[2]s             # round-trips every sample through each version
  operator run --templates %[2]s --install-crds --webhook-bind-address :9443
See docs/versions.md.
`, o.Folder, templates)
	_, err := io.WriteString(w, b.String())
	return err
}

func newCreateKindCommand() *cobra.Command {
	o := scaffold.Options{}
	cmd := &cobra.Command{
		Use:   "kind --group G --version V --kind K",
		Short: "Scaffold a kind folder that runs as it is, with its CRD and a sample object",
		Long: `create kind writes a new kind folder, <dir>/<kind in lower case>/, that runs as it is: kind.yaml
with a short schema of spec and status fields, a Deployment template, and status.yaml, which
reports the Deployment's ready Pods. It also writes the CRD generated from that schema, as
operator crd would (<crds>/<folder>.yaml), and a sample object (<examples>/<folder>.yaml).
Every file is commented: edit them into your kind.

Nothing is overwritten: when any of the paths exists, nothing is written. See docs/create.md.`,
		Example: `  operator create kind --group demo.example.com --version v1alpha1 --kind WebApp
  operator create kind --group demo.example.com --version v1 --kind Site --namespaced=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := scaffold.Write(o)
			if err != nil {
				return err
			}
			return printCreated(cmd.OutOrStdout(), o, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Group, "group", "", "the kind's API group, a DNS subdomain with a dot (required; e.g. demo.example.com)")
	fl.StringVar(&o.Version, "version", "", "the kind's API version (required; e.g. v1alpha1)")
	fl.StringVar(&o.Kind, "kind", "", "the kind, UpperCamelCase (required; e.g. WebApp); the folder is its lower case")
	fl.StringVar(&o.Dir, "dir", "templates", "the templates directory, where the kind folder is written")
	fl.StringVar(&o.Examples, "examples", "examples", "directory of the sample object")
	fl.StringVar(&o.CRDs, "crds", "crds", "directory of the CRD")
	fl.BoolVar(&o.Namespaced, "namespaced", true, "a namespaced kind; --namespaced=false for a cluster-scoped one")
	for _, f := range []string{"group", "version", "kind"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// printCreated lists the files written and the commands of the loop.
func printCreated(w io.Writer, o scaffold.Options, res *scaffold.Result) error {
	scope := "namespaced"
	if !o.Namespaced {
		scope = "cluster-scoped"
	}
	folder := filepath.Join(o.Dir, o.Folder())
	var b strings.Builder
	fmt.Fprintf(&b, "Created kind %s (%s/%s, %s, resource %s):\n", o.Kind, o.Group, o.Version, scope, res.Plural)
	for _, f := range res.Files {
		fmt.Fprintf(&b, "  %s\n", f.Path)
	}
	crdFile := filepath.Join(o.CRDs, o.Folder()+".yaml")
	example := filepath.Join(o.Examples, o.Folder()+".yaml")
	fmt.Fprintf(&b, `
Next: edit %[1]s/kind.yaml (the schema) and the templates, then
  operator lint --templates %[2]s
  operator crd --templates %[2]s --out %[3]s   # after a schema edit: regenerates %[4]s
  operator run --templates %[2]s --install-crds   # installs the CRDs from kind.yaml, serves the kinds
  kubectl apply -f %[5]s
  kubectl get %[6]s
See docs/create.md.
`, folder, o.Dir, o.CRDs, crdFile, example, res.Plural)
	_, err := io.WriteString(w, b.String())
	return err
}
