{{- define "store.name" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end }}
