package metrics

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

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

// maxCached bounds each cache: random tokens sent by an attacker cost a
// TokenReview each, but never unbounded memory.
const maxCached = 4096

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
}

// Guard lets a request through only when its bearer token is valid (a
// TokenReview) and its user may use the request's verb on its path (a
// SubjectAccessReview of the non-resource URL, e.g. get /metrics), as
// controller-runtime's filters.WithAuthenticationAndAuthorization does: 401
// without a valid token, 403 without the right, 500 when the API server
// could not tell. Answers are cached (GuardOptions); errors never are.
type Guard struct {
	reviews Reviews
	opts    GuardOptions
	now     func() time.Time

	tokens *ttlCache[*authenticationv1.UserInfo] // nil: not authenticated
	access *ttlCache[bool]
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
	return &Guard{
		reviews: r, opts: opts, now: time.Now,
		tokens: newTTLCache[*authenticationv1.UserInfo](maxCached),
		access: newTTLCache[bool](maxCached),
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
// valid. The cache is keyed by the token's hash: no token is kept.
func (g *Guard) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if u, ok := g.tokens.get(key, g.now()); ok {
		return u, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := g.reviews.Tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create TokenReview: %w", err)
	}
	var u *authenticationv1.UserInfo
	if tr.Status.Authenticated {
		u = &tr.Status.User
	}
	g.tokens.put(key, u, g.now(), g.opts.TokenTTL)
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
		klog.FromContext(ctx).V(2).Info("SubjectAccessReview denied with an evaluation error", "user", user.Username, "error", sar.Status.EvaluationError)
	}
	return sar.Status.Allowed, nil
}
