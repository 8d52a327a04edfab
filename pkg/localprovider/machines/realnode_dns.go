package machines

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// CoreDNSImage is the cluster DNS image hack/build-node-images.sh builds from CoreDNS's module
// (hack/coredns) and every real node imports.
const CoreDNSImage = "localhost/butler-coredns:v1.15.0"

// clusterDNS is a tenant's cluster DNS on its real nodes: CoreDNS as a Deployment in
// kube-system behind the Service kube-dns at the address the nodes' kubelets give their pods
// (the bootstrap data's clusterDNS). It runs in its node's network namespace (hostNetwork): a
// local tenant's kube-apiserver advertises the host's loopback, which a pod cannot reach but
// the node's namespace can (the provider forwards the endpoint into it), so CoreDNS reads the
// API at the endpoint of the bootstrap data with its ServiceAccount's token.
type clusterDNS struct {
	address  string // the kube-dns Service's ClusterIP
	domain   string
	endpoint string // the tenant's endpoint as the nodes dial it, host:port
}

const coreDNSName = "coredns"

// apply writes the DNS objects with server-side apply (the local provider owns them; a second
// node's apply changes nothing).
func (d clusterDNS) apply(ctx context.Context, client kubernetes.Interface) error {
	if net.ParseIP(d.address) == nil {
		return fmt.Errorf("cluster DNS address %q is not an IP address", d.address)
	}
	opts := metav1.ApplyOptions{FieldManager: string(external.LocalProvider), Force: true}
	ns := metav1.NamespaceSystem
	if _, err := client.CoreV1().ServiceAccounts(ns).Apply(ctx, corev1ac.ServiceAccount(coreDNSName, ns), opts); err != nil {
		return fmt.Errorf("CoreDNS's ServiceAccount: %w", err)
	}
	role := rbacv1ac.ClusterRole("system:"+coreDNSName).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("services", "pods", "namespaces").WithVerbs("list", "watch"),
		rbacv1ac.PolicyRule().WithAPIGroups("discovery.k8s.io").WithResources("endpointslices").WithVerbs("list", "watch"))
	if _, err := client.RbacV1().ClusterRoles().Apply(ctx, role, opts); err != nil {
		return fmt.Errorf("CoreDNS's ClusterRole: %w", err)
	}
	binding := rbacv1ac.ClusterRoleBinding("system:" + coreDNSName).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName("system:" + coreDNSName)).
		WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName(coreDNSName).WithNamespace(ns))
	if _, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, binding, opts); err != nil {
		return fmt.Errorf("CoreDNS's ClusterRoleBinding: %w", err)
	}
	cm := corev1ac.ConfigMap(coreDNSName, ns).WithData(map[string]string{"Corefile": d.corefile(), "kubeconfig": d.kubeconfig()})
	if _, err := client.CoreV1().ConfigMaps(ns).Apply(ctx, cm, opts); err != nil {
		return fmt.Errorf("CoreDNS's ConfigMap: %w", err)
	}
	if _, err := client.AppsV1().Deployments(ns).Apply(ctx, d.deployment(), opts); err != nil {
		return fmt.Errorf("CoreDNS's Deployment: %w", err)
	}
	if _, err := client.CoreV1().Services(ns).Apply(ctx, d.service(), opts); err != nil {
		return fmt.Errorf("the kube-dns Service: %w", err)
	}
	return nil
}

// corefile serves the cluster domain and the reverse zones from the API. Nothing is forwarded:
// real nodes have no default route, so there is no upstream to reach.
func (d clusterDNS) corefile() string {
	return fmt.Sprintf(`.:53 {
    errors
    health :8080
    ready :8181
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig /etc/coredns/kubeconfig
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loadbalance
    reload
}
`, d.domain)
}

// kubeconfig points CoreDNS at the endpoint with the projected token and CA of its
// ServiceAccount, which the kubelet mounts into every pod.
func (d clusterDNS) kubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: tenant, cluster: {server: "https://%s", certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt}}]
users: [{name: coredns, user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}}]
contexts: [{name: coredns, context: {cluster: tenant, user: coredns}}]
current-context: coredns
`, d.endpoint)
}

func (d clusterDNS) deployment() *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"k8s-app": "kube-dns"}
	container := corev1ac.Container().WithName(coreDNSName).WithImage(CoreDNSImage).
		WithImagePullPolicy(corev1.PullNever).WithArgs("-conf", "/etc/coredns/Corefile").
		WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/coredns").WithReadOnly(true)).
		// Port 53 takes NET_BIND_SERVICE, which the image's non-root user would not get from
		// runc (no ambient capabilities): root with that capability alone.
		WithSecurityContext(corev1ac.SecurityContext().WithRunAsUser(0).WithRunAsNonRoot(false).
			WithAllowPrivilegeEscalation(false).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL").WithAdd("NET_BIND_SERVICE"))).
		WithReadinessProbe(corev1ac.Probe().WithPeriodSeconds(2).
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/ready").WithPort(intstr.FromInt32(8181))))
	pod := corev1ac.PodSpec().WithServiceAccountName(coreDNSName).WithHostNetwork(true).
		WithDNSPolicy(corev1.DNSDefault).WithPriorityClassName("system-cluster-critical").
		// kubeadm's CoreDNS tolerations, no more: tolerating every taint would tolerate a
		// cordoned node's too, and a drained last node would get its replacement back forever.
		WithTolerations(corev1ac.Toleration().WithKey("CriticalAddonsOnly").WithOperator(corev1.TolerationOpExists),
			corev1ac.Toleration().WithKey("node-role.kubernetes.io/control-plane").WithEffect(corev1.TaintEffectNoSchedule)).
		WithContainers(container).
		WithVolumes(corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(coreDNSName)))
	return appsv1ac.Deployment(coreDNSName, metav1.NamespaceSystem).WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(pod)))
}

func (d clusterDNS) service() *corev1ac.ServiceApplyConfiguration {
	port := func(name string, proto corev1.Protocol) *corev1ac.ServicePortApplyConfiguration {
		return corev1ac.ServicePort().WithName(name).WithProtocol(proto).WithPort(53).WithTargetPort(intstr.FromInt32(53))
	}
	return corev1ac.Service("kube-dns", metav1.NamespaceSystem).WithLabels(map[string]string{"k8s-app": "kube-dns"}).
		WithSpec(corev1ac.ServiceSpec().WithClusterIP(d.address).WithSelector(map[string]string{"k8s-app": "kube-dns"}).
			WithPorts(port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)))
}
