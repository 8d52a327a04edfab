// Package kubeadm writes into a new tenant what kubeadm init makes so that nodes can join with a
// bootstrap token: the bootstrap-token RBAC, CSR auto-approval, cluster-info, kubeadm-config and
// kubelet-config. The local provider's control planes are not made by kubeadm, and their nodes
// join with kubeadm join.
package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// What kubeadm init makes in a new cluster so that nodes can join with a bootstrap token
// (cmd/kubeadm/app/phases/bootstraptoken/{node,clusterinfo}, uploadconfig, kubelet).
const (
	bootstrappersGroup = "system:bootstrappers:kubeadm:default-node-token"
	nodesGroup         = "system:nodes"
	rbacGroup          = "rbac.authorization.k8s.io"
	clusterInfo        = "cluster-info"
	kubeadmConfig      = "kubeadm-config"
	kubeletConfig      = "kubelet-config"
)

// JoinSetup is what the tenant needs to know to write kubeadm's objects.
type JoinSetup struct {
	ClusterName   string
	Endpoint      string // host:port
	CAPEM         []byte
	Version       string
	ServiceCIDR   string
	PodCIDR       string
	ClusterDomain string
	ClusterDNS    []string
	CgroupDriver  string
}

// SetUpJoin applies kubeadm's join objects to the tenant (server-side apply: it can run again).
func SetUpJoin(ctx context.Context, tenant kubernetes.Interface, s JoinSetup) error {
	apply := external.LocalProvider.ApplyOptions()
	info, err := clusterInfoKubeconfig(s.Endpoint, s.CAPEM)
	if err != nil {
		return err
	}
	joiners := []*rbacv1ac.SubjectApplyConfiguration{group(bootstrappersGroup), group(nodesGroup)}
	// Each object stands alone (a binding may name a role not yet there), so all are applied at
	// once: one after the other they were most of /readyz -> Ready, a new kube-apiserver being
	// slow to answer its first requests.
	writes := []func() error{
		func() error {
			getNodes := rbacv1ac.ClusterRole("kubeadm:get-nodes").WithRules(
				rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("nodes").WithVerbs("get"))
			if _, err := tenant.RbacV1().ClusterRoles().Apply(ctx, getNodes, apply); err != nil {
				return fmt.Errorf("ClusterRole kubeadm:get-nodes: %w", err)
			}
			return nil
		},
		// cluster-info: the endpoint and CA, readable by anyone; the bootstrap signer adds a JWS
		// signature per token, which kubeadm join checks against its token.
		func() error {
			return applyConfigMap(ctx, tenant, metav1.NamespacePublic, clusterInfo, map[string]string{"kubeconfig": string(info)})
		},
		func() error {
			return readableConfigMap(ctx, tenant, metav1.NamespacePublic, "kubeadm:bootstrap-signer-clusterinfo", clusterInfo,
				rbacv1ac.Subject().WithKind("User").WithAPIGroup(rbacGroup).WithName("system:anonymous"))
		},
		// kubeadm-config and kubelet-config: what kubeadm join reads before it starts the kubelet.
		func() error {
			return applyConfigMap(ctx, tenant, metav1.NamespaceSystem, kubeadmConfig, map[string]string{"ClusterConfiguration": clusterConfiguration(s)})
		},
		func() error {
			return applyConfigMap(ctx, tenant, metav1.NamespaceSystem, kubeletConfig, map[string]string{"kubelet": kubeletConfiguration(s)})
		},
		func() error {
			return readableConfigMap(ctx, tenant, metav1.NamespaceSystem, "kubeadm:nodes-kubeadm-config", kubeadmConfig, joiners...)
		},
		func() error {
			return readableConfigMap(ctx, tenant, metav1.NamespaceSystem, "kubeadm:kubelet-config", kubeletConfig, joiners...)
		},
	}
	for _, crb := range []*rbacv1ac.ClusterRoleBindingApplyConfiguration{
		// A bootstrap token may create CSRs...
		clusterRoleBinding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group(bootstrappersGroup)),
		// ...which are approved for a node client certificate...
		clusterRoleBinding("kubeadm:node-autoapprove-bootstrap",
			"system:certificates.k8s.io:certificatesigningrequests:nodeclient", group(bootstrappersGroup)),
		// ...and renewed by the node itself.
		clusterRoleBinding("kubeadm:node-autoapprove-certificate-rotation",
			"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", group(nodesGroup)),
		// kubeadm join checks that no Node of its name exists yet.
		clusterRoleBinding("kubeadm:get-nodes", "kubeadm:get-nodes", group(bootstrappersGroup)),
		// admin.conf's group (kubeadm >= 1.29): cluster-admin, revocable unlike system:masters.
		clusterRoleBinding("kubeadm:cluster-admins", "cluster-admin", group(pki.AdminsGroup)),
	} {
		writes = append(writes, func() error {
			if _, err := tenant.RbacV1().ClusterRoleBindings().Apply(ctx, crb, apply); err != nil {
				return fmt.Errorf("ClusterRoleBinding %s: %w", *crb.Name, err)
			}
			return nil
		})
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, write := range writes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = write() }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func applyConfigMap(ctx context.Context, tenant kubernetes.Interface, ns, name string, data map[string]string) error {
	if _, err := tenant.CoreV1().ConfigMaps(ns).Apply(ctx, corev1ac.ConfigMap(name, ns).WithData(data), external.LocalProvider.ApplyOptions()); err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", ns, name, err)
	}
	return nil
}

func group(name string) *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind("Group").WithAPIGroup(rbacGroup).WithName(name)
}

func clusterRoleBinding(name, role string, subjects ...*rbacv1ac.SubjectApplyConfiguration) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(name).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacGroup).WithKind("ClusterRole").WithName(role)).
		WithSubjects(subjects...)
}

// readableConfigMap lets subjects get one ConfigMap: a Role and a RoleBinding both named name.
func readableConfigMap(ctx context.Context, tenant kubernetes.Interface, ns, name, configMap string, subjects ...*rbacv1ac.SubjectApplyConfiguration) error {
	apply := external.LocalProvider.ApplyOptions()
	role := rbacv1ac.Role(name, ns).WithRules(rbacv1ac.PolicyRule().
		WithAPIGroups("").WithResources("configmaps").WithResourceNames(configMap).WithVerbs("get"))
	if _, err := tenant.RbacV1().Roles(ns).Apply(ctx, role, apply); err != nil {
		return fmt.Errorf("Role %s/%s: %w", ns, name, err)
	}
	binding := rbacv1ac.RoleBinding(name, ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacGroup).WithKind("Role").WithName(name)).
		WithSubjects(subjects...)
	if _, err := tenant.RbacV1().RoleBindings(ns).Apply(ctx, binding, apply); err != nil {
		return fmt.Errorf("RoleBinding %s/%s: %w", ns, name, err)
	}
	return nil
}

// clusterInfoKubeconfig is cluster-info's kubeconfig: one unnamed cluster, no credentials.
func clusterInfoKubeconfig(endpoint string, caPEM []byte) ([]byte, error) {
	return clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"": {Server: "https://" + endpoint, CertificateAuthorityData: caPEM}},
	})
}

// clusterConfiguration is kubeadm's ClusterConfiguration of the tenant.
func clusterConfiguration(s JoinSetup) string {
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: %s
kubernetesVersion: %s
controlPlaneEndpoint: %s
certificatesDir: /etc/kubernetes/pki
networking:
  dnsDomain: %s
  serviceSubnet: %s
  podSubnet: %s
`, s.ClusterName, s.Version, s.Endpoint, s.ClusterDomain, s.ServiceCIDR, s.PodCIDR)
}

// kubeletConfiguration is the KubeletConfiguration kubeadm uploads for joining nodes.
func kubeletConfiguration(s JoinSetup) string {
	dns := ""
	for _, ip := range s.ClusterDNS {
		dns += "\n- " + ip
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
cgroupDriver: %s
clusterDNS:%s
clusterDomain: %s
rotateCertificates: true
staticPodPath: /etc/kubernetes/manifests
`, s.CgroupDriver, dns, s.ClusterDomain)
}
