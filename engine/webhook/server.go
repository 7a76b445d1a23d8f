package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/certwatch"
	"github.com/tmplop/operator/engine/kube"
)

// DefaultSecretName is the Secret of the chain the operator makes.
const DefaultSecretName = "operator-webhook-cert"

// shutdownTimeout bounds how long conversions in flight may finish when
// the server stops; the API server's own timeout of a conversion is 30 s.
const shutdownTimeout = 10 * time.Second

// Options choose what Serve serves, and with which certificate.
type Options struct {
	// Address is where to listen, host:port (":9443"; port 0: any free
	// port, see Server.Addr).
	Address string
	// Converters finds each kind's Converter.
	Converters Converters
	// MaxBodyBytes bounds a ConversionReview's body (<= 0:
	// DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Observer, when set, is told of every review (engine/metrics'
	// ConversionObserver).
	Observer Observer

	// CertDir, when set, holds the serving certificate (tls.crt, tls.key)
	// and the CA bundle (ca.crt, optional), read again when they change: a
	// Secret mounted from cert-manager or the user. The fields below are
	// then unused.
	CertDir string

	// Client reads, watches and writes the Secret of the chain the
	// operator makes itself when CertDir is "".
	Client *kube.Client
	// Namespace and SecretName: that Secret (SecretName "":
	// DefaultSecretName), in the operator's state namespace.
	Namespace, SecretName string
	// DNSNames and IPs are what the serving certificate is valid for: the
	// Service's names (operator-webhook.<ns>.svc), and 127.0.0.1 for a
	// webhook the API server calls by URL on the same host.
	DNSNames []string
	IPs      []net.IP
	// CAValidity and ServingValidity: how long the CA and the serving
	// certificates made are valid (0: DefaultCAValidity,
	// DefaultServingValidity); each is renewed in its last third.
	CAValidity, ServingValidity time.Duration
	// CAPropagation: how long a new CA is in the bundle before it signs
	// (0: DefaultCAPropagation).
	CAPropagation time.Duration

	// clockSkew is the back-dating of certificates (DefaultClockSkew
	// unless set by a test through skewSet).
	clockSkew time.Duration
	skewSet   bool
	now       func() time.Time
}

// Server is the running conversion webhook.
type Server struct {
	// Addr is where it listens (the actual port when asked for port 0).
	Addr net.Addr

	files  *certwatch.Watcher // CertDir; or
	keeper *keeper            // the Secret

	changes  chan struct{}
	stopping chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Serve loads or makes the certificate, binds opts.Address and serves
// ConvertPath and /healthz over HTTPS until ctx is done or Stop is called.
// It returns once a certificate is served and the address bound: an error
// in either is returned, not logged.
func Serve(ctx context.Context, opts Options) (*Server, error) {
	if opts.Converters == nil {
		return nil, errors.New("webhook: Converters are required")
	}
	log := klog.FromContext(ctx)
	s := &Server{changes: make(chan struct{}, 1), stopping: make(chan struct{})}
	// The certificate's goroutines end with the server, not only with ctx.
	certCtx, cancel := context.WithCancel(ctx)
	var getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	var describe string
	if opts.CertDir != "" {
		w, err := certwatch.Load(certwatch.Options{Dir: opts.CertDir, What: "webhook certificate", WithCA: true, OnChange: s.notify})
		if err != nil {
			cancel()
			return nil, err
		}
		s.files, getCert, describe = w, w.GetCertificate, w.Path()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			w.Watch(certCtx, s.stopping)
		}()
	} else {
		k, err := newKeeper(opts, s.notify)
		if err != nil {
			cancel()
			return nil, err
		}
		if err := k.start(certCtx); err != nil {
			cancel()
			return nil, err
		}
		s.keeper, describe = k, "Secret "+k.ns+"/"+k.name
		getCert = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return k.current.Load().cert, nil }
	}
	ln, err := net.Listen("tcp", opts.Address)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("serve the conversion webhook on %s: %w", opts.Address, err)
	}
	s.Addr = ln.Addr()
	addr := ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle(ConvertPath, NewHandler(opts.Converters, opts.MaxBodyBytes, opts.Observer))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Conversions carry the run's logger; the graceful shutdown, not
		// the run's end, is what cancels them.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    stdlog.New(serverErrorLog{log.WithValues("address", addr)}, "", 0),
		TLSConfig:   &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCert},
	}
	// HTTP/1.1 only, as the metrics server: the API server's conversion
	// calls need nothing of HTTP/2, and its stream handling is where the
	// rapid-reset (CVE-2023-44487) and CONTINUATION-flood (CVE-2023-45288)
	// attacks struck.
	hs.Protocols = new(http.Protocols)
	hs.Protocols.SetHTTP1(true)
	log.Info("Serving the conversion webhook over HTTPS", "address", addr, "path", ConvertPath, "certificate", describe)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := hs.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "Serving the conversion webhook failed", "address", addr)
		}
	}()
	go func() {
		defer s.wg.Done()
		defer cancel()
		select {
		case <-ctx.Done():
		case <-s.stopping:
		}
		sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer stop()
		if err := hs.Shutdown(sctx); err != nil {
			log.Error(err, "Stopping the conversion webhook", "address", addr)
			_ = hs.Close()
		}
	}()
	return s, nil
}

// newKeeper is the keeper of opts' Secret.
func newKeeper(opts Options, onBundle func()) (*keeper, error) {
	if opts.Client == nil || opts.Namespace == "" {
		return nil, errors.New("webhook: without a certificate directory, a Client and a Namespace are required to keep the certificate in a Secret")
	}
	if len(opts.DNSNames) == 0 && len(opts.IPs) == 0 {
		return nil, errors.New("webhook: the serving certificate needs at least one DNS name or IP")
	}
	p := policy{
		caValidity: opts.CAValidity, servingValidity: opts.ServingValidity, caPropagation: opts.CAPropagation,
		clockSkew: DefaultClockSkew, dnsNames: opts.DNSNames, ips: opts.IPs,
	}
	if p.caValidity <= 0 {
		p.caValidity = DefaultCAValidity
	}
	if p.servingValidity <= 0 {
		p.servingValidity = DefaultServingValidity
	}
	if p.servingValidity > p.caValidity {
		return nil, fmt.Errorf("webhook: the serving certificate's validity (%s) is longer than the CA's (%s)", p.servingValidity, p.caValidity)
	}
	if p.caPropagation <= 0 {
		p.caPropagation = DefaultCAPropagation
	}
	if opts.skewSet {
		p.clockSkew = opts.clockSkew
	}
	name := opts.SecretName
	if name == "" {
		name = DefaultSecretName
	}
	now := opts.now
	if now == nil {
		now = time.Now
	}
	return &keeper{
		client: opts.Client, ns: opts.Namespace, name: name, policy: p, now: now,
		wake: make(chan struct{}, 1), served: make(chan struct{}), onBundle: onBundle,
	}, nil
}

// CABundle is the PEM bundle of the CAs that sign the certificate served:
// what the CRDs' spec.conversion.webhook.clientConfig.caBundle must hold.
// nil when CertDir has no ca.crt (cert-manager's CA injector then sets the
// CRDs' caBundle).
func (s *Server) CABundle() []byte {
	if s.files != nil {
		return bytes.Clone(s.files.CA())
	}
	return bytes.Clone(s.keeper.current.Load().bundle())
}

// CABundleChanges receives a value when the CA bundle may have changed
// since it was last read (coalesced: one value may stand for several
// changes): the CRD installer reads CABundle again and patches the CRDs.
func (s *Server) CABundleChanges() <-chan struct{} { return s.changes }

func (s *Server) notify() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// Stop shuts the server down, letting conversions in flight finish (for a
// few seconds), and returns when it has stopped. It is safe to call more
// than once, and after the context given to Serve is done.
func (s *Server) Stop() {
	s.stopOnce.Do(func() { close(s.stopping) })
	s.wg.Wait()
}

// serverErrorLog takes net/http's own messages (TLS handshakes that failed:
// port scanners, a plain-HTTP client on the HTTPS port) at -v 1.
type serverErrorLog struct{ log klog.Logger }

func (l serverErrorLog) Write(p []byte) (int, error) {
	l.log.V(1).Info("HTTP server error", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}
