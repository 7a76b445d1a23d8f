{{- define "widget.labels" -}}
app: widget
app.kubernetes.io/managed-by: operator
{{- end }}
