package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/cmd/operator/app"
	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/test/cluster"
)

const appService = `
apiVersion: app.example.com/v1
kind: AppService
metadata:
  name: nginx-app
spec:
  size: 2
  image: nginx:1.7.9
  ports:
  - port: 80
    targetPort: 80
    nodePort: 30002
`

func TestAppService(t *testing.T) {
	ns := env.Namespace(t)
	env.Create(t, appserviceGVR, ns, appService)

	cluster.Eventually(t, 60*time.Second, "a NodePort Service on 30002 and a 2-replica Deployment", func(ctx context.Context) (bool, error) {
		svc, err := env.Get(ctx, serviceGVR, ns, "nginx-app")
		if err != nil {
			return false, err
		}
		typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		if typ != "NodePort" || len(ports) != 1 || ports[0].(map[string]any)["nodePort"] != int64(30002) {
			return false, nil
		}
		d, err := env.Get(ctx, deployGVR, ns, "nginx-app")
		if err != nil {
			return false, err
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return r == 2, nil
	})
	cluster.Eventually(t, 60*time.Second, "status carries the Deployment's status", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, appserviceGVR, ns, "nginx-app")
		if err != nil {
			return false, err
		}
		ready, _, _ := unstructured.NestedInt64(o.Object, "status", "readyReplicas")
		avail, _, _ := unstructured.NestedInt64(o.Object, "status", "availableReplicas")
		return ready == 2 && avail == 2 && cluster.Condition(o, "Reconciled").Status == "True", nil
	})

	t.Run("a deleted Service is re-created", func(t *testing.T) {
		old, err := env.Get(t.Context(), serviceGVR, ns, "nginx-app")
		if err != nil {
			t.Fatal(err)
		}
		env.Delete(t, serviceGVR, ns, "nginx-app")
		cluster.Eventually(t, 30*time.Second, "Service re-created", func(ctx context.Context) (bool, error) {
			s, err := env.Get(ctx, serviceGVR, ns, "nginx-app")
			return err == nil && s.GetUID() != old.GetUID(), nil
		})
	})

	t.Run("render prints what run applied", func(t *testing.T) {
		live, err := env.Get(t.Context(), appserviceGVR, ns, "nginx-app")
		if err != nil {
			t.Fatal(err)
		}
		data, err := yaml.Marshal(live.Object)
		if err != nil {
			t.Fatal(err)
		}
		cr := filepath.Join(t.TempDir(), "cr.yaml")
		if err := os.WriteFile(cr, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd := app.NewRootCommand(&out, &out)
		cmd.SetArgs([]string{"render", "--templates", filepath.Join(env.RepoRoot(), "templates"), "-f", cr, "--field-manager", fieldManager})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("render: %v\n%s", err, out.String())
		}
		rendered := 0
		for _, doc := range strings.Split(out.String(), "\n---\n") {
			// Decoded as the API server does (whole numbers as int64).
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			var o map[string]any
			if err := utiljson.Unmarshal(j, &o); err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: o}
			if len(o) == 0 || u.GetKind() == "" {
				continue // the status preview
			}
			rendered++
			res := deployGVR
			if u.GetKind() == "Service" {
				res = serviceGVR
			}
			got, err := env.Get(t.Context(), res, u.GetNamespace(), u.GetName())
			if err != nil {
				t.Fatalf("rendered %s %s/%s is not in the cluster: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
			if !apply.Contains(got.Object, u.Object) {
				t.Errorf("live %s differs from what render prints:\nrendered:\n%s", u.GetKind(), doc)
			}
		}
		if rendered != 2 {
			t.Fatalf("render printed %d children, want 2:\n%s", rendered, out.String())
		}
	})
}
