package metrics

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// How long the API server's answers are kept. A scraper every 15 s costs
// a TokenReview and a SubjectAccessReview a minute, not two per scrape; a
// revoked token or role stops working within a minute; a role just granted
// works within DenyTTL. controller-runtime keeps tokens a minute too (and
// allowed requests 5 minutes, denied 30 s).
const (
	DefaultTokenTTL = time.Minute      // valid and invalid tokens alike
	DefaultAllowTTL = time.Minute      // allowed user, verb and path
	DefaultDenyTTL  = 10 * time.Second // denied user, verb and path
)

// reviewTimeout bounds one TokenReview or SubjectAccessReview.
const reviewTimeout = 10 * time.Second

// The caches' bounds. Valid and invalid tokens are kept apart, so that
// invalid ones, however many, never push a scraper's valid token out: an
// attacker can only make up invalid tokens, and those only evict each
// other. The caches are LRU, and new tokens enter them no faster than the
// review limit (DefaultReviewRate): a scraper that comes back every 15 s
// cannot be pushed out of maxValidTokens even by a stream of valid tokens.
const (
	maxValidTokens   = 4096 // the scrapers'
	maxInvalidTokens = 1024 // a misconfigured scraper's retries; a flood's admitted few
	maxCachedAccess  = 4096 // user, verb and path
)

// Reviews are the API server's TokenReview and SubjectAccessReview
// endpoints: what a Guard asks.
type Reviews struct {
	Tokens authenticationclient.TokenReviewInterface
	Access authorizationclient.SubjectAccessReviewInterface
}

// NewReviews makes the review clients of cfg's user, who must be allowed
// to create tokenreviews (authentication.k8s.io) and subjectaccessreviews
// (authorization.k8s.io), as Kubernetes' system:auth-delegator ClusterRole
// allows.
//
// It takes the typed clients of those two groups only, not a
// kubernetes.Interface: the whole clientset behind an interface keeps every
// typed client of every group in the binary (see
// controller.NewConfigMapFolders).
func NewReviews(cfg *rest.Config) (Reviews, error) {
	authn, err := authenticationclient.NewForConfig(cfg)
	if err != nil {
		return Reviews{}, fmt.Errorf("metrics: authentication client: %w", err)
	}
	authz, err := authorizationclient.NewForConfig(cfg)
	if err != nil {
		return Reviews{}, fmt.Errorf("metrics: authorization client: %w", err)
	}
	return Reviews{Tokens: authn.TokenReviews(), Access: authz.SubjectAccessReviews()}, nil
}

// GuardOptions tune a Guard; zero values take the defaults.
type GuardOptions struct {
	TokenTTL, AllowTTL, DenyTTL time.Duration

	// ReviewRate and ReviewBurst limit the TokenReviews of tokens the
	// Guard has no answer for (DefaultReviewRate a second, bursts of
	// DefaultReviewBurst): over it, 429 without asking the API server.
	ReviewRate  float64
	ReviewBurst int
	// MaxReviewsInFlight bounds the TokenReviews of new tokens waiting for
	// the API server at once (DefaultMaxReviewsInFlight); the reviews of
	// tokens known valid, whose answer expired, have as many of their own.
	MaxReviewsInFlight int
}

// Guard lets a request through only when its bearer token is valid (a
// TokenReview) and its user may use the request's verb on its path (a
// SubjectAccessReview of the non-resource URL, e.g. get /metrics), as
// controller-runtime's filters.WithAuthenticationAndAuthorization does: 401
// without a valid token, 403 without the right, 500 when the API server
// could not tell. Answers are cached (GuardOptions); errors never are.
//
// Unlike controller-runtime's filters, it also bounds what anonymous
// clients can make it ask (auth_limit.go): tokens it has no answer for are
// reviewed at a limited rate, a bounded number at once, one review per
// token however many requests carry it; over the limit, 429 with
// Retry-After, counted in operator_metrics_auth_throttled_total. A scraper
// whose valid token is cached is not affected, nor is its review when its
// answer expires.
type Guard struct {
	reviews Reviews
	opts    GuardOptions
	now     func() time.Time
	metrics *authMetrics

	valid   *lruCache[*authenticationv1.UserInfo] // authenticated tokens
	invalid *lruCache[struct{}]                   // tokens the API server refused
	access  *lruCache[bool]

	limiter *rate.Limiter
	// newSlots and knownSlots are semaphores of the TokenReviews in
	// flight: of tokens never seen, and of tokens known valid whose answer
	// expired.
	newSlots, knownSlots chan struct{}
	tokenFlights         *flights[*authenticationv1.UserInfo] // by the token's hash
	accessFlights        *flights[bool]                       // by the review's spec
	throttleLog          throttleLog
}

// NewGuard asks r.
func NewGuard(r Reviews, opts GuardOptions) *Guard {
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = DefaultTokenTTL
	}
	if opts.AllowTTL <= 0 {
		opts.AllowTTL = DefaultAllowTTL
	}
	if opts.DenyTTL <= 0 {
		opts.DenyTTL = DefaultDenyTTL
	}
	if opts.ReviewRate <= 0 {
		opts.ReviewRate = DefaultReviewRate
	}
	if opts.ReviewBurst <= 0 {
		opts.ReviewBurst = DefaultReviewBurst
	}
	if opts.MaxReviewsInFlight <= 0 {
		opts.MaxReviewsInFlight = DefaultMaxReviewsInFlight
	}
	return &Guard{
		reviews: r, opts: opts, now: time.Now, metrics: defaultAuth,
		valid:         newLRUCache[*authenticationv1.UserInfo](maxValidTokens),
		invalid:       newLRUCache[struct{}](maxInvalidTokens),
		access:        newLRUCache[bool](maxCachedAccess),
		limiter:       rate.NewLimiter(rate.Limit(opts.ReviewRate), opts.ReviewBurst),
		newSlots:      make(chan struct{}, opts.MaxReviewsInFlight),
		knownSlots:    make(chan struct{}, opts.MaxReviewsInFlight),
		tokenFlights:  newFlights[*authenticationv1.UserInfo](),
		accessFlights: newFlights[bool](),
	}
}

// Wrap returns next behind g.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := klog.FromContext(r.Context())
		token, ok := bearerToken(r)
		if !ok {
			unauthorized(w)
			return
		}
		user, err := g.authenticate(r.Context(), token)
		var throttled *throttledError
		if errors.As(err, &throttled) {
			g.throttle(w, r, throttled.reason)
			return
		}
		if err != nil {
			log.Error(err, "Metrics request not authenticated: the TokenReview failed", "remote", r.RemoteAddr)
			text(w, http.StatusInternalServerError, "Internal Server Error: the token could not be reviewed\n")
			return
		}
		if user == nil {
			log.V(2).Info("Metrics request with an invalid token", "remote", r.RemoteAddr)
			unauthorized(w)
			return
		}
		// As kube-apiserver names a non-resource request's verb: the
		// method in lower case.
		verb, path := strings.ToLower(r.Method), r.URL.Path
		allowed, err := g.authorize(r.Context(), user, verb, path)
		if err != nil {
			log.Error(err, "Metrics request not authorized: the SubjectAccessReview failed", "user", user.Username, "remote", r.RemoteAddr)
			text(w, http.StatusInternalServerError, "Internal Server Error: the request could not be authorized\n")
			return
		}
		if !allowed {
			log.V(2).Info("Metrics request forbidden", "user", user.Username, "verb", verb, "path", path)
			text(w, http.StatusForbidden, fmt.Sprintf("Forbidden: user %q cannot %s path %q\n", user.Username, verb, path))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken is the request's "Authorization: Bearer" token.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
	text(w, http.StatusUnauthorized, "Unauthorized\n")
}

// authenticate returns the token's user, or nil when the token is not
// valid. The caches are keyed by the token's hash: no token is kept. A
// token without a cached answer is reviewed once however many requests
// carry it at the same time, and only as the limits allow (admit): a
// *throttledError otherwise.
func (g *Guard) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := tokenKey(token)
	now := g.now()
	if u, ok := g.valid.get(key, now); ok {
		return u, nil
	}
	if _, ok := g.invalid.get(key, now); ok {
		return nil, nil
	}

	fs := g.tokenFlights
	fs.mu.Lock()
	if f := fs.join(key); f != nil {
		fs.mu.Unlock()
		return f.wait(ctx, "TokenReview")
	}
	// A review that ended since the lookups above cached its answer before
	// it left: looked up again under the lock, no token is reviewed twice.
	if u, ok := g.valid.get(key, now); ok {
		fs.mu.Unlock()
		return u, nil
	}
	if _, ok := g.invalid.get(key, now); ok {
		fs.mu.Unlock()
		return nil, nil
	}
	slots, err := g.admit(key)
	if err != nil {
		fs.mu.Unlock()
		return nil, err
	}
	f := fs.start(key)
	fs.mu.Unlock()

	// The review outlives this request if its client hangs up: the other
	// requests waiting for it, and the cache, want its answer.
	u, err := g.reviewToken(context.WithoutCancel(ctx), key, token)
	<-slots
	fs.finish(key, f, u, err)
	return u, err
}

// tokenKey is the caches' key of token: its SHA-256, so that no token is
// kept in memory longer than its request.
func tokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return string(sum[:])
}

// reviewToken asks the API server about token and caches its answer.
func (g *Guard) reviewToken(ctx context.Context, key, token string) (*authenticationv1.UserInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := g.reviews.Tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		g.valid.remove(key)
		g.invalid.put(key, struct{}{}, g.now(), g.opts.TokenTTL)
		return nil, nil
	}
	u := &tr.Status.User
	g.invalid.remove(key)
	g.valid.put(key, u, g.now(), g.opts.TokenTTL)
	return u, nil
}

// authorize asks whether user may use verb on the non-resource path.
func (g *Guard) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		User:                  user.Username,
		Groups:                user.Groups,
		UID:                   user.UID,
	}
	if len(user.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	// The spec is the key: encoding/json writes Extra's keys sorted.
	b, err := json.Marshal(spec)
	if err != nil {
		return false, fmt.Errorf("subject access review key: %w", err)
	}
	key := string(b)
	if allowed, ok := g.access.get(key, g.now()); ok {
		return allowed, nil
	}
	// One review per user, verb and path at a time, as for tokens. No
	// rate limit here: only an authenticated user gets this far, and the
	// TokenReviews that made it one were limited.
	fs := g.accessFlights
	fs.mu.Lock()
	if f := fs.join(key); f != nil {
		fs.mu.Unlock()
		return f.wait(ctx, "SubjectAccessReview")
	}
	if allowed, ok := g.access.get(key, g.now()); ok {
		fs.mu.Unlock()
		return allowed, nil
	}
	f := fs.start(key)
	fs.mu.Unlock()
	allowed, err := g.reviewAccess(context.WithoutCancel(ctx), key, spec, user.Username)
	fs.finish(key, f, allowed, err)
	return allowed, err
}

// reviewAccess asks the API server about spec and caches its answer.
func (g *Guard) reviewAccess(ctx context.Context, key string, spec authorizationv1.SubjectAccessReviewSpec, username string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	sar, err := g.reviews.Access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("create SubjectAccessReview: %w", err)
	}
	switch {
	case sar.Status.Allowed:
		g.access.put(key, true, g.now(), g.opts.AllowTTL)
	case sar.Status.EvaluationError == "":
		g.access.put(key, false, g.now(), g.opts.DenyTTL)
	default:
		// Denied while an authorizer failed: maybe only for now (RBAC
		// could not read a binding), so asked again at the next request.
		klog.FromContext(ctx).V(2).Info("SubjectAccessReview denied with an evaluation error", "user", username, "error", sar.Status.EvaluationError)
	}
	return sar.Status.Allowed, nil
}
