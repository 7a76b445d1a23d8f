{{- /* The book's newPodForCR names the Pod after the At. */}}
{{- define "at.podName" -}}
{{ .Name }}-pod
{{- end }}
