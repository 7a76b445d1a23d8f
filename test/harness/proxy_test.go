package harness

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const upstreamToken = "upstream-admin-token"

// upstream is a fake API server: TLS, HTTP/2, a bearer token, ConfigMaps that
// echo the request, watches that send an event every 10ms until canceled,
// and /block, which answers only when its request is canceled.
type upstream struct {
	srv *httptest.Server

	mu      sync.Mutex
	hits    map[string]int           // by path
	started map[string]chan struct{} // by path, closed when a stream starts
	ended   map[string]chan struct{} // by path, closed when a stream's context ends
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{hits: map[string]int{}, started: map[string]chan struct{}{}, ended: map[string]chan struct{}{}}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.srv.EnableHTTP2 = true
	// Handshakes the proxy abandons on Down are expected, not news.
	u.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	return u
}

// config is an admin config for the fake API server, as cluster.Cluster has.
func (u *upstream) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw})
	return &rest.Config{Host: u.srv.URL, BearerToken: upstreamToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// stream returns channels closed when a stream on path starts and ends.
func (u *upstream) stream(path string) (started, ended chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started[path] == nil {
		u.started[path], u.ended[path] = make(chan struct{}), make(chan struct{})
	}
	return u.started[path], u.ended[path]
}

func (u *upstream) hitsOf(path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hits[path]
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.hits[r.URL.Path]++
	u.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+upstreamToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Query().Get("watch") == "true":
		started, ended := u.stream(r.URL.Path)
		defer close(ended)
		w.WriteHeader(http.StatusOK)
		close(started)
		for i := 0; ; i++ {
			ev := fmt.Sprintf(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"e%d"}}}`+"\n", i)
			if _, err := io.WriteString(w, ev); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	case strings.HasSuffix(r.URL.Path, "/block"):
		started, ended := u.stream(r.URL.Path)
		defer close(ended)
		close(started)
		<-r.Context().Done()
	default:
		body, _ := io.ReadAll(r.Body)
		name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		_ = json.NewEncoder(w).Encode(corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{
				"method": r.Method, "query": r.URL.RawQuery, "body": string(body),
				"impersonate": r.Header.Get("Impersonate-User"),
			},
		})
	}
}

func newProxy(t *testing.T, u *upstream) *Proxy {
	p, err := NewProxy(u.config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestProxyForwards checks that a client without credentials reaches the
// API server through the proxy with everything it sent, and that the proxy
// records what it forwarded.
func TestProxyForwards(t *testing.T) {
	u := newUpstream(t)
	tests := map[string]struct {
		call       func(ctx context.Context, cfg *rest.Config) (*corev1.ConfigMap, error)
		wantMethod string
		wantPath   string
		wantData   map[string]string
	}{
		"get": {
			call: func(ctx context.Context, cfg *rest.Config) (*corev1.ConfigMap, error) {
				return kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{})
			},
			wantMethod: "GET", wantPath: "/api/v1/namespaces/ns/configmaps/a",
		},
		"query": {
			call: func(ctx context.Context, cfg *rest.Config) (*corev1.ConfigMap, error) {
				return kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{ResourceVersion: "42"})
			},
			wantMethod: "GET", wantPath: "/api/v1/namespaces/ns/configmaps/a",
			wantData: map[string]string{"query": "resourceVersion=42"},
		},
		"create with body": {
			call: func(ctx context.Context, cfg *rest.Config) (*corev1.ConfigMap, error) {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Data: map[string]string{"k": "v"}}
				return kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{})
			},
			wantMethod: "POST", wantPath: "/api/v1/namespaces/ns/configmaps",
		},
		"impersonation headers": {
			call: func(ctx context.Context, cfg *rest.Config) (*corev1.ConfigMap, error) {
				cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
				return kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{})
			},
			wantMethod: "GET", wantPath: "/api/v1/namespaces/ns/configmaps/a",
			wantData: map[string]string{"impersonate": "alice"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newProxy(t, u)
			got, err := tc.call(t.Context(), p.Config())
			if err != nil {
				t.Fatalf("through the proxy: %v", err)
			}
			if got.Data["method"] != tc.wantMethod {
				t.Errorf("upstream saw method %q, want %q", got.Data["method"], tc.wantMethod)
			}
			// client-go sends core types as protobuf; the name shows it is the object.
			if tc.wantMethod == "POST" && !strings.Contains(got.Data["body"], "ConfigMap") {
				t.Errorf("upstream saw body %q, want the ConfigMap", got.Data["body"])
			}
			for k, want := range tc.wantData {
				if got.Data[k] != want {
					t.Errorf("upstream saw %s %q, want %q", k, got.Data[k], want)
				}
			}
			reqs := p.Requests()
			if len(reqs) != 1 {
				t.Fatalf("recorded %d requests, want 1: %+v", len(reqs), reqs)
			}
			if r := reqs[0]; r.Method != tc.wantMethod || r.Path != tc.wantPath || r.Code != http.StatusOK || r.Time.IsZero() {
				t.Errorf("recorded %+v, want %s %s with code 200 and a time", r, tc.wantMethod, tc.wantPath)
			}
		})
	}
}

func TestIsWriteIsWatch(t *testing.T) {
	tests := map[string]struct {
		r        Request
		write    bool
		watchReq bool
	}{
		"get":              {r: Request{Method: "GET", Path: "/api/v1/pods"}},
		"list":             {r: Request{Method: "GET", Path: "/api/v1/pods", Query: "limit=500"}},
		"watch":            {r: Request{Method: "GET", Path: "/api/v1/pods", Query: "allowWatchBookmarks=true&watch=true"}, watchReq: true},
		"watch=1":          {r: Request{Method: "GET", Path: "/api/v1/pods", Query: "watch=1"}, watchReq: true},
		"watch=false":      {r: Request{Method: "GET", Path: "/api/v1/pods", Query: "watch=false"}},
		"legacy watch":     {r: Request{Method: "GET", Path: "/api/v1/watch/namespaces/x/pods"}, watchReq: true},
		"post":             {r: Request{Method: "POST", Path: "/api/v1/namespaces/x/pods"}, write: true},
		"put":              {r: Request{Method: "PUT"}, write: true},
		"apply":            {r: Request{Method: "PATCH", Query: "fieldManager=op&force=true"}, write: true},
		"delete":           {r: Request{Method: "DELETE"}, write: true},
		"delete, watch=1?": {r: Request{Method: "DELETE", Query: "watch=1"}, write: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsWrite(tc.r); got != tc.write {
				t.Errorf("IsWrite = %v, want %v", got, tc.write)
			}
			if got := IsWatch(tc.r); got != tc.watchReq {
				t.Errorf("IsWatch = %v, want %v", got, tc.watchReq)
			}
		})
	}
}

func TestProxyCountReset(t *testing.T) {
	p := newProxy(t, newUpstream(t))
	c := &http.Client{}
	for _, method := range []string{"GET", "GET", "POST", "PUT", "GET"} {
		req, _ := http.NewRequestWithContext(t.Context(), method, p.URL()+"/api/v1/namespaces/ns/configmaps/a", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	all := func(Request) bool { return true }
	if got := p.Count(IsWrite); got != 2 {
		t.Errorf("Count(IsWrite) = %d, want 2", got)
	}
	reqs := p.Requests()
	reqs[0].Method = "changed"
	if got := p.Requests()[0].Method; got != "GET" {
		t.Errorf("changing the copy changed the log: method %q", got)
	}
	p.Reset()
	if got := p.Count(all); got != 0 {
		t.Errorf("Count after Reset = %d, want 0", got)
	}
}

func TestWriteKubeconfig(t *testing.T) {
	p := newProxy(t, newUpstream(t))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := p.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	// The way the operator loads it.
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	if cfg.Host != p.URL() || cfg.BearerToken != "" || cfg.CertData != nil {
		t.Errorf("kubeconfig: host %q token %q cert %v, want %s without credentials", cfg.Host, cfg.BearerToken, cfg.CertData != nil, p.URL())
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("ns").Get(t.Context(), "a", metav1.GetOptions{}); err != nil {
		t.Errorf("get through the kubeconfig: %v", err)
	}
}
