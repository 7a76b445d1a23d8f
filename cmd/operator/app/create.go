package app

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tmplop/operator/engine/scaffold"
)

// NewCreateCommand groups the scaffolding commands: `create kind`.
func NewCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Scaffold new things: create kind",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCreateKindCommand())
	return cmd
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
