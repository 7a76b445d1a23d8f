package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// maxRequests caps the request log. At the 200 QPS a busy test reaches that
// is over an hour of traffic, while the log stays near 100 MB at most.
const maxRequests = 1_000_000

// Request is one request the proxy received.
type Request struct {
	Method string
	Path   string
	Query  string // the raw query, without '?'
	// Code is the HTTP status sent to the client. It is 0 while the response
	// has not started, and 0 for a request the proxy cut (Down) or refused
	// while down, even when a status had already been sent.
	Code int
	Time time.Time // when the request arrived
}

// IsWrite reports whether r changes state on the server.
func IsWrite(r Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// IsWatch reports whether r is a watch: a GET with watch=true (or 1, as the
// API server also accepts) or one on the deprecated /watch/ paths.
func IsWatch(r Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if strings.Contains(r.Path, "/watch/") {
		return true
	}
	q, err := url.ParseQuery(r.Query)
	if err != nil {
		return false
	}
	w, err := strconv.ParseBool(q.Get("watch"))
	return err == nil && w
}

// Proxy is a plain-HTTP reverse proxy on 127.0.0.1 in front of an API server,
// for tests that count a client's requests or break its connection. Its
// methods are safe for concurrent use.
type Proxy struct {
	srv       *http.Server
	rp        *httputil.ReverseProxy
	transport http.RoundTripper
	url       string

	mu       sync.Mutex
	down     bool
	failPred func(*http.Request) bool
	failCode int
	conns    map[net.Conn]struct{}
	inflight map[*exchange]struct{}
	log      []Request
	gen      int // incremented by Reset, so late updates skip a cleared log
}

// exchange is one request being served. Its fields are guarded by Proxy.mu.
type exchange struct {
	idx    int // index in Proxy.log, -1 when not recorded
	gen    int
	cancel context.CancelFunc
	cut    bool
}

// NewProxy starts a proxy in front of the API server of upstream, which
// authenticates every forwarded request with upstream's credentials.
func NewProxy(upstream *rest.Config) (*Proxy, error) {
	// client-go builds the transport, so TLS, bearer tokens and client
	// certificates work exactly as they do for a client of upstream.
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy: upstream transport: %w", err)
	}
	target, _, err := rest.DefaultServerUrlFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy: upstream URL %q: %w", upstream.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	p := &Proxy{
		transport: rt,
		url:       "http://" + ln.Addr().String(),
		conns:     map[net.Conn]struct{}{},
		inflight:  map[*exchange]struct{}{},
	}
	p.rp = &httputil.ReverseProxy{
		// SetURL leaves Out.Host empty so the Host header names the API
		// server, and forwards every other header, Impersonate-* included.
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: rt,
		// Flush each write at once: a watch event must reach the client
		// when the API server sends it, not when a buffer fills.
		FlushInterval: -1,
		ErrorHandler:  p.upstreamError,
		// Cut streams are the point of Down; they are recorded as Code 0,
		// not logged as errors.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(p.serve),
		// No read or write timeouts: watches stay open for minutes.
		ReadHeaderTimeout: 30 * time.Second,
		ConnState:         p.trackConn,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's address, http://127.0.0.1:PORT.
func (p *Proxy) URL() string { return p.url }

// Config returns a client config for the proxy: no credentials, since the
// proxy adds upstream's, and a rate limit high enough that tests measure the
// system rather than client-go's default 5 QPS.
func (p *Proxy) Config() *rest.Config {
	return &rest.Config{Host: p.url, QPS: 200, Burst: 400}
}

// WriteKubeconfig writes a kubeconfig for the proxy, for kubectl or a child
// process such as the operator.
func (p *Proxy) WriteKubeconfig(path string) error {
	const name = "test-proxy"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: p.url}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("proxy: write kubeconfig %s: %w", path, err)
	}
	return nil
}

// Down makes the API server look gone: every request in flight, open watches
// included, is cut, and every new request gets its connection closed without
// a response, until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for ex := range p.inflight {
		ex.cut = true
		p.setCode(ex, 0)
		// Canceling stops the upstream request too, so a cut watch does
		// not linger at the API server.
		ex.cancel()
	}
	// Closing the connections is what the client sees, also for idle
	// keep-alive connections it would otherwise reuse.
	for c := range p.conns {
		_ = c.Close()
	}
}

// Up ends Down.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// FailRequests makes every request for which pred returns true fail with
// the HTTP status code and a Kubernetes Status body (reason ServiceUnavailable
// for 503, InternalError otherwise), without reaching the API server.
// FailRequests(nil, 0) ends it. pred runs concurrently with itself.
func (p *Proxy) FailRequests(pred func(*http.Request) bool, code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failPred, p.failCode = pred, code
}

// Requests returns a copy of the request log, oldest first. The log keeps the
// first million requests since NewProxy or Reset and drops later ones.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// Count returns how many recorded requests pred accepts. pred runs on a
// copy, so it may call the Proxy's methods.
func (p *Proxy) Count(pred func(Request) bool) int {
	n := 0
	for _, r := range p.Requests() {
		if pred(r) {
			n++
		}
	}
	return n
}

// Reset clears the request log. Requests in flight are not recorded again
// when they complete.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = nil
	p.gen++
}

// Close stops the proxy and cuts every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	for ex := range p.inflight {
		ex.cancel()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	utilnet.CloseIdleConnectionsFor(p.transport)
	if err != nil {
		return fmt.Errorf("proxy: close: %w", err)
	}
	return nil
}

// serve records the request, then refuses it (down), fails it
// (FailRequests) or forwards it.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ex, refuse, pred, code := p.begin(r, cancel)
	defer p.end(ex)
	if refuse {
		abort(w)
		return
	}
	if pred != nil && pred(r) {
		p.writeStatus(ex, w, code)
		return
	}
	p.rp.ServeHTTP(&recordingWriter{ResponseWriter: w, p: p, ex: ex}, r.WithContext(ctx))
}

// begin records r and registers it in flight, in one step with reading the
// fault settings, so that a concurrent Down either is seen here (refuse) or
// sees r and cuts it.
func (p *Proxy) begin(r *http.Request, cancel context.CancelFunc) (ex *exchange, refuse bool, pred func(*http.Request) bool, code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ex = &exchange{idx: -1, gen: p.gen, cancel: cancel, cut: p.down}
	if len(p.log) < maxRequests {
		p.log = append(p.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Time: time.Now()})
		ex.idx = len(p.log) - 1
	}
	p.inflight[ex] = struct{}{}
	return ex, p.down, p.failPred, p.failCode
}

func (p *Proxy) end(ex *exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inflight, ex)
}

// setCode records the status of ex. Callers hold p.mu.
func (p *Proxy) setCode(ex *exchange, code int) {
	if ex.idx < 0 || ex.gen != p.gen || ex.cut && code != 0 {
		return
	}
	p.log[ex.idx].Code = code
}

func (p *Proxy) trackConn(c net.Conn, state http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch state {
	case http.StateNew:
		p.conns[c] = struct{}{}
	case http.StateHijacked, http.StateClosed:
		delete(p.conns, c)
	}
}

// upstreamError handles a failed round trip to the API server. A request cut
// by Down (or Close) must look cut to the client, not answered with a 502.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		abort(w)
		return
	}
	http.Error(w, fmt.Sprintf("test proxy: upstream: %v", err), http.StatusBadGateway)
}

// writeStatus answers with the Status body the API server would send, so
// clients decode it into the matching apierrors type.
func (p *Proxy) writeStatus(ex *exchange, w http.ResponseWriter, code int) {
	reason := metav1.StatusReasonInternalError
	if code == http.StatusServiceUnavailable {
		reason = metav1.StatusReasonServiceUnavailable
	}
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  "injected by test proxy",
		Reason:   reason,
		Code:     int32(code),
	})
	w.Header().Set("Content-Type", "application/json")
	rw := &recordingWriter{ResponseWriter: w, p: p, ex: ex}
	rw.WriteHeader(code)
	_, _ = rw.Write(body)
}

// abort closes the client's connection without a response: the client sees
// a connection error, as when the API server's process is gone.
func abort(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = c.Close()
		return
	}
	// The server closes the connection for this panic and logs nothing.
	panic(http.ErrAbortHandler)
}

// recordingWriter records the response status in the request log.
type recordingWriter struct {
	http.ResponseWriter
	p     *Proxy
	ex    *exchange
	wrote bool
}

func (w *recordingWriter) WriteHeader(code int) {
	// 1xx other than 101 are interim; the final status follows.
	if !w.wrote && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.wrote = true
		w.p.mu.Lock()
		w.p.setCode(w.ex, code)
		w.p.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and Hijack, which the
// reverse proxy needs for watches and upgrades.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush serves callers that check for http.Flusher rather than use a
// ResponseController.
func (w *recordingWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

var _ http.Flusher = (*recordingWriter)(nil)
