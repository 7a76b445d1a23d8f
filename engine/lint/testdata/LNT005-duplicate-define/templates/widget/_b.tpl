{{- define "name" }}{{ .Name }}-b{{ end }}
