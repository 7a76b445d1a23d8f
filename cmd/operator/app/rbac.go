package app

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tmplop/operator/engine/rbac"
)

type rbacFlags struct {
	templates      string
	crds           []string
	namespace      string
	serviceAccount string
	defaultAccount string
	fieldManager   string
	name           string
	output         string
	installCRDs    bool
	webhook        bool
	webhookSecret  string
	plan           bool
	planDryRun     bool
}

// defaultCRDs is read by --crds when it is not given and it exists.
const defaultCRDs = "crds"

// NewRBACCommand prints the least-privilege RBAC of a templates directory.
func NewRBACCommand() *cobra.Command {
	f := &rbacFlags{}
	cmd := &cobra.Command{
		Use:   "rbac --templates DIR",
		Short: "Print the least-privilege RBAC that serving exactly these kind folders takes",
		Long: `rbac reads the kind folders of --templates without a cluster and prints the ClusterRoles,
Roles, bindings and ServiceAccounts the operator needs to serve exactly them: the watched kinds,
their status and finalizers, every kind a child template can render (read from the templates'
text), the lookups, and the operator's own records. Kinds with serviceAccountName get a role of
their own, bound to that account, and the operator only the right to impersonate it. With
--default-service-account, every other kind gets an account of its own too (<name>-kind-<folder>,
which agrees to serve the kind), and the default account none at all: a folder added later runs as
it and can do nothing until it is given an account. See docs/rbac.md.

Resources of custom kinds are read from the CRDs of --crds; of built-in kinds, from client-go's
scheme. The output is deterministic: regenerate it whenever the folders change.`,
		Example: "  operator rbac --templates templates --crds crds > deploy/rbac.yaml",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runRBAC(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.templates, "templates", "", "directory holding one folder per kind, or one kind folder (required)")
	fl.StringArrayVar(&f.crds, "crds", nil, "directory of CustomResourceDefinition files, for the resources of custom kinds (repeatable; default: "+defaultCRDs+" if it exists)")
	fl.StringVar(&f.namespace, "namespace", rbac.DefaultNamespace, "the operator's namespace")
	fl.StringVar(&f.serviceAccount, "service-account", rbac.DefaultServiceAccount, "the operator's ServiceAccount")
	fl.StringVar(&f.defaultAccount, "default-service-account", "", "run --default-service-account: the account of every kind no account agrees to serve, generated with no right; each folder without a serviceAccountName gets an account of its own with its rules")
	fl.StringVar(&f.fieldManager, "field-manager", rbac.DefaultFieldManager, "the operator's run --field-manager, which names its inventory ConfigMap")
	fl.StringVar(&f.name, "name", rbac.DefaultName, "name of the operator's roles and bindings, and prefix of the per-kind ones")
	fl.StringVarP(&f.output, "output", "o", "yaml", "output format (yaml)")
	fl.BoolVar(&f.installCRDs, "install-crds", false, "also grant what run --install-crds needs: get and patch on exactly these folders' CRDs, and create")
	fl.BoolVar(&f.webhook, "webhook", false, "also grant what run --webhook-bind-address without --webhook-cert-dir needs even when no folder has several versions: the Secret of its namespace (--webhook-secret), by name, and create")
	fl.StringVar(&f.webhookSecret, "webhook-secret", rbac.WebhookSecretName, "run's --webhook-secret: the name of the Secret of the webhook's certificate")
	fl.BoolVar(&f.plan, "plan", false, "print instead the read-only roles `operator plan` needs over these folders (a ClusterRole and the inventory's Role, unbound): its changed children are then compared locally")
	fl.BoolVar(&f.planDryRun, "plan-dry-run", false, "as --plan, with the create and patch that its dry-run applies need (RBAC cannot grant a dry-run alone)")
	_ = cmd.MarkFlagRequired("templates")
	return cmd
}

func runRBAC(cmd *cobra.Command, f *rbacFlags) error {
	if f.output != "yaml" {
		return fmt.Errorf("--output %q: only yaml is supported", f.output)
	}
	crds := f.crds
	if !cmd.Flags().Changed("crds") {
		if info, err := os.Stat(defaultCRDs); err == nil && info.IsDir() {
			crds = []string{defaultCRDs}
		}
	}
	errOut := cmd.ErrOrStderr()
	out, err := rbac.Generate(rbac.Options{
		Templates: f.templates, CRDs: crds, Namespace: f.namespace, ServiceAccount: f.serviceAccount, Name: f.name,
		DefaultServiceAccount: f.defaultAccount, FieldManager: f.fieldManager, InstallCRDs: f.installCRDs, Webhook: f.webhook, WebhookSecret: f.webhookSecret,
		Plan: f.plan, PlanDryRun: f.planDryRun,
		Warn: func(msg string) { fmt.Fprintln(errOut, "Warning:", msg) },
	})
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}
