package harness

import (
	"context"
	"crypto/tls"
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

// HTTPSGet is HTTPGet of an https URL with a bearer token ("" for none), as
// a scraper reads the operator's authenticated /metrics. The operator's
// certificate is self-signed unless --metrics-cert-dir gives one, so it is
// not verified: what these tests check is who may read, not the chain.
func HTTPSGet(ctx context.Context, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
