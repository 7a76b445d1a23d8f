package cached

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Apply server-side applies body (an object as JSON) to the object name
// of gvr in ns, or to its subresource ("" for the object itself), and
// returns the response's body undecoded: the caller decodes what it needs
// of it (Applied, ResourceVersion), not the whole object with its
// managedFields, which the dynamic client decodes into maps.
func (c *Client) Apply(ctx context.Context, gvr schema.GroupVersionResource, ns, name, subresource string, body []byte, opts metav1.PatchOptions) ([]byte, error) {
	req := c.rest.Patch(types.ApplyPatchType).AbsPath(append(resourcePath(gvr, ns), name)...)
	if subresource != "" {
		req = req.SubResource(subresource)
	}
	// The options as query parameters, set by hand: the parameter codec
	// converts them by reflection, a few percent of the operator's CPU.
	if opts.FieldManager != "" {
		req = req.Param("fieldManager", opts.FieldManager)
	}
	if opts.Force != nil {
		req = req.Param("force", strconv.FormatBool(*opts.Force))
	}
	for _, d := range opts.DryRun {
		req = req.Param("dryRun", d)
	}
	if opts.FieldValidation != "" {
		req = req.Param("fieldValidation", opts.FieldValidation)
	}
	res := req.Body(body).Do(ctx)
	// Error, not Raw's error: it decodes the API server's Status, so that
	// the caller gets the StatusError (Forbidden, Conflict, Invalid...)
	// the dynamic client gives.
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// Applied decodes an apply's response, without its managedFields: they
// are cut out of the bytes first (a scan that keeps nothing else), so that
// only the rest is decoded into maps.
func Applied(data []byte) (*unstructured.Unstructured, error) {
	var h struct {
		Kind     string `json:"kind"`
		Metadata struct {
			ManagedFields span `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("decode applied object: %w", err)
	}
	if h.Kind == "Status" {
		return nil, fmt.Errorf("decode applied object: got a Status")
	}
	if b := h.Metadata.ManagedFields.b; b != nil {
		if cut, _, _, ok := withoutValue(data, b, `"managedFields"`); ok {
			data = cut
		}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decode applied object: %w", err)
	}
	u.SetManagedFields(nil) // where the cut could not be made
	return u, nil
}

// Written decodes a status write's response as the watch keeps objects
// (an Object: the metadata as fields, the rest as JSON less managedFields,
// not decoded into maps): what the writer reads of it, and what the next
// reconcile of the object reads until the watch shows the write
// (engine/controller's ownWrites).
func Written(data []byte) (*Object, error) {
	o, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("decode applied object: %w", err)
	}
	obj, ok := o.(*Object)
	if !ok {
		return nil, fmt.Errorf("decode applied object: got a %T", o)
	}
	return obj, nil
}
