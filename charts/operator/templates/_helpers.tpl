{{/*
The full name: the release's name when it holds the chart's (operator for
`helm install operator`, the names deploy/ uses), else <release>-operator.
Every object's name derives from it, except the kind-folder ConfigMaps'.
*/}}
{{- define "operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The labels Helm's conventions add to every object. They are the only
difference between this chart's objects and deploy/'s (chart_test.go
ignores exactly these).
*/}}
{{- define "operator.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/*
What selects the operator's Pods, as in deploy/: the Deployment's selector
(immutable), the Service's, the default anti-affinity's. One release per
cluster: a kind is served by one operator.
*/}}
{{- define "operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
{{- end -}}

{{- define "operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: the ServiceAccount to run as, when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "operator.kindsServiceAccountName" -}}
{{- default (printf "%s-kinds" (include "operator.fullname" .)) .Values.kindsServiceAccount.name -}}
{{- end -}}

{{/* The inventory ConfigMap: the binary names it <field manager>-inventory. */}}
{{- define "operator.inventoryName" -}}
{{- printf "%s-inventory" (lower .Values.fieldManager) -}}
{{- end -}}

{{- define "operator.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "operator.metricsPortName" -}}
{{- ternary "https" "http" .Values.metrics.secure -}}
{{- end -}}

{{/* Where the metrics' certificate Secret is mounted. */}}
{{- define "operator.metricsCertDir" -}}
/etc/operator/metrics-certs
{{- end -}}

{{/*
The Secret of the metrics' certificate, served with --metrics-cert-dir:
metrics.certSecret, else cert-manager's <full name>-metrics-cert with
metrics.certManager; empty: the self-signed certificate made at start.
*/}}
{{- define "operator.metricsCertSecret" -}}
{{- if .Values.metrics.certSecret -}}
{{- .Values.metrics.certSecret -}}
{{- else if .Values.metrics.certManager.enabled -}}
{{- printf "%s-metrics-cert" (include "operator.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Where cert-manager's webhook certificate is mounted (webhook.certManager). */}}
{{- define "operator.webhookCertDir" -}}
/etc/operator/webhook-certs
{{- end -}}

{{/* The metrics Service's name in the cluster's DNS: what its certificate is for. */}}
{{- define "operator.metricsServerName" -}}
{{- printf "%s-metrics.%s.svc" (include "operator.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/*
A name of deploy/rbac.yaml as the release names it (templates/rbac.yaml):
dict "name" the name, "names" its renames, "fullname" the full name.
*/}}
{{- define "operator.rbacName" -}}
{{- if hasKey .names .name -}}
{{- get .names .name -}}
{{- else if hasPrefix "operator-kind-" .name -}}
{{- printf "%s-kind-%s" .fullname (trimPrefix "operator-kind-" .name) -}}
{{- else -}}
{{- .name -}}
{{- end -}}
{{- end -}}
