package cached

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Client lists and watches any resource into Objects.
type Client struct {
	rest rest.Interface
}

// NewClient is a Client for cfg on httpClient (share the dynamic client's,
// so that both use one connection).
func NewClient(cfg *rest.Config, httpClient *http.Client) (*Client, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.GroupVersion = &schema.GroupVersion{}
	c.APIPath = "/no-api-path" // every request sets an absolute path
	c.NegotiatedSerializer = negotiated{}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("list and watch client: %w", err)
	}
	return &Client{rest: rc}, nil
}

// resourcePath is the URL path of gvr's collection in ns.
func resourcePath(gvr schema.GroupVersionResource, ns string) []string {
	path := []string{"api"}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group}
	}
	path = append(path, gvr.Version)
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	return append(path, gvr.Resource)
}

// the parameter version of list options, as the dynamic client sends them.
var optionsVersion = schema.GroupVersion{Version: "v1"}

// ListWatch lists and watches gvr in namespace ns ("" for all), with
// tweak applied to every request's options.
func (c *Client) ListWatch(gvr schema.GroupVersionResource, ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
	path := resourcePath(gvr, ns)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&o)
			}
			out := &List{}
			err := c.rest.Get().AbsPath(path...).SpecificallyVersionedParams(&o, metav1.ParameterCodec, optionsVersion).Do(ctx).Into(out)
			if err != nil {
				return nil, err
			}
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&o)
			}
			o.Watch = true
			return c.rest.Get().AbsPath(path...).SpecificallyVersionedParams(&o, metav1.ParameterCodec, optionsVersion).Watch(ctx)
		},
	}
}
