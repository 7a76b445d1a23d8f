package harness

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestProxyDown checks that Down cuts a request in flight, whether its
// response has started (a watch) or not, also at the API server; refuses new
// requests without a response; and that Up restores service.
func TestProxyDown(t *testing.T) {
	u := newUpstream(t)
	tests := map[string]struct {
		path string
		// open sends the request and, for a stream, reads its beginning.
		open func(t *testing.T, c *http.Client, url string) (rest func() error)
	}{
		"open watch stream": {
			path: "/api/v1/namespaces/watch-ns/configmaps",
			open: func(t *testing.T, c *http.Client, url string) func() error {
				resp, err := c.Get(url + "?watch=true")
				if err != nil {
					t.Fatal(err)
				}
				// The upstream never ends the stream, so events arrive
				// only if the proxy flushes them.
				br := bufio.NewReader(resp.Body)
				for range 3 {
					if _, err := br.ReadString('\n'); err != nil {
						t.Fatalf("read watch event: %v", err)
					}
				}
				return func() error {
					defer resp.Body.Close()
					_, err := io.Copy(io.Discard, br)
					return err
				}
			},
		},
		"client-go watch": {
			path: "/api/v1/namespaces/client-go-watch/configmaps",
			open: func(t *testing.T, _ *http.Client, url string) func() error {
				cfg := &rest.Config{Host: strings.TrimSuffix(url, "/api/v1/namespaces/client-go-watch/configmaps")}
				w, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("client-go-watch").Watch(t.Context(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for range 3 {
					if _, ok := <-w.ResultChan(); !ok {
						t.Fatal("watch ended before Down")
					}
				}
				return func() error {
					for range w.ResultChan() {
					}
					return errors.New("watch ended") // what an informer sees
				}
			},
		},
		"request waiting for its response": {
			path: "/api/v1/namespaces/block-ns/configmaps/block",
			open: func(t *testing.T, c *http.Client, url string) func() error {
				errc := make(chan error, 1)
				go func() {
					resp, err := c.Get(url)
					if err == nil {
						resp.Body.Close()
					}
					errc <- err
				}()
				return func() error { return <-errc }
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newProxy(t, u)
			c := &http.Client{Timeout: 10 * time.Second}
			started, ended := u.stream(tc.path)
			rest := tc.open(t, c, p.URL()+tc.path)
			wait(t, started, "request reaches the upstream")

			p.Down()
			done := make(chan error, 1)
			go func() { done <- rest() }()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("request ended cleanly after Down, want an error")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("request still open 5s after Down")
			}
			wait(t, ended, "upstream request canceled")
			if got := p.Requests()[0].Code; got != 0 {
				t.Errorf("recorded code of the cut request = %d, want 0", got)
			}

			// A path of its own: the cases run in parallel on one upstream.
			after := tc.path + "-after"
			resp, err := c.Get(p.URL() + after)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("request while down got %s, want a connection error", resp.Status)
			}
			if got := u.hitsOf(after); got != 0 {
				t.Errorf("upstream got %d requests while down, want 0", got)
			}

			p.Up()
			resp, err = c.Get(p.URL() + after)
			if err != nil {
				t.Fatalf("request after Up: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("request after Up: %s, want 200 OK", resp.Status)
			}
			reqs := p.Requests()
			if last := reqs[len(reqs)-1]; last.Code != http.StatusOK {
				t.Errorf("recorded code after Up = %d, want 200", last.Code)
			}
			if down := p.Count(func(r Request) bool { return r.Code == 0 }); down < 2 {
				t.Errorf("recorded %d requests with code 0, want the cut and the refused one: %+v", down, reqs)
			}
		})
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not within 5s", what)
	}
}

// TestProxyFailRequests checks that chosen requests fail with a Status the
// client decodes, without reaching the API server, and that others pass.
func TestProxyFailRequests(t *testing.T) {
	u := newUpstream(t)
	isPost := func(r *http.Request) bool { return r.Method == http.MethodPost }
	tests := map[string]struct {
		pred       func(*http.Request) bool
		code       int
		clear      bool
		wantFailed func(error) bool // nil: the create succeeds
	}{
		"503 on writes": {pred: isPost, code: 503, wantFailed: apierrors.IsServiceUnavailable},
		"500 on writes": {pred: isPost, code: 500, wantFailed: apierrors.IsInternalError},
		"cleared":       {pred: isPost, code: 500, clear: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := strings.ReplaceAll(name, " ", "-")
			p := newProxy(t, u)
			p.FailRequests(tc.pred, tc.code)
			if tc.clear {
				p.FailRequests(nil, 0)
			}
			cms := kubernetes.NewForConfigOrDie(p.Config()).CoreV1().ConfigMaps(ns)

			_, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
			createPath := "/api/v1/namespaces/" + ns + "/configmaps"
			wantCode := http.StatusOK
			if tc.wantFailed == nil {
				if err != nil {
					t.Fatalf("create: %v, want success", err)
				}
			} else {
				wantCode = tc.code
				if !tc.wantFailed(err) || !strings.Contains(err.Error(), "injected by test proxy") {
					t.Fatalf("create: %v, want an injected %d", err, tc.code)
				}
				if n := u.hitsOf(createPath); n != 0 {
					t.Errorf("upstream got %d failed creates, want 0", n)
				}
			}
			if _, err := cms.Get(t.Context(), "c", metav1.GetOptions{}); err != nil {
				t.Errorf("get, which does not match: %v", err)
			}
			reqs := p.Requests()
			if len(reqs) != 2 || reqs[0].Code != wantCode || reqs[1].Code != http.StatusOK {
				t.Errorf("recorded %+v, want the create with %d and the get with 200", reqs, wantCode)
			}
		})
	}
}

// TestProxyConcurrent runs clients against every fault switch at once, for
// the race detector.
func TestProxyConcurrent(t *testing.T) {
	p := newProxy(t, newUpstream(t))
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := &http.Client{Timeout: 2 * time.Second}
			for ctx.Err() == nil {
				if resp, err := c.Get(p.URL() + "/api/v1/namespaces/ns/configmaps/a"); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			switch i % 5 {
			case 0:
				p.Down()
			case 1:
				p.Up()
			case 2:
				p.FailRequests(func(*http.Request) bool { return true }, 503)
			case 3:
				p.FailRequests(nil, 0)
			case 4:
				p.Reset()
			}
			_ = p.Count(IsWatch)
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	p.Up()
	p.FailRequests(nil, 0)
	resp, err := (&http.Client{}).Get(p.URL() + "/api/v1/namespaces/ns/configmaps/a")
	if err != nil {
		t.Fatalf("after the storm: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the storm: %s", resp.Status)
	}
}
