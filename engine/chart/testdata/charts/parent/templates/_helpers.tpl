{{- define "parent.name" -}}
{{ .Chart.Name }}-{{ .Release.Name }}
{{- end }}

{{- define "parent.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $k, $v := .Values.labels }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end }}

{{- define "parent.port" -}}
- name: {{ .svc.name }}
  port: {{ .svc.port }}
  targetPort: {{ add .svc.port 10000 }}
{{- end }}

{{/* backend defines it too: the parent's wins, in Helm as here. */}}
{{- define "common.greeting" -}}
greeting from parent
{{- end }}
