package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/controller"
)

type runFlags struct {
	templates    string
	kubeconfig   string
	namespace    string
	fieldManager string
	qps          float32
	burst        int
	reload       time.Duration
}

// NewRunCommand runs the operator until SIGINT or SIGTERM.
func NewRunCommand() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run --templates DIR",
		Short: "Watch the kinds of a templates directory and reconcile their objects",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return run(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.templates, "templates", "templates", "directory holding one folder per kind")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	fl.StringVar(&f.namespace, "namespace", "", "watch only this namespace (default: all)")
	fl.StringVar(&f.fieldManager, "field-manager", "operator", "server-side apply field manager, also the children's app.kubernetes.io/managed-by label")
	// client-go's 5/10 starve a controller that applies several children
	// per object; these match what kube-controller-manager uses per client.
	fl.Float32Var(&f.qps, "qps", 50, "queries per second to the API server")
	fl.IntVar(&f.burst, "burst", 100, "burst of queries to the API server")
	fl.DurationVar(&f.reload, "reload-interval", 5*time.Second, "how often to look for added, changed or removed kind folders (0: never)")
	return cmd
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load client config: %w", err)
	}
	return cfg, nil
}

func run(cmd *cobra.Command, f *runFlags) error {
	ctx := klog.NewContext(cmd.Context(), klog.Background())
	log := klog.FromContext(ctx)
	kinds, skipped, err := catalog.Load(f.templates)
	if err != nil {
		return err
	}
	if len(kinds) == 0 {
		errs := []error{fmt.Errorf("no valid kind folder in %s", f.templates)}
		for _, s := range skipped {
			errs = append(errs, s)
		}
		return errors.Join(errs...)
	}
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	cfg.UserAgent = "operator/" + version

	recorder, stopEvents, err := controller.NewEventRecorder(ctx, cfg, f.fieldManager)
	if err != nil {
		return err
	}
	defer stopEvents()
	mgr, err := controller.NewManager(ctx, cfg, controller.Options{
		FieldManager: f.fieldManager, Namespace: f.namespace, Recorder: recorder,
	})
	if err != nil {
		return err
	}
	log.Info("Starting", "templates", f.templates, "host", cfg.Host, "namespace", f.namespace, "fieldManager", f.fieldManager)
	if err := mgr.Sync(ctx, f.templates); err != nil {
		return err
	}
	if f.reload > 0 {
		go mgr.Watch(ctx, f.templates, f.reload)
	}
	<-ctx.Done()
	log.Info("Shutting down: draining in-flight reconciles")
	mgr.Wait()
	return nil
}
