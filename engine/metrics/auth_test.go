package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeReviews answers TokenReviews and SubjectAccessReviews as an API
// server would for its tokens and the users allowed to get /metrics, and
// counts them.
type fakeReviews struct {
	mu       sync.Mutex
	users    map[string]authenticationv1.UserInfo // token -> user
	allowed  map[string]bool                      // user -> may get /metrics
	tokenErr error                                // the TokenReview call fails
	accessErr,
	evalErr error // the SubjectAccessReview call fails; its evaluationError
	tokenReviews, accessReviews int
	reviewed                    map[string]int // TokenReviews by token
	lastAccess                  authorizationv1.SubjectAccessReviewSpec

	// gate, when set, holds the TokenReviews of the tokens gated says
	// until it is closed; entered counts those waiting.
	gate    chan struct{}
	gated   func(token string) bool
	entered int
}

func (f *fakeReviews) reviews() Reviews {
	return Reviews{Tokens: fakeTokens{f}, Access: fakeAccess{f}}
}

func (f *fakeReviews) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenReviews, f.accessReviews
}

type fakeTokens struct{ f *fakeReviews }

func (t fakeTokens) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f := t.f
	if f.gate != nil && f.gated(tr.Spec.Token) {
		f.mu.Lock()
		f.entered++
		f.mu.Unlock()
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenReviews++
	if f.reviewed == nil {
		f.reviewed = map[string]int{}
	}
	f.reviewed[tr.Spec.Token]++
	if f.tokenErr != nil {
		return nil, f.tokenErr
	}
	out := tr.DeepCopy()
	if u, ok := f.users[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: u}
	} else {
		out.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
	}
	return out, nil
}

type fakeAccess struct{ f *fakeReviews }

func (a fakeAccess) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f := a.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accessReviews++
	f.lastAccess = sar.Spec
	if f.accessErr != nil {
		return nil, f.accessErr
	}
	out := sar.DeepCopy()
	na := sar.Spec.NonResourceAttributes
	out.Status.Allowed = f.allowed[sar.Spec.User] && na != nil && na.Verb == "get" && na.Path == "/metrics" && sar.Spec.ResourceAttributes == nil
	if f.evalErr != nil {
		out.Status.EvaluationError = f.evalErr.Error()
	}
	return out, nil
}

func newFakeReviews() *fakeReviews {
	return &fakeReviews{
		users: map[string]authenticationv1.UserInfo{
			"reader-token": {Username: "system:serviceaccount:monitoring:prometheus", UID: "u-1",
				Groups: []string{"system:serviceaccounts", "system:authenticated"},
				Extra:  map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}}},
			"other-token": {Username: "system:serviceaccount:default:app", UID: "u-2", Groups: []string{"system:authenticated"}},
		},
		allowed: map[string]bool{"system:serviceaccount:monitoring:prometheus": true},
	}
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "the metrics\n") })

func request(t *testing.T, h http.Handler, method, authorization string) (int, string, http.Header) {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, "/metrics", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String(), w.Header()
}

func TestGuard(t *testing.T) {
	boom := errors.New("connection refused")
	cases := []struct {
		name          string
		method        string
		authorization string
		setup         func(*fakeReviews)
		wantCode      int
		wantBody      string
		wantReviews   [2]int // TokenReviews, SubjectAccessReviews
	}{
		{name: "no token", authorization: "", wantCode: 401, wantBody: "Unauthorized"},
		{name: "not a bearer token", authorization: "Basic cmVhZGVyOnNlY3JldA==", wantCode: 401, wantBody: "Unauthorized"},
		{name: "empty bearer token", authorization: "Bearer  ", wantCode: 401, wantBody: "Unauthorized"},
		{name: "invalid token", authorization: "Bearer forged", wantCode: 401, wantBody: "Unauthorized", wantReviews: [2]int{1, 0}},
		{name: "user without the right", authorization: "Bearer other-token", wantCode: 403,
			wantBody: `Forbidden: user "system:serviceaccount:default:app" cannot get path "/metrics"`, wantReviews: [2]int{1, 1}},
		{name: "reader", authorization: "Bearer reader-token", wantCode: 200, wantBody: "the metrics", wantReviews: [2]int{1, 1}},
		{name: "scheme in any case", authorization: "bearer reader-token", wantCode: 200, wantBody: "the metrics", wantReviews: [2]int{1, 1}},
		{name: "reader, with another verb", method: http.MethodPost, authorization: "Bearer reader-token", wantCode: 403,
			wantBody: `cannot post path "/metrics"`, wantReviews: [2]int{1, 1}},
		{name: "TokenReview fails", authorization: "Bearer reader-token", setup: func(f *fakeReviews) { f.tokenErr = boom },
			wantCode: 500, wantBody: "Internal Server Error", wantReviews: [2]int{1, 0}},
		{name: "SubjectAccessReview fails", authorization: "Bearer reader-token", setup: func(f *fakeReviews) { f.accessErr = boom },
			wantCode: 500, wantBody: "Internal Server Error", wantReviews: [2]int{1, 1}},
		{name: "allowed despite an evaluation error", authorization: "Bearer reader-token",
			setup: func(f *fakeReviews) { f.evalErr = errors.New("one authorizer failed") }, wantCode: 200, wantReviews: [2]int{1, 1}},
		{name: "denied with an evaluation error", authorization: "Bearer other-token",
			setup: func(f *fakeReviews) { f.evalErr = errors.New("one authorizer failed") }, wantCode: 403, wantReviews: [2]int{1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeReviews()
			if tc.setup != nil {
				tc.setup(f)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			code, body, header := request(t, NewGuard(f.reviews(), GuardOptions{}).Wrap(okHandler), method, tc.authorization)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("%s = %d %q, want %d with %q", method, code, body, tc.wantCode, tc.wantBody)
			}
			if code == http.StatusUnauthorized && header.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
			if code != http.StatusOK && strings.Contains(body, "the metrics") {
				t.Errorf("%d with the metrics in the body", code)
			}
			if tr, sar := f.counts(); [2]int{tr, sar} != tc.wantReviews {
				t.Errorf("%d TokenReviews, %d SubjectAccessReviews; want %v", tr, sar, tc.wantReviews)
			}
		})
	}
}

// TestGuardAsks: the SubjectAccessReview names the token's whole user and
// the non-resource URL, as the API server would authorize the request.
func TestGuardAsks(t *testing.T) {
	f := newFakeReviews()
	if code, _, _ := request(t, NewGuard(f.reviews(), GuardOptions{}).Wrap(okHandler), http.MethodGet, "Bearer reader-token"); code != 200 {
		t.Fatalf("code %d", code)
	}
	want := authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		User:                  "system:serviceaccount:monitoring:prometheus", UID: "u-1",
		Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra:  map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
	}
	if got := fmt.Sprintf("%+v %+v", f.lastAccess, *f.lastAccess.NonResourceAttributes); got != fmt.Sprintf("%+v %+v", want, *want.NonResourceAttributes) {
		t.Errorf("SubjectAccessReview spec\n%s\nwant\n%s", got, fmt.Sprintf("%+v %+v", want, *want.NonResourceAttributes))
	}
}

// TestGuardCache: answers are kept for their TTL, so scrapes every few
// seconds do not cost two reviews each; errors are not kept.
func TestGuardCache(t *testing.T) {
	f := newFakeReviews()
	g := NewGuard(f.reviews(), GuardOptions{TokenTTL: time.Minute, AllowTTL: time.Minute, DenyTTL: 10 * time.Second})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }
	h := g.Wrap(okHandler)

	steps := []struct {
		name          string
		advance       time.Duration
		authorization string
		setup         func()
		wantCode      int
		wantReviews   [2]int // cumulated
	}{
		{"first scrape", 0, "Bearer reader-token", nil, 200, [2]int{1, 1}},
		{"scrape 15s later", 15 * time.Second, "Bearer reader-token", nil, 200, [2]int{1, 1}},
		{"scrape 30s later", 15 * time.Second, "Bearer reader-token", nil, 200, [2]int{1, 1}},
		{"token and right expired", 31 * time.Second, "Bearer reader-token", nil, 200, [2]int{2, 2}},
		{"invalid token", 0, "Bearer forged", nil, 401, [2]int{3, 2}},
		{"invalid token again", time.Second, "Bearer forged", nil, 401, [2]int{3, 2}},
		{"denied", 0, "Bearer other-token", nil, 403, [2]int{4, 3}},
		{"denied again", 5 * time.Second, "Bearer other-token", nil, 403, [2]int{4, 3}},
		{"granted: the denial expires", 6 * time.Second, "Bearer other-token",
			func() { f.mu.Lock(); f.allowed["system:serviceaccount:default:app"] = true; f.mu.Unlock() }, 200, [2]int{4, 4}},
		{"an error is not kept", 2 * time.Minute, "Bearer reader-token",
			func() { f.mu.Lock(); f.tokenErr = errors.New("timeout"); f.mu.Unlock() }, 500, [2]int{5, 4}},
		{"asked again after an error", 0, "Bearer reader-token",
			func() { f.mu.Lock(); f.tokenErr = nil; f.accessErr = errors.New("timeout"); f.mu.Unlock() }, 500, [2]int{6, 5}},
		{"asked again after a review error", 0, "Bearer reader-token",
			func() { f.mu.Lock(); f.accessErr = nil; f.mu.Unlock() }, 200, [2]int{6, 6}},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		if st.setup != nil {
			st.setup()
		}
		code, body, _ := request(t, h, http.MethodGet, st.authorization)
		tr, sar := f.counts()
		if code != st.wantCode || [2]int{tr, sar} != st.wantReviews {
			t.Errorf("%s: %d %q after %d TokenReviews, %d SubjectAccessReviews; want %d after %v", st.name, code, body, tr, sar, st.wantCode, st.wantReviews)
		}
	}
}

// TestLRUCache: a full cache drops its least recently used entry, not an
// arbitrary one; an expired entry is not returned but is still known.
func TestLRUCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newLRUCache[int](3)
	c.put("a", 1, now, time.Minute)
	c.put("b", 2, now, time.Minute)
	c.put("c", 3, now, time.Minute)
	if _, ok := c.get("a", now); !ok { // a is now the most recently used
		t.Fatal("a missing")
	}
	c.put("d", 4, now, time.Minute) // drops b, the least recently used
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := c.get(k, now); ok != want {
			t.Errorf("get(%s) = %v, want %v", k, ok, want)
		}
	}
	// A flood of new keys while a is used after every other one: a stays.
	if _, ok := c.get("a", now); !ok {
		t.Fatal("a missing")
	}
	for i := range 100 {
		c.put(fmt.Sprint("k", i), i, now, time.Minute)
		if i%2 == 1 {
			if _, ok := c.get("a", now); !ok {
				t.Fatalf("a evicted after %d new keys although used every other one", i+1)
			}
		}
	}
	if n := c.len(); n != 3 {
		t.Errorf("%d entries, bound 3", n)
	}
	if v, ok := c.get("k99", now); !ok || v != 99 {
		t.Errorf("the last entry put: %d %v", v, ok)
	}
	// Expired: not returned, still known; put again, fresh.
	later := now.Add(time.Minute)
	if _, ok := c.get("k99", later); ok {
		t.Error("an entry outlived its TTL")
	}
	if !c.known("k99") {
		t.Error("an expired entry is not known")
	}
	c.put("k99", 100, later, time.Minute)
	if v, ok := c.get("k99", later); !ok || v != 100 {
		t.Errorf("put again: %d %v", v, ok)
	}
	c.remove("k99")
	if c.known("k99") || c.len() != 2 {
		t.Errorf("removed, yet known %v, %d entries", c.known("k99"), c.len())
	}
}
