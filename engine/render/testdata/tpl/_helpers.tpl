{{- define "tpl.fullname" -}}
{{ .Namespace }}-{{ .Name }}
{{- end }}
