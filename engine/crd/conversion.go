package crd

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Where a CRD of several versions sends its ConversionReviews when
// nothing else says: the operator's Service as deploy/ and the chart make
// it. `run --install-crds` replaces it with its own (SetConversionClient)
// and adds the CA bundle.
const (
	DefaultWebhookNamespace = "operator-system"
	DefaultWebhookName      = "operator-webhook"
	DefaultWebhookPort      = int32(443)
	// WebhookPath is the path the operator serves conversions at
	// (engine/webhook).
	WebhookPath = "/convert"
)

// DefaultWebhookService is the Service a generated CRD of several versions
// names in spec.conversion.webhook.clientConfig, a new value on each call.
func DefaultWebhookService() apiextensionsv1.WebhookClientConfig {
	return apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
		Namespace: DefaultWebhookNamespace,
		Name:      DefaultWebhookName,
		Path:      ptr(WebhookPath),
		Port:      ptr(DefaultWebhookPort),
	}}
}

// webhookConversion is the conversion of a CRD of several versions: the
// operator's webhook, which renders the folder's conversion templates.
func webhookConversion() *apiextensionsv1.CustomResourceConversion {
	cc := DefaultWebhookService()
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &cc,
		},
	}
}

// SetConversionClient makes c's conversion webhook cc (a Service or URL,
// and the CA bundle that signs the webhook's certificate): what the
// operator installing the CRD knows of itself. A CRD without webhook
// conversion (one version) is left as it is.
func SetConversionClient(c *apiextensionsv1.CustomResourceDefinition, cc apiextensionsv1.WebhookClientConfig) {
	conv := c.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		return
	}
	if conv.Webhook == nil {
		conv.Webhook = &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}
	}
	cc = *cc.DeepCopy()
	conv.Webhook.ClientConfig = &cc
}
