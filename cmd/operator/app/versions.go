package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/convert"
	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/engine/crdinstall"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/metrics"
	"github.com/tmplop/operator/engine/migrate"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/webhook"
)

// webhookFlags are the flags of the conversion webhook of the kinds of
// several versions, and of their stored objects' migration
// (docs/versions.md).
type webhookFlags struct {
	addr          string
	url           string
	service       string
	certDir       string
	caPropagation time.Duration
	migrationRate float64
	secret        string
}

func addWebhookFlags(fl *pflag.FlagSet, f *webhookFlags) {
	// Off unless asked, as the metrics are: a folder of one version needs
	// none, and a folder of several is refused without it.
	fl.StringVar(&f.addr, "webhook-bind-address", "0", "address the CRD conversion webhook of the kinds of several versions binds to, over HTTPS, e.g. :9443 (0: none; a kind folder of several versions is then refused)")
	fl.StringVar(&f.url, "webhook-url", "", "with --install-crds, the URL the API server calls the conversion webhook at (default: https://127.0.0.1:<port>/convert, for a local run)")
	fl.StringVar(&f.service, "webhook-service", "", "with --install-crds, the Service the API server calls the conversion webhook through, namespace/name[:port] (deploy/ sets it); its names are in the certificate the operator makes")
	fl.StringVar(&f.certDir, "webhook-cert-dir", "", "directory of the webhook's tls.crt, tls.key and ca.crt (a cert-manager Secret), read again when they change (default: a CA and a certificate the operator makes, kept in a Secret of --state-namespace that every replica serves)")
	fl.DurationVar(&f.caPropagation, "webhook-ca-propagation", webhook.DefaultCAPropagation, "how long a new CA of the webhook's Secret is in the CRDs' caBundle before it signs the certificate served (the API server must trust it first); shorter only where the bundle reaches every CRD faster (--install-crds re-injects it at once)")
	fl.StringVar(&f.secret, "webhook-secret", webhook.DefaultSecretName, "without --webhook-cert-dir, the Secret of --state-namespace that keeps the webhook's CA and certificate (operator rbac --webhook-secret grants it): one per operator sharing a namespace")
	fl.Float64Var(&f.migrationRate, "storage-migration-rate", migrate.DefaultRate, "objects a second written back when a kind's storage version changes (--install-crds)")
}

// converters are the conversions of every kind folder loaded, by kind: the
// webhook's Converters. A folder's are known before its CRD is installed
// (controller's Options.Loaded), and kept when its kind stops: the CRD and
// its objects stay, and the API server still converts them.
type converters struct {
	budget render.Budget // run's --render-* flags, under each kind.yaml's

	mu    sync.RWMutex
	kinds map[schema.GroupKind]*catalog.Kind
	convs map[schema.GroupKind]*convert.Converter // with the kind's budget
}

func newConverters(budget render.Budget) *converters {
	return &converters{budget: budget, kinds: map[schema.GroupKind]*catalog.Kind{}, convs: map[schema.GroupKind]*convert.Converter{}}
}

// loaded is controller's Options.Loaded. A conversion renders under the
// budget the kind's renders have (kind.yaml's over the run's flags),
// worked out once per folder, not per review.
func (c *converters) loaded(k *catalog.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gk := k.GVK.GroupKind()
	c.kinds[gk] = k
	if conv := k.Converter(); conv != nil {
		c.convs[gk] = conv.WithBudget(k.RenderBudget(c.budget))
	} else {
		delete(c.convs, gk)
	}
}

// Converter implements webhook.Converters.
func (c *converters) Converter(gk schema.GroupKind) webhook.Converter {
	c.mu.RLock()
	defer c.mu.RUnlock()
	conv := c.convs[gk]
	if conv == nil {
		return nil // not an interface holding a nil pointer
	}
	return conv
}

// versioned are the loaded kinds of several versions.
func (c *converters) versioned() []*catalog.Kind {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*catalog.Kind
	for _, k := range c.kinds {
		if k.Converter() != nil {
			out = append(out, k)
		}
	}
	return out
}

// conversionWebhook is the running webhook and where the API server calls it.
type conversionWebhook struct {
	server *webhook.Server
	client apiextensionsv1.WebhookClientConfig // without the CA bundle
}

// startWebhook serves the conversion webhook (nil when --webhook-bind-address
// is 0).
func startWebhook(ctx context.Context, f webhookFlags, client *kube.Client, stateNamespace string, conv *converters) (*conversionWebhook, error) {
	if f.addr == "" || f.addr == "0" {
		return nil, nil
	}
	if f.url != "" && f.service != "" {
		return nil, errors.New("--webhook-url and --webhook-service: give one")
	}
	opts := webhook.Options{
		Address: f.addr, Converters: conv, Observer: metrics.ConversionObserver(),
		CertDir: f.certDir, Client: client, Namespace: stateNamespace, SecretName: f.secret, CAPropagation: f.caPropagation,
	}
	var svc *apiextensionsv1.ServiceReference
	if f.service != "" {
		var err error
		if svc, err = parseService(f.service); err != nil {
			return nil, err
		}
		opts.DNSNames = []string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"}
	} else if f.url != "" {
		u, err := url.Parse(f.url)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("--webhook-url %q: want https://host[:port]/path", f.url)
		}
		if ip := net.ParseIP(u.Hostname()); ip != nil {
			opts.IPs = []net.IP{ip}
		} else {
			opts.DNSNames = []string{u.Hostname()}
		}
	} else {
		opts.IPs = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	srv, err := webhook.Serve(ctx, opts)
	if err != nil {
		return nil, err
	}
	w := &conversionWebhook{server: srv}
	switch {
	case svc != nil:
		w.client.Service = svc
	case f.url != "":
		w.client.URL = &f.url
	default:
		_, port, _ := net.SplitHostPort(srv.Addr.String())
		u := "https://127.0.0.1:" + port + webhook.ConvertPath
		w.client.URL = &u
	}
	klog.FromContext(ctx).Info("Serving the conversion webhook", "address", srv.Addr.String(), "clientConfig", describeClient(w.client))
	return w, nil
}

func describeClient(c apiextensionsv1.WebhookClientConfig) string {
	if c.URL != nil {
		return *c.URL
	}
	return fmt.Sprintf("service %s/%s:%d%s", c.Service.Namespace, c.Service.Name, *c.Service.Port, *c.Service.Path)
}

// parseService reads namespace/name[:port].
func parseService(s string) (*apiextensionsv1.ServiceReference, error) {
	ns, rest, ok := strings.Cut(s, "/")
	name, portText, hasPort := strings.Cut(rest, ":")
	port := int32(443)
	if hasPort {
		p, err := strconv.ParseInt(portText, 10, 32)
		if err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("--webhook-service %q: bad port", s)
		}
		port = int32(p)
	}
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--webhook-service %q: want namespace/name[:port]", s)
	}
	path := webhook.ConvertPath
	return &apiextensionsv1.ServiceReference{Namespace: ns, Name: name, Port: &port, Path: &path}, nil
}

// clientConfig is crdinstall's ConversionClient: where the API server
// calls, with the CA bundle served now.
func (w *conversionWebhook) clientConfig() *apiextensionsv1.WebhookClientConfig {
	if w == nil {
		return nil
	}
	c := w.client.DeepCopy()
	c.CABundle = w.server.CABundle()
	return c
}

// versionedInstaller installs kinds' CRDs (run --install-crds): a kind of
// several versions only with the conversion webhook served, its CA bundle
// injected, and its stored objects then migrated to the storage version.
type versionedInstaller struct {
	installer *crdinstall.Installer
	webhook   *conversionWebhook
	migrator  *migrate.Migrator
	ctx       context.Context // the run's: a migration outlives the reload that started it

	mu        sync.Mutex
	migrating map[string]bool // CRD names
}

func newVersionedInstaller(ctx context.Context, client *kube.Client, recorder record.EventRecorder, wh *conversionWebhook, rate float64) *versionedInstaller {
	inst := crdinstall.New(client, crd.ForKind, crd.ErrNoSchema)
	v := &versionedInstaller{installer: inst, webhook: wh, ctx: ctx, migrating: map[string]bool{},
		migrator: migrate.New(client, recorder, rate, metrics.Migration())}
	if wh != nil {
		inst.ConversionClient = wh.clientConfig
	}
	return v
}

// install is controller's Options.InstallCRD.
func (v *versionedInstaller) install(ctx context.Context, k *catalog.Kind) error {
	if k.Converter() != nil && v.webhook == nil {
		return fmt.Errorf("kind %s has %d versions: its CRD converts them with the operator's conversion webhook, which is off: run with --webhook-bind-address (docs/versions.md)",
			k.GVK.GroupKind(), len(k.Versions()))
	}
	if err := v.installer.Install(ctx, k); err != nil {
		return err
	}
	if k.Converter() != nil {
		v.migrate(k)
	}
	return nil
}

// migrate moves k's stored objects to its storage version in the
// background, once at a time per CRD.
func (v *versionedInstaller) migrate(k *catalog.Kind) {
	c, err := crd.ForKind(k)
	if err != nil || c == nil {
		return
	}
	name := c.Name
	v.mu.Lock()
	if v.migrating[name] {
		v.mu.Unlock()
		return
	}
	v.migrating[name] = true
	v.mu.Unlock()
	go func() {
		defer func() {
			v.mu.Lock()
			delete(v.migrating, name)
			v.mu.Unlock()
		}()
		log := klog.FromContext(v.ctx).WithValues("crd", name)
		if _, err := v.migrator.Migrate(klog.NewContext(v.ctx, log), name); err != nil && v.ctx.Err() == nil {
			log.Error(err, "Storage migration stopped; it goes on from where it stopped at the kind's next start")
		}
	}()
}

// reinjectCA installs again the CRDs of the kinds of several versions when
// the webhook's CA bundle changes (a CA rolled, a cert-manager renewal), on
// the replica that installs CRDs.
func (v *versionedInstaller) reinjectCA(ctx context.Context, conv *converters, leading func() bool) {
	if v.webhook == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.webhook.server.CABundleChanges():
		}
		if !leading() {
			continue
		}
		for _, k := range conv.versioned() {
			if err := v.installer.Install(ctx, k); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Cannot inject the webhook's new CA bundle into the kind's CRD", "kind", k.GVK.GroupKind().String())
			}
		}
	}
}
