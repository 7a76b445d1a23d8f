package app

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/crd"
)

// deployObjects are the objects of deploy/'s files that these tests read.
type deployObjects struct {
	deployment *appsv1.Deployment
	services   map[string]*corev1.Service // by namespace/name
	policies   []*networkingv1.NetworkPolicy
}

// readDeploy reads the objects of the YAML streams files (from the
// module's root), each into its type by its kind.
func readDeploy(t *testing.T, files ...string) deployObjects {
	t.Helper()
	objs := deployObjects{services: map[string]*corev1.Service{}}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(data), "\n---\n") {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			var err error
			switch meta.Kind {
			case "Deployment":
				if objs.deployment != nil {
					t.Fatalf("%s: a second Deployment", file)
				}
				objs.deployment = &appsv1.Deployment{}
				err = yaml.UnmarshalStrict([]byte(doc), objs.deployment)
			case "Service":
				var s corev1.Service
				err = yaml.UnmarshalStrict([]byte(doc), &s)
				objs.services[s.Namespace+"/"+s.Name] = &s
			case "NetworkPolicy":
				var p networkingv1.NetworkPolicy
				err = yaml.UnmarshalStrict([]byte(doc), &p)
				objs.policies = append(objs.policies, &p)
			}
			if err != nil {
				t.Fatalf("%s: document %d (%s): %v", file, i, meta.Kind, err)
			}
		}
	}
	if objs.deployment == nil {
		t.Fatalf("%v hold no Deployment", files)
	}
	return objs
}

// flagValue is the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// containerPort is the port of c that target names (by name or number).
func containerPort(c corev1.Container, target intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, p := range c.Ports {
		if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

// TestDeployWebhook checks that deploy/ serves the conversion webhook as
// the CRDs call it: the operator's --webhook-service names a Service of
// deploy/ and its port; that port leads to the container port the operator
// binds --webhook-bind-address to; the Service selects every replica (the
// Deployment's own selector, nothing that one replica has and another has
// not); it is the Service `operator crd` writes into the CRDs of several
// versions; and deploy/'s NetworkPolicy admits every port the container
// serves, the webhook's included. Any one of these changed alone fails.
func TestDeployWebhook(t *testing.T) {
	t.Chdir("../../..")
	objs := readDeploy(t, "deploy/operator.yaml", "deploy/networkpolicy.yaml")
	d := objs.deployment
	c := d.Spec.Template.Spec.Containers[0]

	bind, ok := flagValue(c.Args, "webhook-bind-address")
	if !ok || bind == "0" {
		t.Fatalf("deploy/operator.yaml runs the operator without --webhook-bind-address: %q", c.Args)
	}
	_, bindPort, err := net.SplitHostPort(bind)
	if err != nil {
		t.Fatalf("--webhook-bind-address=%s: %v", bind, err)
	}
	if _, ok := flagValue(c.Args, "webhook-url"); ok {
		t.Errorf("deploy/operator.yaml runs --webhook-url: in a cluster the API server calls the Service (--webhook-service)")
	}
	svcFlag, ok := flagValue(c.Args, "webhook-service")
	if !ok {
		t.Fatalf("deploy/operator.yaml runs no --webhook-service: --install-crds would point the CRDs at 127.0.0.1")
	}
	ref, err := parseService(svcFlag)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Namespace != d.Namespace {
		t.Errorf("--webhook-service=%s: namespace %s, the operator's is %s", svcFlag, ref.Namespace, d.Namespace)
	}
	want := crd.DefaultWebhookService().Service
	if ref.Namespace != want.Namespace || ref.Name != want.Name || *ref.Port != *want.Port || *ref.Path != *want.Path {
		t.Errorf("--webhook-service=%s is not the Service %s/%s:%d%s that `operator crd` writes into a CRD of several versions",
			svcFlag, want.Namespace, want.Name, *want.Port, *want.Path)
	}

	svc := objs.services[ref.Namespace+"/"+ref.Name]
	if svc == nil {
		t.Fatalf("--webhook-service=%s: deploy/ has no Service %s/%s", svcFlag, ref.Namespace, ref.Name)
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == *ref.Port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		t.Fatalf("Service %s has no port %d (--webhook-service=%s)", svc.Name, *ref.Port, svcFlag)
	}
	cp, ok := containerPort(c, sp.TargetPort)
	if !ok {
		t.Fatalf("Service %s port %d targets %s, which the operator's container does not declare", svc.Name, sp.Port, sp.TargetPort.String())
	}
	if strconv.Itoa(int(cp.ContainerPort)) != bindPort {
		t.Errorf("Service %s port %d leads to container port %s (%d), the webhook binds %s", svc.Name, sp.Port, cp.Name, cp.ContainerPort, bind)
	}

	// Every replica: the Service selects what the Deployment selects its
	// own Pods by, which every replica has whatever its role.
	if len(svc.Spec.Selector) == 0 {
		t.Errorf("Service %s selects nothing: it would have no endpoints", svc.Name)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Selector.MatchLabels[k] != v {
			t.Errorf("Service %s selects %s=%s, which is not the Deployment's selector %v: not every replica would serve the webhook", svc.Name, k, v, d.Spec.Selector.MatchLabels)
		}
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service %s selects %s=%s, which the Deployment's Pods do not have", svc.Name, k, v)
		}
	}

	// The NetworkPolicies that select the operator's Pods admit every
	// port its container serves: the webhook, /metrics, the probes.
	var selecting []*networkingv1.NetworkPolicy
	for _, p := range objs.policies {
		if p.Namespace == d.Namespace && matches(p.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels) {
			selecting = append(selecting, p)
		}
	}
	if len(selecting) == 0 {
		t.Fatalf("no NetworkPolicy of deploy/ selects the operator's Pods")
	}
	for _, port := range c.Ports {
		if !admitted(selecting, port) {
			t.Errorf("deploy/'s NetworkPolicies do not admit container port %s (%d): its callers would time out", port.Name, port.ContainerPort)
		}
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// admitted says whether an ingress rule of policies admits port from any
// source.
func admitted(policies []*networkingv1.NetworkPolicy, port corev1.ContainerPort) bool {
	for _, p := range policies {
		if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		for _, rule := range p.Spec.Ingress {
			if len(rule.From) > 0 {
				continue
			}
			if len(rule.Ports) == 0 {
				return true
			}
			for _, rp := range rule.Ports {
				proto := corev1.ProtocolTCP
				if rp.Protocol != nil {
					proto = *rp.Protocol
				}
				if proto != corev1.ProtocolTCP || rp.Port == nil {
					continue
				}
				if (rp.Port.Type == intstr.Int && rp.Port.IntVal == port.ContainerPort) || (rp.Port.Type == intstr.String && rp.Port.StrVal == port.Name) {
					return true
				}
			}
		}
	}
	return false
}

// TestDeployCertManager checks deploy/cert-manager against deploy/: its
// patch's test holds the base's --webhook-service argument at the index it
// names (else the build fails), the Certificate is for the Service the
// operator is called through, and its Secret is mounted at the directory
// given to --webhook-cert-dir. test/incluster builds it with kubectl.
func TestDeployCertManager(t *testing.T) {
	t.Chdir("../../..")
	base := readDeploy(t, "deploy/operator.yaml")
	args := base.deployment.Spec.Template.Spec.Containers[0].Args
	svcFlag, _ := flagValue(args, "webhook-service")
	ref, err := parseService(svcFlag)
	if err != nil {
		t.Fatal(err)
	}

	var kust struct {
		Kind      string
		Resources []string
		Patches   []struct {
			Target struct{ Kind, Name string }
			Patch  string
		}
	}
	readYAML(t, "deploy/cert-manager/kustomization.yaml", &kust)
	if kust.Kind != "Component" || len(kust.Patches) != 1 || kust.Patches[0].Target.Kind != "Deployment" {
		t.Fatalf("deploy/cert-manager/kustomization.yaml: want a Component with one patch of the Deployment, got %+v", kust)
	}
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := yaml.Unmarshal([]byte(kust.Patches[0].Patch), &ops); err != nil {
		t.Fatalf("deploy/cert-manager's patch: %v", err)
	}
	var certDir string
	volumes := map[string]string{} // volume -> Secret
	mounts := map[string]string{}  // mount path -> volume
	for _, op := range ops {
		switch {
		case op.Op == "test" && strings.HasPrefix(op.Path, "/spec/template/spec/containers/0/args/"):
			i, err := strconv.Atoi(strings.TrimPrefix(op.Path, "/spec/template/spec/containers/0/args/"))
			if err != nil || i >= len(args) || args[i] != op.Value {
				t.Errorf("deploy/cert-manager tests %s = %v; the base's argument there is %v: the component does not build", op.Path, op.Value, at(args, i))
			}
		case op.Path == "/spec/template/spec/containers/0/args/-":
			if v, ok := strings.CutPrefix(fmt.Sprint(op.Value), "--webhook-cert-dir="); ok {
				certDir = v
			}
		case op.Path == "/spec/template/spec/volumes":
			for _, v := range op.Value.([]any) {
				v := v.(map[string]any)
				if s, ok := v["secret"].(map[string]any); ok {
					volumes[fmt.Sprint(v["name"])] = fmt.Sprint(s["secretName"])
				}
			}
		case op.Path == "/spec/template/spec/containers/0/volumeMounts":
			for _, m := range op.Value.([]any) {
				m := m.(map[string]any)
				mounts[fmt.Sprint(m["mountPath"])] = fmt.Sprint(m["name"])
			}
		}
	}
	if certDir == "" {
		t.Fatal("deploy/cert-manager adds no --webhook-cert-dir")
	}
	mounted := volumes[mounts[certDir]]
	if mounted == "" {
		t.Fatalf("--webhook-cert-dir=%s: no Secret volume mounted there (mounts %v, volumes %v)", certDir, mounts, volumes)
	}

	certs := map[string]map[string]any{} // Certificates by name, their spec
	for _, res := range kust.Resources {
		data, err := os.ReadFile(filepath.Join("deploy/cert-manager", res))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var o struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
				Spec     map[string]any
			}
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("deploy/cert-manager/%s: %v", res, err)
			}
			if o.Kind == "Certificate" {
				if o.Metadata.Namespace != ref.Namespace {
					t.Errorf("Certificate %s in namespace %q, the operator's is %s", o.Metadata.Name, o.Metadata.Namespace, ref.Namespace)
				}
				certs[o.Metadata.Name] = o.Spec
			}
		}
	}
	var serving map[string]any
	for name, spec := range certs {
		if spec["secretName"] == mounted {
			if serving != nil {
				t.Errorf("two Certificates write Secret %s", mounted)
			}
			serving = spec
			// The name docs/versions.md tells CRDs to inject from.
			if name != "operator-webhook" {
				t.Errorf("the serving Certificate is %s; docs/versions.md names operator-system/operator-webhook in cert-manager.io/inject-ca-from", name)
			}
		}
	}
	if serving == nil {
		t.Fatalf("no Certificate writes Secret %s, mounted at --webhook-cert-dir", mounted)
	}
	dns := fmt.Sprint(serving["dnsNames"])
	if host := ref.Name + "." + ref.Namespace + ".svc"; !slices.Contains(strings.Fields(strings.Trim(dns, "[]")), host) {
		t.Errorf("the serving Certificate's dnsNames %s lack %s, the name the API server verifies", dns, host)
	}
	if serving["isCA"] == true {
		t.Errorf("the serving Certificate is a CA")
	}
}

func at(args []string, i int) any {
	if i < 0 || i >= len(args) {
		return "(none)"
	}
	return args[i]
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
