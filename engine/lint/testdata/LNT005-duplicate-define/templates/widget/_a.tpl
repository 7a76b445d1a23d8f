{{ define "name" }}{{ .Name }}{{ end }}
