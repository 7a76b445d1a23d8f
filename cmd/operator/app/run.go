package app

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
)

type runFlags struct {
	templates      string
	kubeconfig     string
	namespace      string
	stateNamespace string
	fieldManager   string
	qps            float32
	compression    bool
	burst          int
	reload         time.Duration
	budget         render.Budget
	folderLimits   catalog.Limits
	minRequeue     time.Duration
	drainTimeout   time.Duration
	pruneDelay     time.Duration
	cpuProfile     string
	memProfile     string
	configMaps     string
	defaultAccount string
	installCRDs    bool
	leader         leaderFlags
	shard          shardFlags
	serve          serveFlags
	webhook        webhookFlags
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
	fl.StringVar(&f.templates, "templates", "templates", "directory holding one folder per kind (not read when only --configmap-selector is given)")
	fl.StringVar(&f.configMaps, "configmap-selector", "", "label selector of the ConfigMaps in the operator's namespace (--state-namespace) that each hold one kind folder, files as keys; watched, so that applying or deleting one starts, changes or stops its kind")
	fl.StringVar(&f.defaultAccount, "default-service-account", "", "ServiceAccount of --state-namespace that every kind without an account of its own impersonates, so that no kind folder runs with the operator's own rights; a kind's own account is the one kind.yaml serviceAccountName names, else the one account of --state-namespace whose annotation operator.tmplop.io/serves lists the kind (default: none, kinds without serviceAccountName run as the operator)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	fl.StringVar(&f.namespace, "namespace", "", "watch only this namespace (default: all)")
	fl.StringVar(&f.fieldManager, "field-manager", "operator", "server-side apply field manager, also the children's app.kubernetes.io/managed-by label")
	// No client-side rate limit by default: the workers bound how many
	// requests are in flight (one each), and the API server's Priority and
	// Fairness is what shares its capacity between clients. A client-side
	// limit only made the operator slower than the server (docs/benchmarks.md).
	fl.Float32Var(&f.qps, "qps", -1, "client-side limit of queries per second to the API server (-1: none)")
	fl.IntVar(&f.burst, "burst", 0, "burst of queries above --qps (with --qps > 0)")
	// Uncompressed by default: an operator runs next to its API server,
	// where decompressing every watch stream cost it 5.7% of its CPU, and
	// kube-apiserver the compression (docs/performance.md).
	fl.BoolVar(&f.compression, "api-compression", false, "ask the API server for gzip-compressed responses (for an API server across a slow link)")
	fl.DurationVar(&f.reload, "reload-interval", controller.DefaultReloadInterval, "how often to look again for added, changed or removed kind folders, a safety net behind the file events of --templates and the watch of --configmap-selector (0: never); when the templates directory cannot be watched and this flag is not given: 5s")
	fl.StringVar(&f.stateNamespace, "state-namespace", "", "namespace of the operator's own records (default: the Pod's namespace in-cluster, else the kubeconfig context's, else default)")
	fl.DurationVar(&f.budget.Timeout, "render-timeout", render.DefaultTimeout, "wall time of one render; a render that outlives it is abandoned and reported")
	fl.Int64Var(&f.budget.MaxOutputBytes, "render-max-output", render.DefaultMaxOutputBytes, "bytes one render may produce (output, include and tpl results, function results)")
	fl.IntVar(&f.budget.MaxManifests, "render-max-manifests", render.DefaultMaxManifests, "child manifests of one object")
	fl.IntVar(&f.budget.MaxCalls, "render-max-calls", render.DefaultMaxCalls, "include, tpl and template calls of one render")
	fl.Int64Var(&f.folderLimits.MaxUnpacked, "chart-max-unpacked", chart.DefaultMaxUnpacked, "bytes a kind folder's packaged chart may unpack to, its nested subchart archives (charts/*.tgz) included; a chart past it is refused before more is unpacked (docs/helm.md)")
	fl.DurationVar(&f.minRequeue, "min-requeue", controller.DefaultMinRequeue, "shortest requeueAfter honoured")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", controller.DefaultDrainTimeout, "on SIGTERM, how long in-flight reconciles may finish before they are canceled")
	fl.DurationVar(&f.pruneDelay, "prune-confirm-delay", reconcile.DefaultPruneConfirmDelay, "how long a prune that would delete most of an object's children waits for a second render to agree")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the whole run to this file")
	_ = fl.MarkHidden("cpu-profile")
	fl.StringVar(&f.memProfile, "mem-profile", "", "write a Go heap profile to this file when the run is asked to stop, before the drain")
	_ = fl.MarkHidden("mem-profile")
	fl.BoolVar(&f.installCRDs, "install-crds", false, "before a kind starts or restarts, server-side apply its folder's CRD (crd.yaml, or generated from kind.yaml's schema) and wait until it is Established; a change that drops a served or stored version, or removes a field a stored object sets, is refused (docs/live.md)")
	addLeaderFlags(fl, &f.leader)
	addShardFlags(fl, &f.shard)
	addServeFlags(fl, &f.serve)
	addWebhookFlags(fl, &f.webhook)
	return cmd
}

// restConfig loads the client config, and the namespace the operator runs
// in: the service account's in a Pod, the context's with a kubeconfig.
func restConfig(kubeconfig string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("load client config: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

// setMemoryLimit sets the Go runtime's soft memory limit to 90% of the
// container's, unless GOMEMLIMIT is set: the garbage collector then works
// harder near the limit instead of letting the kernel kill the process.
func setMemoryLimit(log klog.Logger) {
	limit, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case err != nil:
		log.V(1).Info("No container memory limit found; Go memory limit unchanged", "err", err.Error())
	case limit < math.MaxInt64:
		log.Info("Go memory limit set from the container's", "bytes", limit)
	}
}

func run(cmd *cobra.Command, f *runFlags) error {
	ctx := klog.NewContext(cmd.Context(), klog.Background())
	log := klog.FromContext(ctx)
	// A templates directory is read when it is asked for, or when it is
	// the only source; ConfigMaps alone is the in-cluster way.
	if f.folderLimits.MaxUnpacked <= 0 {
		return fmt.Errorf("--chart-max-unpacked must be positive, got %d", f.folderLimits.MaxUnpacked)
	}
	useDir := f.configMaps == "" || cmd.Flags().Changed("templates")
	if useDir {
		// The folders are compiled by the first sync; here only whether
		// the directory can be read, and holds any.
		srcs, err := catalog.Sources(f.templates)
		if err != nil {
			return err
		}
		if len(srcs) == 0 {
			// Served as they appear; broken folders are logged by the sync.
			log.Info(fmt.Sprintf("No kind folder yet in %s; waiting for one", f.templates))
		}
	}
	setMemoryLimit(log)
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	cfg, client, err := connect(f)
	if err != nil {
		return err
	}
	recorder, stopEvents := controller.NewEventRecorderForClient(ctx, client, f.fieldManager)
	defer stopEvents()
	var ring *sharding
	if f.shard.enabled {
		if ring, err = joinRing(ctx, cfg, f); err != nil {
			return err
		}
		// Left after the drain below (defers run after it).
		defer ring.leave()
	}
	// The conversion webhook serves before any folder loads: a CRD of
	// several versions names it as soon as it is installed.
	conv := newConverters(f.budget)
	wh, err := startWebhook(ctx, f.webhook, client, f.stateNamespace, conv)
	if err != nil {
		return err
	}
	if wh != nil {
		defer wh.server.Stop()
	}
	var installer *versionedInstaller
	if f.installCRDs {
		installer = newVersionedInstaller(ctx, client, recorder, wh, f.webhook.migrationRate)
	}
	mgr, err := newManager(ctx, client, recorder, ring, f, conv, installer)
	if err != nil {
		return err
	}
	if installer != nil {
		go installer.reinjectCA(ctx, conv, mgr.Leading)
	}
	stopServing, err := startServing(ctx, cfg, f.serve, mgr)
	if err != nil {
		return err
	}
	defer stopServing()
	sources, err := folderSources(ctx, cmd, f, mgr, recorder)
	if err != nil {
		return err
	}
	log.Info("Starting", "templates", templatesShown(useDir, f.templates), "configMapSelector", f.configMaps, "host", cfg.Host,
		"namespace", f.namespace, "fieldManager", f.fieldManager, "stateNamespace", f.stateNamespace,
		"leaderElection", f.leader.enabled, "sharding", f.shard.enabled, "defaultServiceAccount", f.defaultAccount, "protectedNamespaces", protectedNamespaces(f), "renderBudget", fmt.Sprintf("%+v", f.budget.WithDefaults()), "chartMaxUnpacked", f.folderLimits.MaxUnpacked)
	if err := mgr.SyncFolders(ctx, sources...); err != nil {
		return err
	}
	go mgr.Watch(ctx, f.reload, sources...)
	if f.leader.enabled {
		stopElection, err := elect(ctx, cfg, f, mgr)
		if err != nil {
			return err
		}
		// Released after the drain below: the next leader starts as soon
		// as this one has stopped writing, not a lease duration later.
		defer stopElection()
	}
	<-ctx.Done()
	// The heap as it serves, caches whole: the drain below releases them.
	profileErr := writeHeapProfile(f.memProfile)
	log.Info("Shutting down: draining in-flight reconciles", "drainTimeout", f.drainTimeout)
	mgr.Wait()
	log.Info("Stopped")
	return profileErr
}

// connect loads the client config and makes the one client every call of
// the engine goes through (kube.Client). The state namespace defaults to
// the one the operator runs in.
func connect(f *runFlags) (*rest.Config, *kube.Client, error) {
	cfg, ownNamespace, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	if f.stateNamespace == "" {
		f.stateNamespace = ownNamespace
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	cfg.DisableCompression = !f.compression
	cfg.UserAgent = "operator/" + version
	client, err := kube.New(cfg, f.fieldManager)
	if err != nil {
		return nil, nil, err
	}
	return cfg, client, nil
}

// newManager is the Manager of the run's flags, with the CRD installer of
// --install-crds.
func newManager(ctx context.Context, client *kube.Client, recorder record.EventRecorder, ring *sharding, f *runFlags, conv *converters, installer *versionedInstaller) (*controller.Manager, error) {
	var installCRD func(context.Context, *catalog.Kind) error
	if installer != nil {
		installCRD = installer.install
	}
	if f.defaultAccount != "" {
		if errs := validation.IsDNS1123Subdomain(f.defaultAccount); len(errs) > 0 {
			return nil, fmt.Errorf("--default-service-account %q: %s", f.defaultAccount, strings.Join(errs, "; "))
		}
	}
	if f.leader.namespace == "" {
		f.leader.namespace = f.stateNamespace
	}
	var sharded *controller.Sharding
	if ring != nil {
		sharded = ring.opts
	}
	return controller.NewManagerForClient(ctx, client, controller.Options{
		FieldManager: f.fieldManager, Namespace: f.namespace, StateNamespace: f.stateNamespace, Recorder: recorder,
		Protected: protectedNamespaces(f), DefaultServiceAccount: f.defaultAccount,
		Budget: f.budget, FolderLimits: f.folderLimits, MinRequeue: f.minRequeue, DrainTimeout: f.drainTimeout, PruneConfirmDelay: f.pruneDelay,
		Standby: f.leader.enabled, InstallCRD: installCRD, Loaded: conv.loaded, Sharding: sharded,
	})
}

// folderSources are the kind folders' sources: the templates directory
// (watched for file events, else polled) and the labelled ConfigMaps,
// listed before it returns.
func folderSources(ctx context.Context, cmd *cobra.Command, f *runFlags, mgr *controller.Manager, recorder record.EventRecorder) ([]controller.Folders, error) {
	var sources []controller.Folders
	if f.configMaps == "" || cmd.Flags().Changed("templates") {
		w, err := controller.WatchDir(ctx, f.templates)
		if err != nil {
			if !cmd.Flags().Changed("reload-interval") {
				f.reload = controller.PollReloadInterval
			}
			klog.FromContext(ctx).Error(err, "No file events for the templates directory; polling it instead", "reloadInterval", f.reload.String())
			sources = append(sources, controller.Dir(f.templates))
		} else {
			sources = append(sources, w)
		}
	}
	if f.configMaps != "" {
		if _, err := labels.Parse(f.configMaps); err != nil {
			return nil, fmt.Errorf("--configmap-selector: %w", err)
		}
		cms := controller.NewConfigMapFolders(mgr, f.stateNamespace, f.configMaps, recorder)
		if err := cms.Start(ctx); err != nil {
			return nil, fmt.Errorf("watch the kind folders' ConfigMaps in %s: %w", f.stateNamespace, err)
		}
		sources = append(sources, cms)
	}
	return sources, nil
}

// elect campaigns for leadership; mgr leads once elected. It returns the
// function that releases the Lease.
func elect(ctx context.Context, cfg *rest.Config, f *runFlags, mgr *controller.Manager) (func(), error) {
	if f.leader.id == "" {
		f.leader.id = strings.ToLower(f.fieldManager) + "-leader"
	}
	e, err := startElection(ctx, cfg, f.leader, mgr.Lead, func() {
		// Another replica may be writing already: every write of this one
		// must end now, drained or not, as Kubernetes' own controllers do.
		klog.FromContext(ctx).Error(nil, "Leader election lost: exiting")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	})
	if err != nil {
		return nil, err
	}
	return e.stop, nil
}

// startCPUProfile writes a CPU profile of the run to path ("": none) until
// the returned function is called.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); out.Close() }, nil
}

// writeHeapProfile writes a heap profile to path ("": none).
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer out.Close()
	runtime.GC() // the profile shows the heap as of the last collection
	if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return nil
}

// protectedNamespaces are the operator's own namespaces, where no kind may
// write or read: the one its kind folders come from (a child there could
// be a new folder) and its Lease's. A local run that keeps only its
// inventory in a namespace shares it with the objects it serves (tests and
// the demo do); the inventory is safe there as any object is, by the
// ownership claims.
func protectedNamespaces(f *runFlags) []string {
	var out []string
	if f.configMaps != "" {
		out = append(out, f.stateNamespace)
	}
	if (f.leader.enabled || f.shard.enabled) && !slices.Contains(out, f.leader.namespace) {
		out = append(out, f.leader.namespace)
	}
	return out
}

func templatesShown(useDir bool, dir string) string {
	if !useDir {
		return ""
	}
	return dir
}
