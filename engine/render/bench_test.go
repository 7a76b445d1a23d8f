package render

import "testing"

// BenchmarkChildren measures one reconcile's rendering of a typical folder
// (Deployment + Service with a shared helper) for one object: the cost paid
// on every reconcile, parse excluded.
func BenchmarkChildren(b *testing.B) {
	set, err := Parse(map[string]string{
		"_helpers.tpl": `{{- define "labels" -}}
app.kubernetes.io/name: memcached
app.kubernetes.io/instance: {{ .Name }}
{{- end }}`,
		"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
  namespace: {{ .Namespace }}
  labels:
    {{- include "labels" . | nindent 4 }}
spec:
  replicas: {{ required "spec.size is required" .Spec.size }}
  selector:
    matchLabels:
      {{- include "labels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "labels" . | nindent 8 }}
    spec:
      containers:
        - name: memcached
          image: {{ .Spec.image | default "memcached:1.6.26-alpine" }}
          args: ["-m=64", "-o", "modern", "-v"]
          resources:
            {{- toYaml .Spec.resources | nindent 12 }}
          ports:
            - containerPort: 11211
              name: memcached
`,
		"service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Name }}
  namespace: {{ .Namespace }}
  labels:
    {{- include "labels" . | nindent 4 }}
spec:
  selector:
    {{- include "labels" . | nindent 4 }}
  ports:
    - name: memcached
      port: 11211
      targetPort: memcached
`,
	})
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Object: map[string]any{
		"apiVersion": "cache.example.com/v1alpha1",
		"kind":       "Memcached",
		"metadata":   map[string]any{"name": "memcached-sample", "namespace": "default", "generation": int64(1)},
		"spec": map[string]any{
			"size":      int64(3),
			"resources": map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "128Mi"}},
		},
	}}

	b.ReportAllocs()
	for b.Loop() {
		res, err := set.Children(b.Context(), in)
		if err != nil || len(res.Manifests) != 2 {
			b.Fatalf("got %v, %v", res, err)
		}
	}
}
