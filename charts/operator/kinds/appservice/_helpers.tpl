{{- /*
The tutorial's labels: app=<name> selects the Deployment's Pods, for the
Deployment and for the Service alike. Quoted, so that the value stays a
string whatever the name.
*/}}
{{- define "appservice.labels" -}}
app: {{ .Name | quote }}
{{- end }}
