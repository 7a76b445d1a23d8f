{{/* Labels shared by every child, so selectors and owners agree. */}}
{{- define "memcached.selectorLabels" -}}
app.kubernetes.io/name: memcached
app.kubernetes.io/instance: {{ .Name }}
{{- end }}

{{- define "memcached.labels" -}}
{{ include "memcached.selectorLabels" . }}
app.kubernetes.io/managed-by: tmplop
{{- with .Labels.team }}
team: {{ . }}
{{- end }}
{{- end }}
