{{- define "backend.fullname" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end }}

{{- define "common.greeting" -}}
greeting from backend
{{- end }}
