package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// version is set at build time (-ldflags -X).
var version = "dev"

// Main runs the command line and returns the process exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := NewRootCommand(os.Stdout, os.Stderr)
	err := cmd.ExecuteContext(ctx)
	// A command with an exit code of its own (plan: 1 for changes, 2 for
	// an error, as kubectl diff) may have nothing to print.
	var ec *exitCode
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintln(os.Stderr, "Error:", ec.err)
		}
		return ec.code
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// NewRootCommand returns the operator command with its sub-commands.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "operator",
		Short:         "A Kubernetes operator driven by template folders",
		Long:          "operator watches custom resources and, for each object, renders the child manifests of its kind's template folder, applies them with server-side apply and writes the object's status.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	// klog's -v and friends, as every Kubernetes component has them.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	cmd.PersistentFlags().AddGoFlag(fs.Lookup("v"))
	cmd.PersistentFlags().AddGoFlag(fs.Lookup("vmodule"))
	cmd.AddCommand(NewRunCommand(), NewRenderCommand(out), NewVersionCommand(out), NewRBACCommand(), NewCreateCommand(),
		NewLintCommand(), NewCRDCommand(), NewPlanCommand(out, errOut),
		NewRolloutCommand(out, errOut), NewMigrateCommand(out))
	return cmd
}
