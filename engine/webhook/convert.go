package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"
)

// Converters finds the Converter of a kind; nil: the kind is not served
// (a *catalog.Catalog's kinds, through the run's wiring).
type Converters interface {
	Converter(gk schema.GroupKind) Converter
}

// Converter converts a list of objects of one kind to another version of
// it, all or nothing: the output holds one object per input, in order
// (engine/convert's *Converter is one).
type Converter interface {
	ConvertList(ctx context.Context, objs []map[string]any, toAPIVersion string) ([]map[string]any, error)
}

// ObjectIndexer is what an error of ConvertList may implement to tell
// which object of the list failed: the Failure's message then names it
// (namespace/name and its place in the list), so that the client reading
// the API server's error knows which object to look at.
type ObjectIndexer interface {
	ObjectIndex() int
}

// ConvertPath is where the API server posts ConversionReviews (the CRD's
// spec.conversion.webhook.clientConfig.service.path).
const ConvertPath = "/convert"

// DefaultMaxBodyBytes bounds a ConversionReview's body: the API server
// sends a whole list in one request (a list of a kind's objects at the
// version a client asked for), and etcd's own limit on one object is
// 1.5 MiB, so a few hundred large objects or thousands of small ones fit.
const DefaultMaxBodyBytes = 64 << 20

// The values of the result label of the conversion metrics.
const (
	// ResultSuccess: every object converted.
	ResultSuccess = "success"
	// ResultFailure: the converter refused the list (a template failed,
	// changed what it may not, lost a field...); answered as a Failure.
	ResultFailure = "failure"
	// ResultInvalid: a request that could not be converted at all: not a
	// ConversionReview v1, too large, of several kinds, or of a kind this
	// operator does not convert.
	ResultInvalid = "invalid"
)

// Observer is told of each ConversionReview answered: the kind (its
// GroupKind string, "" when the request named no kind this operator
// converts, so that a caller cannot grow the label set), the result (one
// of the Result constants), how many objects it held and how long it
// took. engine/metrics implements it.
type Observer interface {
	ObserveConversion(kind, result string, objects int, d time.Duration)
}

// Handler answers the API server's ConversionReviews
// (apiextensions.k8s.io/v1) at ConvertPath.
type Handler struct {
	converters Converters
	maxBody    int64
	observer   Observer
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the handler of ConversionReviews for converters,
// refusing bodies over maxBody bytes (<= 0: DefaultMaxBodyBytes); obs may
// be nil.
func NewHandler(converters Converters, maxBody int64, obs Observer) *Handler {
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	return &Handler{converters: converters, maxBody: maxBody, observer: obs}
}

// reviewAPIVersion is the one version of ConversionReview served: the
// CRDs this operator generates ask for v1 only (conversionReviewVersions).
var reviewAPIVersion = apiextensionsv1.SchemeGroupVersion.String()

// ServeHTTP decodes one ConversionReview, converts its objects in one
// ConvertList call and answers Success with them in order, or Failure
// with a message that names the object and the template. Requests that
// are not a ConversionReview v1 are answered 4xx with a plain-text reason.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	log := klog.FromContext(r.Context())
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, log, start, http.StatusMethodNotAllowed, "a ConversionReview is POSTed")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		h.refuse(w, log, start, http.StatusBadRequest, fmt.Sprintf("content type %q: the conversion webhook reads application/json", r.Header.Get("Content-Type")))
		return
	}
	body, err := h.read(w, r)
	if err != nil {
		code := http.StatusBadRequest
		if errors.As(err, new(*http.MaxBytesError)) {
			code = http.StatusRequestEntityTooLarge
		}
		h.refuse(w, log, start, code, err.Error())
		return
	}
	var review apiextensionsv1.ConversionReview
	if err := utiljson.Unmarshal(body, &review); err != nil {
		h.refuse(w, log, start, http.StatusBadRequest, "decode the ConversionReview: "+err.Error())
		return
	}
	if review.APIVersion != reviewAPIVersion || review.Kind != "ConversionReview" {
		h.refuse(w, log, start, http.StatusBadRequest, fmt.Sprintf("%s %s: the conversion webhook reads ConversionReview %s only (the CRD's conversionReviewVersions)",
			review.Kind, review.APIVersion, reviewAPIVersion))
		return
	}
	if review.Request == nil {
		h.refuse(w, log, start, http.StatusBadRequest, "a ConversionReview without a request")
		return
	}
	req := review.Request
	log = log.WithValues("uid", req.UID, "desiredAPIVersion", req.DesiredAPIVersion, "objects", len(req.Objects))
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	kind, result, err := h.convert(r.Context(), req, resp)
	if err != nil {
		resp.ConvertedObjects = nil
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		log.Info("Conversion refused", "kind", kind, "result", result, "err", err.Error())
	} else {
		resp.Result = metav1.Status{Status: metav1.StatusSuccess}
		log.V(2).Info("Converted", "kind", kind, "duration", time.Since(start).String())
	}
	out := apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := utiljson.NewEncoder(w).Encode(&out); err != nil {
		log.Error(err, "Writing the ConversionReview's response")
	}
	h.observe(kind, result, len(req.Objects), start)
}

// read reads the body, at most maxBody bytes.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > h.maxBody {
		return nil, fmt.Errorf("a ConversionReview of %d bytes, over the webhook's body limit of %d: %w", r.ContentLength, h.maxBody, &http.MaxBytesError{Limit: h.maxBody})
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.maxBody)); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("a ConversionReview over the webhook's body limit of %d bytes: %w", h.maxBody, err)
		}
		return nil, fmt.Errorf("read the ConversionReview: %w", err)
	}
	return buf.Bytes(), nil
}

// convert converts req's objects into resp.ConvertedObjects, and returns
// the kind ("" unless served) and the result for the metrics, with the
// Failure's message as error.
func (h *Handler) convert(ctx context.Context, req *apiextensionsv1.ConversionRequest, resp *apiextensionsv1.ConversionResponse) (kind, result string, err error) {
	desired, err := schema.ParseGroupVersion(req.DesiredAPIVersion)
	if err != nil || desired.Version == "" {
		return "", ResultInvalid, fmt.Errorf("desiredAPIVersion %q is not a group/version", req.DesiredAPIVersion)
	}
	objs := make([]map[string]any, len(req.Objects))
	var gk schema.GroupKind
	for i, raw := range req.Objects {
		var obj map[string]any
		if err := utiljson.Unmarshal(raw.Raw, &obj); err != nil || obj == nil {
			return "", ResultInvalid, fmt.Errorf("object %d of %d: not a JSON object: %v", i+1, len(req.Objects), err)
		}
		av, _ := obj["apiVersion"].(string)
		k, _ := obj["kind"].(string)
		gv, err := schema.ParseGroupVersion(av)
		if err != nil || k == "" {
			return "", ResultInvalid, fmt.Errorf("object %d of %d (%s): no apiVersion and kind", i+1, len(req.Objects), objectName(obj))
		}
		if i == 0 {
			gk = gv.WithKind(k).GroupKind()
		} else if other := gv.WithKind(k).GroupKind(); other != gk {
			return "", ResultInvalid, fmt.Errorf("object %d of %d (%s) is a %s, object 1 a %s: a ConversionReview holds objects of one kind",
				i+1, len(req.Objects), objectName(obj), other, gk)
		}
		objs[i] = obj
	}
	if len(objs) == 0 {
		return "", ResultSuccess, nil
	}
	conv := h.converters.Converter(gk)
	if conv == nil {
		return "", ResultInvalid, fmt.Errorf("kind %s: this operator has no conversion for it (is its folder loaded, with versions?)", gk)
	}
	if desired.Group != gk.Group {
		return "", ResultInvalid, fmt.Errorf("%s objects cannot be converted to %s: another group", gk, req.DesiredAPIVersion)
	}
	kind = gk.String()
	out, err := convertList(ctx, conv, objs, req.DesiredAPIVersion)
	if err != nil {
		return kind, ResultFailure, describe(err, objs, gk, req.DesiredAPIVersion)
	}
	if len(out) != len(objs) {
		return kind, ResultFailure, fmt.Errorf("convert %d %s objects to %s: the converter returned %d", len(objs), gk.Kind, req.DesiredAPIVersion, len(out))
	}
	resp.ConvertedObjects = make([]runtime.RawExtension, len(out))
	for i, o := range out {
		b, err := utiljson.Marshal(o)
		if err != nil {
			return kind, ResultFailure, fmt.Errorf("encode object %d of %d (%s) at %s: %w", i+1, len(out), objectName(objs[i]), req.DesiredAPIVersion, err)
		}
		resp.ConvertedObjects[i] = runtime.RawExtension{Raw: b}
	}
	return kind, ResultSuccess, nil
}

// convertList calls conv, turning a panic into an error: one bad
// template must fail its request, not cut the API server's connection.
func convertList(ctx context.Context, conv Converter, objs []map[string]any, to string) (out []map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return conv.ConvertList(ctx, objs, to)
}

// describe is the Failure's message: the API server shows it to the
// client, prefixed with its own "conversion webhook for <kind> failed".
func describe(err error, objs []map[string]any, gk schema.GroupKind, to string) error {
	var ix ObjectIndexer
	if errors.As(err, &ix) {
		if i := ix.ObjectIndex(); i >= 0 && i < len(objs) {
			return fmt.Errorf("convert %s %s (object %d of %d) to %s: %w", gk.Kind, objectName(objs[i]), i+1, len(objs), to, err)
		}
	}
	if len(objs) == 1 {
		return fmt.Errorf("convert %s %s to %s: %w", gk.Kind, objectName(objs[0]), to, err)
	}
	return fmt.Errorf("convert %d %s objects to %s: %w", len(objs), gk.Kind, to, err)
}

// objectName is obj's namespace/name, or its name.
func objectName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

func (h *Handler) refuse(w http.ResponseWriter, log klog.Logger, start time.Time, code int, msg string) {
	log.Info("ConversionReview refused", "code", code, "reason", msg)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
	h.observe("", ResultInvalid, 0, start)
}

func (h *Handler) observe(kind, result string, objects int, start time.Time) {
	if h.observer != nil {
		h.observer.ObserveConversion(kind, result, objects, time.Since(start))
	}
}
