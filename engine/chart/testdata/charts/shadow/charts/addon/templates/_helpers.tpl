{{- define "shared.banner" -}}
banner of addon
{{- end }}
