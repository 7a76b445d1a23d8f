package reconcile

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

// TestClassify: only known-permanent causes are terminal; anything the
// cluster may fix by itself is retried.
func TestClassify(t *testing.T) {
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "x.io", Kind: "X"}}
	// Real renders, so that the errors are wrapped as renders wrap them.
	renderErr := func(tmpl string, lookupErr error) error {
		set, err := render.Parse(map[string]string{"a.yaml": tmpl})
		if err != nil {
			t.Fatal(err)
		}
		_, err = set.Children(t.Context(), render.Input{Lookup: failingLookup{lookupErr}, Budget: render.Budget{Timeout: 20 * time.Millisecond}})
		if err == nil {
			t.Fatalf("%s rendered", tmpl)
		}
		return fmt.Errorf("wrapped: %w", err)
	}
	lookup := `{{ lookup "v1" "Secret" "ns" "s" }}`
	cases := []struct {
		name       string
		err        error
		reason     string
		terminal   bool
		retryAfter time.Duration
	}{
		{"template error", renderErr(`{{ required "spec.x is required" .Spec.x }}`, nil), status.ReasonRenderFailed, true, 0},
		{"containment refusal", &PlanError{Err: &ownership.OutsideError{Reason: "r"}}, status.ReasonRenderFailed, true, 0},
		{"undeclared lookup", renderErr(lookup, fmt.Errorf("%w: Secret not declared", render.ErrLookupRefused)), status.ReasonRenderFailed, true, 0},
		{"lookup kind not served yet", renderErr(lookup, noMatch), status.ReasonLookupFailed, false, 0},
		{"lookup cache not synced", failed(status.ReasonLookupFailed, fmt.Errorf("pods: %w", ErrNotReady)), status.ReasonLookupFailed, false, 0},
		{"output budget", renderErr(`{{ repeat 1000000000 "x" }}`, nil), status.ReasonRenderFailed, true, 0},
		{"time budget", renderErr(`{{ range 2000000000 }}{{ end }}`, nil), status.ReasonRenderFailed, true, time.Minute},
		{"ownership conflict", fmt.Errorf("deployment.yaml: %w", &ownership.ConflictError{Reason: "exists"}), status.ReasonOwnershipConflict, true, 5 * time.Minute},
		{"child kind not served", fmt.Errorf("a.yaml: %w", noMatch), status.ReasonApplyFailed, false, 0},
		{"API error on apply", errors.New("connection refused"), status.ReasonApplyFailed, false, 0},
		// Forbidden as the door (kube.Client) returns it, marked.
		{"apply forbidden by RBAC", fmt.Errorf("deployment.yaml: %w", kube.Forbidden{StatusError: apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "d", errors.New(`User "system:serviceaccount:op:k" cannot patch resource "deployments"`))}), status.ReasonApplyFailed, true, time.Minute},
		{"status write", failed(status.ReasonStatusFailed, errors.New("conflict")), status.ReasonStatusFailed, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, terminal, after := classify(tc.err)
			if reason != tc.reason || terminal != tc.terminal || after != tc.retryAfter {
				t.Errorf("classify = %s terminal=%v after=%s, want %s terminal=%v after=%s", reason, terminal, after, tc.reason, tc.terminal, tc.retryAfter)
			}
		})
	}
}

type failingLookup struct{ err error }

func (f failingLookup) Get(_, _, _, _ string) (map[string]any, error)    { return nil, f.err }
func (f failingLookup) List(_, _, _, _ string) ([]map[string]any, error) { return nil, f.err }
