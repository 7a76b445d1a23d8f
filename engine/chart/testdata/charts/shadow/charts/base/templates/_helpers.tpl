{{- define "shared.banner" -}}
banner of base
{{- end }}
