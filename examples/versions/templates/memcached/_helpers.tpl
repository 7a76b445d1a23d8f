{{- /*
The tutorial's labelsForMemcached. The same labels are the Deployment's
selector, its Pod template's labels and, as a selector string, what
status.yaml lists the Pods with: keep the two definitions side by side so
they cannot drift apart.

Values are quoted: a name such as "123" or "true" is a valid object name but
would otherwise be read as a number or a boolean, and label values must be
strings.
*/}}
{{- define "memcached.labels" -}}
app: memcached
memcached_cr: {{ .Name | quote }}
{{- end }}

{{- define "memcached.selector" -}}
app=memcached,memcached_cr={{ .Name }}
{{- end }}
