{{- /*
The tutorial's only label, hello_name: the Deployment's selector, its Pod
template's labels and the selector status.yaml lists the Pods with.
Quoted, so that a name such as "123" stays a string.
*/}}
{{- define "helloworld.labels" -}}
hello_name: {{ .Name | quote }}
{{- end }}

{{- define "helloworld.selector" -}}
hello_name={{ .Name }}
{{- end }}
