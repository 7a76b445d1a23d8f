package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/engine/lint"
)

type lintFlags struct {
	templates string
	examples  []string
	crds      []string
	output    string
	failOn    string
	// live: also round-trip the objects of the kubeconfig's cluster.
	live       bool
	kubeconfig string
}

// NewLintCommand checks kind folders without a cluster.
func NewLintCommand() *cobra.Command {
	f := &lintFlags{}
	cmd := &cobra.Command{
		Use:   "lint --templates DIR [--examples DIR] [--crds DIR] [-o text|json]",
		Short: "Check kind folders without a cluster: templates, renders against samples, children, status and CRDs",
		Long: `lint reports, without a cluster, what can be known about the kind folders of --templates before
the operator serves them: kind.yaml and template errors, renders of every child template and
status.yaml against each sample object of the folder's kind in --examples and against an object
with an empty spec (lookups read nothing), children that lack apiVersion, kind or a name, set
fields the engine owns, leave the object's namespace or are rendered twice, lookups of kinds
kind.yaml does not declare, and status fields or CRDs that would lose what status.yaml and the
engine write. One finding per line, file:line: severity code message (-o json: a JSON array).
The exit status is 1 when there is an error (or a finding as bad as --fail-on). Codes: docs/lint.md.

--live also reads the cluster of the kubeconfig, with get and list calls alone: for each kind
folder of several versions whose CRD is there, it lists the objects at the CRD's storage version
and converts each through every served version and back with the folder's conversion templates,
in this process. A failure is an LNT104 finding at the template's line, naming the object. What
was read is said on stderr, a line a kind.

--examples and --crds default to the examples and crds directories next to --templates, when
they exist.`,
		Example: "  operator lint --templates templates\n  operator lint --templates templates -o json\n  operator lint --templates templates --live",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runLint(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.templates, "templates", "templates", "directory holding one folder per kind, or one kind folder")
	fl.StringArrayVar(&f.examples, "examples", nil, "directory or file of sample objects (repeatable; default: examples next to --templates if it exists)")
	fl.StringArrayVar(&f.crds, "crds", nil, "directory or file of CustomResourceDefinitions (repeatable; default: crds next to --templates if it exists)")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.StringVar(&f.failOn, "fail-on", "error", "exit 1 when a finding is this bad or worse: error, warning or info")
	fl.BoolVar(&f.live, "live", false, "also round-trip the objects in the cluster through every version of their folder, reading only")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file for --live (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	return cmd
}

func runLint(cmd *cobra.Command, f *lintFlags) error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("--output %q: want text or json", f.output)
	}
	failOn, err := lint.ParseSeverity(f.failOn)
	if err != nil {
		return fmt.Errorf("--fail-on: %w", err)
	}
	examples, crds := f.examples, f.crds
	if !cmd.Flags().Changed("examples") {
		examples = besideTemplates(f.templates, "examples")
	}
	if !cmd.Flags().Changed("crds") {
		crds = besideTemplates(f.templates, "crds")
	}
	files, findings := lint.ReadCRDFiles(crds...)
	found, err := lint.Run(cmd.Context(), lint.Options{Templates: f.templates, Examples: examples, CRDs: crdSource(files)})
	if err != nil {
		return err
	}
	findings = append(findings, found...)
	var liveErr error
	if f.live {
		var live []lint.Finding
		live, liveErr = runLive(cmd, f)
		findings = append(findings, live...)
	} else if cmd.Flags().Changed("kubeconfig") {
		return fmt.Errorf("--kubeconfig is for --live")
	}
	findings = lint.Sort(findings)
	out := cmd.OutOrStdout()
	if f.output == "json" {
		err = lint.WriteJSON(out, findings)
	} else {
		err = lint.WriteText(out, findings)
	}
	if err != nil {
		return err
	}
	if liveErr != nil {
		return liveErr
	}
	if n := lint.Count(findings, failOn); n > 0 {
		return &lintFailed{n: n, sev: failOn}
	}
	return nil
}

// runLive round-trips the objects of the kubeconfig's cluster (lint.Live)
// and says on stderr what it read. Its client is a dynamic one behind
// lint.Cluster, which gets and lists alone.
func runLive(cmd *cobra.Command, f *lintFlags) ([]lint.Finding, error) {
	cfg, _, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--live: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--live: %w", err)
	}
	found, kinds, err := lint.Live(cmd.Context(), lint.LiveOptions{Templates: f.templates, Cluster: lint.DynamicCluster(client)})
	if _, werr := io.WriteString(cmd.ErrOrStderr(), lint.LiveSummary(kinds)); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return found, fmt.Errorf("--live: %w", err)
	}
	return found, nil
}

// crdSource is where lint finds a kind's CRD: the folder's own (its
// crd.yaml, or the one generated from kind.yaml's schema), else the --crds
// files.
func crdSource(files *lint.CRDFiles) lint.CRDSource {
	return lint.Chain(lint.KindCRD(crd.ForKind, crd.ErrNoSchema), files)
}

// lintFailed is a lint with findings at --fail-on or worse.
type lintFailed struct {
	n   int
	sev lint.Severity
}

func (e *lintFailed) Error() string {
	if e.sev == lint.Error {
		return fmt.Sprintf("lint: %d error(s)", e.n)
	}
	return fmt.Sprintf("lint: %d finding(s) of severity %s or worse", e.n, e.sev)
}

// besideTemplates returns the directory name next to the templates
// directory (next to the folder's parent when templates is one kind
// folder), when it exists.
func besideTemplates(templates, name string) []string {
	root := templates
	if catalog.IsFolder(templates) {
		root = filepath.Dir(filepath.Clean(templates))
	}
	dir := filepath.Join(filepath.Dir(filepath.Clean(root)), name)
	if info, err := os.Stat(dir); err == nil && info.IsDir() {
		return []string{dir}
	}
	return nil
}
