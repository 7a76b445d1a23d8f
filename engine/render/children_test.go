package render

import (
	"testing"
)

func TestChildrenKeys(t *testing.T) {
	set := mustParse(t, map[string]string{"status.yaml": `
ready: {{ .Ready }}
bare: {{ dig "Deployment" "web" "status" "readyReplicas" 0 .Children }}
qualified: {{ dig "Deployment.apps" "web" "status" "readyReplicas" 0 .Children }}
service: {{ dig "Service" "web" "spec" "type" "" .Children | quote }}
certBare: {{ hasKey .Children "Certificate" }}
certA: {{ dig "Certificate.a.io" "web" "spec" "from" "" .Children | quote }}
certB: {{ dig "Certificate.b.io" "web" "spec" "from" "" .Children | quote }}
eventBare: {{ dig "Event" "e" "note" "" .Children | quote }}
eventGroup: {{ dig "Event.events.k8s.io" "e" "note" "" .Children | quote }}
health: {{ dig "Deployment" "web" "health" "status" "" .Children | quote }}
`})
	child := func(apiVersion, kind string, extra map[string]any) map[string]any {
		c := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "web"}}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	in := Input{Ready: true, Children: map[string]map[string]any{
		// Keyed as the reconciler keys them, and as older callers do.
		"Deployment.apps": {"web": child("apps/v1", "Deployment", map[string]any{"status": map[string]any{"readyReplicas": int64(2)},
			"health": map[string]any{"status": "Current", "message": "2/2 available"}})},
		"Service":          {"web": child("v1", "Service", map[string]any{"spec": map[string]any{"type": "NodePort"}})},
		"Certificate.a.io": {"web": child("a.io/v1", "Certificate", map[string]any{"spec": map[string]any{"from": "a"}})},
		"Certificate.b.io": {"web": child("b.io/v1", "Certificate", map[string]any{"spec": map[string]any{"from": "b"}})},
		"Event":            {"e": map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "e"}, "note": "core"}},
		"Event.events.k8s.io": {"e": map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event",
			"metadata": map[string]any{"name": "e"}, "note": "events"}},
	}}
	res, err := set.Status(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ready": true, "bare": int64(2), "qualified": int64(2), "service": "NodePort",
		"certBare": false, "certA": "a", "certB": "b", "eventBare": "core", "eventGroup": "events", "health": "Current"}
	for k, v := range want {
		if res.Status[k] != v {
			t.Errorf("%s = %#v, want %#v (status %v)", k, res.Status[k], v, res.Status)
		}
	}
}
