package main

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// The measured clients' identity: a service account bound to cluster-admin,
// as an operator runs in a cluster. APF classifies its requests by the
// default FlowSchema service-accounts into priority level workload-low;
// the two FlowSchemas below keep that priority level and only split its
// requests into writes and reads, so that /metrics can count the measured
// client's requests apart from the bench's own (exempt, as an admin) and
// kube-apiserver's own.
const (
	systemNamespace  = "bench-system"
	serviceAccount   = "operator"
	flowSchemaWrites = "bench-measured-writes"
	flowSchemaReads  = "bench-measured-reads"
	priorityLevel    = "workload-low"
)

// tokenLifetime outlasts a whole run at N=10,000.
const tokenLifetime = 6 * 60 * 60

// createIdentity creates the service account, its binding and the two
// FlowSchemas, and writes a kubeconfig with a token for the account (from
// the TokenRequest API, which needs no controller) into dir.
func createIdentity(ctx context.Context, admin *rest.Config, cs kubernetes.Interface, dir string) (string, error) {
	if err := createNamespace(ctx, cs, systemNamespace); err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount, Namespace: systemNamespace}}
	if _, err := cs.CoreV1().ServiceAccounts(systemNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create service account %s/%s: %w", systemNamespace, serviceAccount, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: systemNamespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("bind %s/%s to cluster-admin: %w", systemNamespace, serviceAccount, err)
	}
	for _, fs := range flowSchemas() {
		if _, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create FlowSchema %s: %w", fs.Name, err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](tokenLifetime)}}
	tok, err := cs.CoreV1().ServiceAccounts(systemNamespace).CreateToken(ctx, serviceAccount, tr, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for %s/%s: %w", systemNamespace, serviceAccount, err)
	}
	path := filepath.Join(dir, "operator.kubeconfig")
	if err := writeKubeconfig(path, admin, tok.Status.Token); err != nil {
		return "", err
	}
	return path, nil
}

// flowSchemas split the service account's requests into writes and reads,
// both in workload-low, matched before the default service-accounts schema.
func flowSchemas() []*flowcontrolv1.FlowSchema {
	subject := []flowcontrolv1.Subject{{
		Kind:           flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: systemNamespace, Name: serviceAccount},
	}}
	schema := func(name string, precedence int32, rule flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
		rule.Subjects = subject
		return &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: priorityLevel},
				MatchingPrecedence:         precedence,
				DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
				Rules:                      []flowcontrolv1.PolicyRulesWithSubjects{rule},
			},
		}
	}
	all := []string{flowcontrolv1.APIGroupAll}
	return []*flowcontrolv1.FlowSchema{
		schema(flowSchemaWrites, 8000, flowcontrolv1.PolicyRulesWithSubjects{
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
				Verbs:     []string{"create", "update", "patch", "delete", "deletecollection"},
				APIGroups: all, Resources: all, Namespaces: all, ClusterScope: true,
			}},
		}),
		schema(flowSchemaReads, 8001, flowcontrolv1.PolicyRulesWithSubjects{
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
				Verbs: all, APIGroups: all, Resources: all, Namespaces: all, ClusterScope: true,
			}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: all, NonResourceURLs: all}},
		}),
	}
}

// writeKubeconfig writes a kubeconfig for admin's server with token as the
// user, its namespace the system namespace.
func writeKubeconfig(path string, admin *rest.Config, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData, CertificateAuthority: admin.CAFile}
	cfg.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "operator", Namespace: systemNamespace}
	cfg.CurrentContext = "bench"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
