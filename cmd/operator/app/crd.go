package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tmplop/operator/engine/crd"
)

type crdFlags struct {
	templates string
	out       string
}

// NewCRDCommand prints or writes the CustomResourceDefinition of each kind
// folder.
func NewCRDCommand() *cobra.Command {
	f := &crdFlags{}
	cmd := &cobra.Command{
		Use:   "crd --templates DIR [--out DIR]",
		Short: "Print or write the CustomResourceDefinition of each kind folder",
		Long: `crd reads the kind folders of --templates without a cluster and makes each one's
CustomResourceDefinition: from the short schema of its kind.yaml (spec, status, printerColumns,
validation), or its own crd.yaml. Without --out it prints them as one YAML stream, in folder
order; with --out it writes <out>/<folder>.yaml for each. A folder with neither is skipped with
a warning; a folder that does not load, or whose schema is wrong, is an error and nothing is
written. The output is deterministic: regenerate it whenever a kind.yaml changes. See
docs/schema.md.`,
		Example: "  operator crd --templates templates --out crds\n  operator crd --templates templates/memcached | kubectl apply --server-side -f -",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runCRD(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.templates, "templates", "", "directory holding one folder per kind, or one kind folder (required)")
	fl.StringVar(&f.out, "out", "", "directory to write <folder>.yaml files into, instead of printing them")
	_ = cmd.MarkFlagRequired("templates")
	return cmd
}

func runCRD(cmd *cobra.Command, f *crdFlags) error {
	files, warnings, err := crd.Files(f.templates)
	for _, w := range warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "Warning:", w)
	}
	if err != nil {
		return err
	}
	if f.out == "" {
		var b bytes.Buffer
		for i, file := range files {
			if i > 0 {
				b.WriteString("---\n")
			}
			b.Write(file.Data)
		}
		_, err := cmd.OutOrStdout().Write(b.Bytes())
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	for _, file := range files {
		if err := os.WriteFile(filepath.Join(f.out, file.Folder+".yaml"), file.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
