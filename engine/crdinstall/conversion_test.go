package crdinstall

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestSetConversionClient: a CRD that converts with a webhook is pointed
// at the operator's, caBundle included; one that does not convert, or an
// Installer without a webhook, is left as the folder made it.
func TestSetConversionClient(t *testing.T) {
	url := "https://127.0.0.1:9443/convert"
	served := &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: []byte("CA")}
	webhook := func() *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}, ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{Namespace: "operator-system", Name: "operator-webhook"},
			}},
		}}}
	}
	cases := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		client  func() *apiextensionsv1.WebhookClientConfig
		wantURL bool
	}{
		{name: "webhook", crd: webhook(), client: func() *apiextensionsv1.WebhookClientConfig { return served }, wantURL: true},
		{name: "no webhook served", crd: webhook(), client: nil},
		{name: "webhook not ready", crd: webhook(), client: func() *apiextensionsv1.WebhookClientConfig { return nil }},
		{name: "one version", crd: &apiextensionsv1.CustomResourceDefinition{}, client: func() *apiextensionsv1.WebhookClientConfig { return served }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			(&Installer{ConversionClient: tc.client}).setConversionClient(tc.crd)
			conv := tc.crd.Spec.Conversion
			got := conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig.URL != nil
			if got != tc.wantURL {
				t.Fatalf("clientConfig set: %v, want %v (%+v)", got, tc.wantURL, conv)
			}
			if got && (string(conv.Webhook.ClientConfig.CABundle) != "CA" || conv.Webhook.ClientConfig.Service != nil) {
				t.Errorf("clientConfig %+v, want the served one", conv.Webhook.ClientConfig)
			}
		})
	}
	if served.Service != nil || string(served.CABundle) != "CA" {
		t.Error("the served clientConfig was changed")
	}
}
