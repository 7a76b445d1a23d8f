package operator_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The release the chart is rendered as: deploy/'s names and namespace.
const (
	releaseName      = "operator"
	releaseNamespace = "operator-system"
	repoRoot         = "../.."
)

// What the chart's objects may differ in from deploy/'s, and only where
// stripMeta strips them (metadata of every object, and the Deployment's
// Pod template): Helm's conventions.
var (
	ignoredLabels = []string{
		"helm.sh/chart",                // <chart>-<version>: which chart made the object
		"app.kubernetes.io/managed-by", // "Helm", the release's manager
		"app.kubernetes.io/instance",   // the release's name (on the Pods too, to tell releases apart)
		"app.kubernetes.io/version",    // the chart's appVersion
	}
	ignoredAnnotations = []string{
		// keep: the CRDs and the Namespace outlive `helm uninstall`, as they
		// outlive `make undeploy` (deleting a CRD deletes its objects).
		"helm.sh/resource-policy",
	}
)

// objKey names an object as apply does.
type objKey struct{ APIVersion, Kind, Namespace, Name string }

func (k objKey) String() string {
	return fmt.Sprintf("%s %s %s/%s", k.APIVersion, k.Kind, k.Namespace, k.Name)
}

func keyOf(u *unstructured.Unstructured) objKey {
	return objKey{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}
}

type objects map[objKey]*unstructured.Unstructured

// TestChartEqualsDeploy: `helm install operator -n operator-system` renders
// what `kubectl apply -k deploy`, `kubectl apply -f crds/` and `kubectl
// apply -k deploy/examples` (make deploy) apply, object for object: equal
// but for the ignored labels and annotations, so the kind folders'
// ConfigMaps byte for byte.
func TestChartEqualsDeploy(t *testing.T) {
	want := deployObjects(t)
	namespace := objKey{"v1", "Namespace", "", releaseNamespace}
	tests := []struct {
		name   string
		values map[string]any
		// notRendered: deploy/'s objects the chart leaves out with these
		// values. The Namespace: Helm records a release in its namespace
		// before it creates anything, so a chart cannot create the
		// namespace it is installed in (values.yaml, README.md).
		notRendered []objKey
	}{
		{name: "defaults", notRendered: []objKey{namespace}},
		{name: "namespace.create", values: map[string]any{"namespace": map[string]any{"create": true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustRender(t, releaseName, tt.values)
			for _, k := range sortedKeys(want) {
				if slices.Contains(tt.notRendered, k) {
					if _, ok := got[k]; ok {
						t.Errorf("%s is rendered; want it left out", k)
					}
					continue
				}
				g, ok := got[k]
				if !ok {
					t.Errorf("%s: in deploy/, not rendered by the chart", k)
					continue
				}
				for _, d := range diff("", stripMeta(t, g).Object, stripMeta(t, want[k]).Object) {
					t.Errorf("%s: %s", k, d)
				}
			}
			for _, k := range sortedKeys(got) {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: rendered by the chart, not in deploy/", k)
				}
			}
		})
	}
}

// TestValues renders non-default values and finds them where they belong.
func TestValues(t *testing.T) {
	dashboard, err := os.ReadFile("dashboards/operator.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		release string
		values  string
		check   func(t *testing.T, objs objects)
	}{{
		name: "replicas, image tag, extra args",
		values: `
replicas: 3
image: {tag: v9.9.9, pullPolicy: Always}
extraArgs: [--qps=50]
leaderElection: {leaseDuration: 30s}`,
		check: func(t *testing.T, objs objects) {
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator")
			wantField(t, d, int64(3), "spec", "replicas")
			c := container(t, d)
			wantValue(t, "image", c["image"], "operator:v9.9.9")
			wantValue(t, "imagePullPolicy", c["imagePullPolicy"], "Always")
			wantArgs(t, c, []string{"--qps=50", "--leader-elect", "--leader-elect-lease-duration=30s"}, nil)
		},
	}, {
		name: "three shards instead of a leader",
		values: `
replicas: 3
sharding: {enabled: true}
leaderElection: {leaseDuration: 20s}`,
		check: func(t *testing.T, objs objects) {
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator")
			wantField(t, d, int64(3), "spec", "replicas")
			wantArgs(t, container(t, d), []string{"--sharding", "--leader-elect-lease-duration=20s"}, []string{"--leader-elect"})
		},
	}, {
		name:   "three shards, leader election off",
		values: `{replicas: 3, sharding: {enabled: true}, leaderElection: {enabled: false}}`,
		check: func(t *testing.T, objs objects) {
			wantArgs(t, container(t, get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator")), []string{"--sharding"}, []string{"--leader-elect"})
		},
	}, {
		name:   "image digest",
		values: `image: {repository: registry.example.com/operator, tag: v1, digest: "sha256:` + strings.Repeat("ab", 32) + `"}`,
		check: func(t *testing.T, objs objects) {
			c := container(t, get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator"))
			wantValue(t, "image", c["image"], "registry.example.com/operator@sha256:"+strings.Repeat("ab", 32))
		},
	}, {
		name: "monitoring",
		values: `
metrics:
  certManager: {enabled: true}
  serviceMonitor: {enabled: true, labels: {release: prometheus}, interval: 30s}
  prometheusRule: {enabled: true, labels: {release: prometheus}}
  dashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: Operators}}`,
		check: func(t *testing.T, objs objects) {
			sm := get(t, objs, "monitoring.coreos.com/v1", "ServiceMonitor", releaseNamespace, "operator")
			wantField(t, sm, "prometheus", "metadata", "labels", "release")
			wantField(t, sm, "operator", "spec", "selector", "matchLabels", "app.kubernetes.io/name")
			eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			if len(eps) != 1 {
				t.Fatalf("ServiceMonitor endpoints: %v", eps)
			}
			ep := eps[0].(map[string]any)
			for k, v := range map[string]any{"port": "https", "scheme": "https", "path": "/metrics", "interval": "30s",
				"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"} {
				wantValue(t, "endpoint "+k, ep[k], v)
			}
			// Verified: the Service's name, the CA of the certificate
			// cert-manager issues for it.
			wantValue(t, "endpoint tlsConfig", ep["tlsConfig"], map[string]any{
				"serverName": "operator-metrics.operator-system.svc", "insecureSkipVerify": false,
				"ca": map[string]any{"secret": map[string]any{"name": "operator-metrics-cert", "key": "ca.crt"}},
			})

			pr := get(t, objs, "monitoring.coreos.com/v1", "PrometheusRule", releaseNamespace, "operator")
			wantField(t, pr, "prometheus", "metadata", "labels", "release")
			var alerts []string
			for _, r := range ruleExprs(t, pr) {
				alerts = append(alerts, r.alert)
			}
			for _, a := range []string{"OperatorDown", "OperatorReconcileErrors", "OperatorWorkqueueDepthHigh", "OperatorObjectsFailing"} {
				if !slices.Contains(alerts, a) {
					t.Errorf("PrometheusRule: no alert %s in %v", a, alerts)
				}
			}

			cm := get(t, objs, "v1", "ConfigMap", "monitoring", "operator-dashboard")
			wantField(t, cm, "1", "metadata", "labels", "grafana_dashboard")
			wantField(t, cm, "Operators", "metadata", "annotations", "grafana_folder")
			wantField(t, cm, string(dashboard), "data", "operator.json")
		},
	}, {
		name:   "cert-manager: a CA of the release's own",
		values: `metrics: {certManager: {enabled: true}}`,
		check: func(t *testing.T, objs objects) {
			const certManager = "cert-manager.io/v1"
			selfSigned := get(t, objs, certManager, "Issuer", releaseNamespace, "operator-selfsigned")
			wantField(t, selfSigned, map[string]any{}, "spec", "selfSigned")
			ca := get(t, objs, certManager, "Certificate", releaseNamespace, "operator-metrics-ca")
			wantField(t, ca, true, "spec", "isCA")
			wantField(t, ca, "operator-metrics-ca", "spec", "secretName")
			wantField(t, ca, "operator-selfsigned", "spec", "issuerRef", "name")
			caIssuer := get(t, objs, certManager, "Issuer", releaseNamespace, "operator-metrics-ca")
			wantField(t, caIssuer, "operator-metrics-ca", "spec", "ca", "secretName")
			cert := get(t, objs, certManager, "Certificate", releaseNamespace, "operator-metrics")
			wantField(t, cert, "operator-metrics-cert", "spec", "secretName")
			wantField(t, cert, []any{"operator-metrics.operator-system.svc", "operator-metrics.operator-system.svc.cluster.local"}, "spec", "dnsNames")
			wantField(t, cert, map[string]any{"name": "operator-metrics-ca", "kind": "Issuer", "group": "cert-manager.io"}, "spec", "issuerRef")
			// The Service the certificate names is the metrics Service.
			get(t, objs, "v1", "Service", releaseNamespace, "operator-metrics")
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator")
			wantArgs(t, container(t, d), []string{"--metrics-cert-dir=/etc/operator/metrics-certs"}, nil)
			wantField(t, d, "operator-metrics-cert", "spec", "template", "spec", "volumes", "0", "secret", "secretName")
			noKind(t, objs, "ServiceMonitor")
		},
	}, {
		name: "cert-manager: a ClusterIssuer, into a Secret named",
		values: `
metrics:
  certSecret: metrics-tls
  certManager: {enabled: true, issuerRef: {name: corp-ca, kind: ClusterIssuer}}
  serviceMonitor: {enabled: true}`,
		check: func(t *testing.T, objs objects) {
			cert := get(t, objs, "cert-manager.io/v1", "Certificate", releaseNamespace, "operator-metrics")
			wantField(t, cert, "metrics-tls", "spec", "secretName")
			wantField(t, cert, map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}, "spec", "issuerRef")
			noKind(t, objs, "Issuer")
			for k := range objs {
				if k.Kind == "Certificate" && k.Name != "operator-metrics" {
					t.Errorf("%s rendered with an issuer given", k)
				}
			}
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator")
			wantField(t, d, "metrics-tls", "spec", "template", "spec", "volumes", "0", "secret", "secretName")
			sm := get(t, objs, "monitoring.coreos.com/v1", "ServiceMonitor", releaseNamespace, "operator")
			wantField(t, sm, map[string]any{"secret": map[string]any{"name": "metrics-tls", "key": "ca.crt"}}, "spec", "endpoints", "0", "tlsConfig", "ca")
		},
	}, {
		name:   "a certificate Secret of one's own",
		values: `metrics: {certSecret: metrics-tls, serviceMonitor: {enabled: true}}`,
		check: func(t *testing.T, objs objects) {
			noKind(t, objs, "Certificate")
			sm := get(t, objs, "monitoring.coreos.com/v1", "ServiceMonitor", releaseNamespace, "operator")
			wantField(t, sm, map[string]any{
				"serverName": "operator-metrics.operator-system.svc", "insecureSkipVerify": false,
				"ca": map[string]any{"secret": map[string]any{"name": "metrics-tls", "key": "ca.crt"}},
			}, "spec", "endpoints", "0", "tlsConfig")
		},
	}, {
		name: "a tlsConfig of one's own is used as is",
		values: `
metrics:
  serviceMonitor:
    enabled: true
    tlsConfig: {serverName: metrics.example.com, ca: {configMap: {name: corp-ca, key: ca.crt}}}`,
		check: func(t *testing.T, objs objects) {
			sm := get(t, objs, "monitoring.coreos.com/v1", "ServiceMonitor", releaseNamespace, "operator")
			wantField(t, sm, map[string]any{"serverName": "metrics.example.com", "ca": map[string]any{"configMap": map[string]any{"name": "corp-ca", "key": "ca.crt"}}},
				"spec", "endpoints", "0", "tlsConfig")
		},
	}, {
		name:   "no verification, knowingly",
		values: `metrics: {serviceMonitor: {enabled: true, tlsConfig: {insecureSkipVerify: true}}}`,
		check: func(t *testing.T, objs objects) {
			sm := get(t, objs, "monitoring.coreos.com/v1", "ServiceMonitor", releaseNamespace, "operator")
			wantField(t, sm, map[string]any{"insecureSkipVerify": true}, "spec", "endpoints", "0", "tlsConfig")
		},
	}, {
		name:   "no monitoring by default",
		values: ``,
		check: func(t *testing.T, objs objects) {
			for k := range objs {
				if k.Kind == "ServiceMonitor" || k.Kind == "PrometheusRule" || k.Name == "operator-dashboard" {
					t.Errorf("%s rendered by default", k)
				}
			}
		},
	}, {
		name:    "the webhook's certificate from cert-manager, another release name",
		release: "ops",
		values:  `webhook: {port: 10443, certManager: {enabled: true}}`,
		check: func(t *testing.T, objs objects) {
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "ops-operator")
			c := container(t, d)
			wantArgs(t, c, []string{"--webhook-bind-address=:10443", "--webhook-service=" + releaseNamespace + "/ops-operator-webhook:443",
				"--webhook-cert-dir=/etc/operator/webhook-certs"}, nil)
			wantField(t, d, "ops-operator-webhook-cert", "spec", "template", "spec", "volumes", "0", "secret", "secretName")
			wantField(t, d, "/etc/operator/webhook-certs", "spec", "template", "spec", "containers", "0", "volumeMounts", "0", "mountPath")
			svc := get(t, objs, "v1", "Service", releaseNamespace, "ops-operator-webhook")
			wantField(t, svc, []any{map[string]any{"name": "webhook", "port": int64(443), "targetPort": "webhook"}}, "spec", "ports")
			cert := get(t, objs, "cert-manager.io/v1", "Certificate", releaseNamespace, "ops-operator-webhook")
			wantField(t, cert, "ops-operator-webhook-cert", "spec", "secretName")
			wantField(t, cert, []any{"ops-operator-webhook." + releaseNamespace + ".svc", "ops-operator-webhook." + releaseNamespace + ".svc.cluster.local"}, "spec", "dnsNames")
			np := get(t, objs, "networking.k8s.io/v1", "NetworkPolicy", releaseNamespace, "ops-operator")
			wantField(t, np, []any{map[string]any{"protocol": "TCP", "port": int64(10443)}}, "spec", "ingress", "0", "ports")
			// The Secret the binary keeps its own certificate in has one
			// name whatever the release's (engine/webhook.DefaultSecretName).
			role := get(t, objs, "rbac.authorization.k8s.io/v1", "Role", releaseNamespace, "ops-operator")
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			found := false
			for _, r := range rules {
				names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
				res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				found = found || slices.Equal(res, []string{"secrets"}) && slices.Equal(names, []string{"operator-webhook-cert"})
			}
			if !found {
				t.Errorf("Role ops-operator grants no rule on Secret operator-webhook-cert by name: %v", rules)
			}
		},
	}, {
		name:   "no webhook, no NetworkPolicy",
		values: `{webhook: {enabled: false}, networkPolicy: {enabled: false}}`,
		check: func(t *testing.T, objs objects) {
			c := container(t, get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator"))
			wantArgs(t, c, nil, []string{"--webhook-bind-address=:9443", "--webhook-service=" + releaseNamespace + "/operator-webhook:443"})
			for k := range objs {
				if k.Name == "operator-webhook" || k.Kind == "NetworkPolicy" {
					t.Errorf("%s rendered with the webhook and the NetworkPolicy off", k)
				}
			}
		},
	}, {
		name:   "no CRDs",
		values: `installCRDs: false`,
		check: func(t *testing.T, objs objects) {
			for k := range objs {
				if k.Kind == "CustomResourceDefinition" {
					t.Errorf("%s rendered with installCRDs false", k)
				}
			}
		},
	}, {
		name: "plain metrics with a certificate secret",
		values: `
metrics: {secure: false, certSecret: metrics-tls, port: 8080, serviceMonitor: {enabled: true}}`,
		check: func(t *testing.T, objs objects) {
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator")
			c := container(t, d)
			wantArgs(t, c, []string{"--metrics-secure=false", "--metrics-bind-address=:8080", "--metrics-cert-dir=/etc/operator/metrics-certs"}, nil)
			wantValue(t, "ports", c["ports"], []any{
				map[string]any{"name": "http", "containerPort": int64(8080)},
				map[string]any{"name": "health", "containerPort": int64(8081)},
				map[string]any{"name": "webhook", "containerPort": int64(9443)},
			})
			wantField(t, d, "metrics-tls", "spec", "template", "spec", "volumes", "0", "secret", "secretName")
			svc := get(t, objs, "v1", "Service", releaseNamespace, "operator-metrics")
			wantField(t, svc, []any{map[string]any{"name": "http", "port": int64(8080), "targetPort": "http"}}, "spec", "ports")
			sm := get(t, objs, "monitoring.coreos.com/v1", "ServiceMonitor", releaseNamespace, "operator")
			wantField(t, sm, "http", "spec", "endpoints", "0", "scheme")
			wantField(t, sm, nil, "spec", "endpoints", "0", "bearerTokenFile")
		},
	}, {
		name:    "another release name",
		release: "ops",
		values:  `fieldManager: tmplop`,
		check: func(t *testing.T, objs objects) {
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "ops-operator")
			wantField(t, d, "ops-operator", "spec", "template", "spec", "serviceAccountName")
			wantArgs(t, container(t, d), []string{"--default-service-account=ops-operator-kinds", "--field-manager=tmplop"}, nil)
			get(t, objs, "v1", "ServiceAccount", releaseNamespace, "ops-operator-kinds")
			get(t, objs, "v1", "ConfigMap", releaseNamespace, "tmplop-inventory")
			get(t, objs, "rbac.authorization.k8s.io/v1", "ClusterRole", "", "ops-operator-metrics-reader")
			get(t, objs, "v1", "Service", releaseNamespace, "ops-operator-metrics")
			role := get(t, objs, "rbac.authorization.k8s.io/v1", "Role", releaseNamespace, "ops-operator")
			wantValue(t, "the Role's patch, by name", ruleNames(t, role, "patch"), []any{"tmplop-inventory"})
			// Each shipped kind's own account, renamed as its role is (the
			// operator finds it by its annotation), and the default one.
			wantValue(t, "the Role's impersonate, by name", ruleNames(t, role, "impersonate"), []any{
				"ops-operator-kind-appservice", "ops-operator-kind-at", "ops-operator-kind-helloworld", "ops-operator-kind-memcached",
				"ops-operator-kind-migratedapp", "ops-operator-kind-mydaemonset", "ops-operator-kind-webapp", "ops-operator-kinds"})
			sa := get(t, objs, "v1", "ServiceAccount", releaseNamespace, "ops-operator-kind-memcached")
			wantField(t, sa, "Memcached.cache.example.com", "metadata", "annotations", "operator.tmplop.io/serves")
			crb := get(t, objs, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "ops-operator-kind-memcached")
			wantField(t, crb, "ops-operator-kind-memcached", "roleRef", "name")
			wantField(t, crb, "ops-operator-kind-memcached", "subjects", "0", "name")
			// The default account: rendered, and bound to nothing.
			for k, o := range objs {
				subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
				for _, s := range subjects {
					if s.(map[string]any)["name"] == "ops-operator-kinds" {
						t.Errorf("%s binds the default account ops-operator-kinds: every folder added later would have its rights", k)
					}
				}
			}
			// The kind folders keep their names: the operator finds them by label.
			get(t, objs, "v1", "ConfigMap", releaseNamespace, "memcached")
		},
	}, {
		name:   "one replica without leader election",
		values: `{replicas: 1, leaderElection: {enabled: false}}`,
		check: func(t *testing.T, objs objects) {
			c := container(t, get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator"))
			wantArgs(t, c, nil, []string{"--leader-elect"})
			// A budget for one replica would block every drain.
			noKind(t, objs, "PodDisruptionBudget")
		},
	}, {
		name:   "a disruption budget for three shards",
		values: `{replicas: 3, sharding: {enabled: true}, podDisruptionBudget: {maxUnavailable: 2}}`,
		check: func(t *testing.T, objs objects) {
			pdb := get(t, objs, "policy/v1", "PodDisruptionBudget", releaseNamespace, "operator")
			wantField(t, pdb, int64(2), "spec", "maxUnavailable")
			d := get(t, objs, "apps/v1", "Deployment", releaseNamespace, "operator")
			sel, _, _ := unstructured.NestedMap(d.Object, "spec", "selector", "matchLabels")
			wantField(t, pdb, sel, "spec", "selector", "matchLabels")
		},
	}, {
		name:   "no disruption budget",
		values: `podDisruptionBudget: {enabled: false}`,
		check: func(t *testing.T, objs objects) {
			noKind(t, objs, "PodDisruptionBudget")
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := tt.release
			if release == "" {
				release = releaseName
			}
			tt.check(t, mustRender(t, release, parseValues(t, tt.values)))
		})
	}
}

// ruleNames are the resourceNames of role's first rule by name that has verb.
func ruleNames(t *testing.T, role *unstructured.Unstructured, verb string) any {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		names, named := r.(map[string]any)["resourceNames"]
		if verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs"); named && slices.Contains(verbs, verb) {
			return names
		}
	}
	t.Fatalf("%s: no rule of verb %s", role.GetName(), verb)
	return nil
}

// TestValuesRefused: the schema refuses a value of the wrong type or an
// unknown one, naming it; the templates refuse what cannot work.
func TestValuesRefused(t *testing.T) {
	tests := []struct {
		name, values string
		want         []string // in the error
	}{
		{"replicas not an integer", `replicas: three`, []string{"/replicas", "want integer"}},
		{"tag not a string", `image: {tag: 5}`, []string{"/image/tag", "want string"}},
		{"enabled not a boolean", `metrics: {serviceMonitor: {enabled: "yes"}}`, []string{"/metrics/serviceMonitor/enabled", "want boolean"}},
		{"port out of range", `metrics: {port: 70000}`, []string{"/metrics/port"}},
		{"unknown pull policy", `image: {pullPolicy: Sometimes}`, []string{"/image/pullPolicy"}},
		{"misspelt value", `replica: 3`, []string{"'replica'"}},
		{"bad digest", `image: {digest: latest}`, []string{"/image/digest"}},
		{"replicas without a leader", `{replicas: 2, leaderElection: {enabled: false}}`, []string{"leaderElection.enabled or sharding.enabled"}},
		{"sharding not a boolean", `sharding: {enabled: "yes"}`, []string{"/sharding/enabled", "want boolean"}},
		{"a budget that allows no eviction", `podDisruptionBudget: {maxUnavailable: 0}`, []string{"/podDisruptionBudget/maxUnavailable"}},
		{"no account to run as", `serviceAccount: {create: false}`, []string{"serviceAccount.name"}},
		// Prometheus could not verify the self-signed certificate made at
		// start, and would send its token to whoever answers.
		{"a ServiceMonitor that cannot verify the operator", `metrics: {serviceMonitor: {enabled: true}}`,
			[]string{"metrics.serviceMonitor", "metrics.certManager.enabled", "metrics.certSecret", "insecureSkipVerify"}},
		{"an issuer of an unknown kind", `metrics: {certManager: {enabled: true, issuerRef: {name: ca, kind: Vault}}}`,
			[]string{"/metrics/certManager/issuerRef/kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(loadChart(t), releaseName, parseValues(t, tt.values))
			if err == nil {
				t.Fatalf("values %s rendered; want an error naming %q", tt.values, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// noKind fails if objs hold an object of kind.
func noKind(t *testing.T, objs objects, kind string) {
	t.Helper()
	for k := range objs {
		if k.Kind == kind {
			t.Errorf("%s rendered", k)
		}
	}
}

// TestNotesWarnUnverified: NOTES.txt warns while the ServiceMonitor sends
// Prometheus' token without verifying the operator's certificate, and only
// then.
func TestNotesWarnUnverified(t *testing.T) {
	tests := []struct {
		name, values string
		warn         bool
	}{
		{"defaults", ``, false},
		{"verified with cert-manager", `metrics: {certManager: {enabled: true}, serviceMonitor: {enabled: true}}`, false},
		{"insecureSkipVerify", `metrics: {serviceMonitor: {enabled: true, tlsConfig: {insecureSkipVerify: true}}}`, true},
		{"insecureSkipVerify, no ServiceMonitor", `metrics: {serviceMonitor: {tlsConfig: {insecureSkipVerify: true}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := loadChart(t)
			vals, err := chartutil.ToRenderValues(ch, parseValues(t, tt.values), chartutil.ReleaseOptions{
				Name: releaseName, Namespace: releaseNamespace, Revision: 1, IsInstall: true,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			files, err := engine.Render(ch, vals)
			if err != nil {
				t.Fatal(err)
			}
			notes, ok := files["operator/templates/NOTES.txt"]
			if !ok {
				t.Fatalf("no NOTES.txt in %d files", len(files))
			}
			if got := strings.Contains(notes, "WARNING: the ServiceMonitor skips the verification"); got != tt.warn {
				t.Errorf("warning in NOTES.txt: %v, want %v:\n%s", got, tt.warn, notes)
			}
		})
	}
}
