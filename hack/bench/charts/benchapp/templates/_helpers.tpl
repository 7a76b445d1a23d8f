{{- /*
The labels app=<release name> select the Deployment's Pods, for the
Deployment and for the Service alike (hack/bench/templates/benchapp's
appservice.labels). Quoted, so that the value stays a string whatever the
name.
*/}}
{{- define "benchapp.labels" -}}
app: {{ .Release.Name | quote }}
{{- end }}
