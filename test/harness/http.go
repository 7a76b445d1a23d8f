package harness

import (
	"context"
	"io"
	"net/http"
)

// HTTPGet returns the status code and body of GET url: the operator's
// /metrics, /healthz and /readyz, as a scraper or the kubelet reads them.
func HTTPGet(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
