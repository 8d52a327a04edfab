package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// MachineEnv is a Cluster API cluster of the local providers with its tenant control plane up: the
// tenant's client, its endpoint and CA, and a bootstrap token minted in it.
type MachineEnv struct {
	Dynamic            dynamic.Interface
	Namespace, Cluster string
	endpoint           string
	ca                 []byte
	Tenant             kubernetes.Interface
	tenantKubeconfig   []byte
	Token              string
}

// lmVersion is the tenants' Kubernetes version (the pinned one: the kubelet of real nodes is
// built from it too).
const lmVersion = "v1.36.3"

// MachineTenant makes a Cluster with a StewardControlPlane and a LocalCluster in a new namespace
// and waits for its control plane, as the local stand-in runs it.
func MachineTenant(t *testing.T, nsPrefix, cluster string) *MachineEnv {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(Plane.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := Namespace(t, nsPrefix)
	version := lmVersion
	MustApply(t, fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  clusterNetwork:
    services: {cidrBlocks: [10.96.0.0/12]}
    pods: {cidrBlocks: [10.244.0.0/16]}
    serviceDomain: cluster.local
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: StewardControlPlane, name: %[1]s}
  infrastructureRef: {apiGroup: infrastructure.butlerlabs.dev, kind: LocalCluster, name: %[1]s}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha1
kind: StewardControlPlane
metadata: {name: %[1]s, namespace: %[2]s}
spec: {version: %[3]s, replicas: 1} # the CRD's default, 2, is refused by the local provider
---
apiVersion: infrastructure.butlerlabs.dev/v1alpha1
kind: LocalCluster
metadata: {name: %[1]s, namespace: %[2]s}
`, cluster, ns, version))
	t.Cleanup(func() {
		_, _ = Kubectl(t, "delete", "-n", ns, "--wait=false", "machines.cluster.x-k8s.io", "--all")
		_, _ = Kubectl(t, "delete", "-n", ns, "--wait=false", "clusters.cluster.x-k8s.io", cluster)
	})

	// The control plane: the stand-in patches the LocalCluster's endpoint, which makes it
	// provisioned, and writes <cluster>-kubeconfig.
	WaitFor(t, 3*time.Minute, "the LocalCluster to be provisioned", func() (bool, string) {
		u, err := dyn.Resource(external.LocalClusterGVR).Namespace(ns).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned")
		return p, fmt.Sprint(u.Object["spec"], u.Object["status"])
	})
	u, _ := dyn.Resource(external.LocalClusterGVR).Namespace(ns).Get(ctx, cluster, metav1.GetOptions{})
	host, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneEndpoint", "host")
	port, _, _ := unstructured.NestedInt64(u.Object, "spec", "controlPlaneEndpoint", "port")
	endpoint := fmt.Sprintf("%s:%d", host, port)
	var kubeconfig *corev1.Secret
	WaitFor(t, time.Minute, "the cluster's kubeconfig Secret", func() (bool, string) {
		kubeconfig, err = Plane.Kube.CoreV1().Secrets(ns).Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	tenantConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig.Data["value"])
	if err != nil {
		t.Fatal(err)
	}
	tenant := kubernetes.NewForConfigOrDie(tenantConfig)
	caSecret, err := Plane.Kube.CoreV1().Secrets(ns).Get(ctx, cluster+"-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the cluster's CA Secret: %v", err)
	}
	ca := caSecret.Data["tls.crt"]
	if len(ca) == 0 {
		ca = caSecret.Data["ca.crt"]
	}

	// A bootstrap token minted in the tenant as the bootstrap provider does.
	token, err := bootstrap.GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	tokenSecret, err := bootstrap.TokenSecret(token, time.Now().Add(15*time.Minute), "e2e TestLocalMachineJoins", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tenant.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, tokenSecret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("minting the bootstrap token in the tenant: %v", err)
	}

	return &MachineEnv{Dynamic: dyn, Namespace: ns, Cluster: cluster, endpoint: endpoint, ca: ca, Tenant: tenant,
		tenantKubeconfig: kubeconfig.Data["value"], Token: token}
}

// machine makes a Machine of the cluster with bootstrap data (rocky) carrying token, and its
// LocalMachine of nodeType (the default when empty).
func (e *MachineEnv) Machine(t *testing.T, name, token, nodeType string) {
	t.Helper()
	ctx := context.Background()
	ns, cluster, endpoint, ca, version := e.Namespace, e.Cluster, e.endpoint, e.ca, lmVersion
	spec := ""
	if nodeType != "" {
		spec = "\nspec: {nodeType: " + nodeType + "}"
	}

	clusterDNS := "" // kwok nodes run no pods that resolve names
	taints := []corev1.Taint{{Key: "butler.butlerlabs.dev/e2e", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
	if nodeType == "real" {
		clusterDNS = "10.96.0.10" // the Cluster's service CIDR's tenth address, as kubeadm's
		taints = nil              // as a TenantCluster's workers: the cluster DNS tolerates kubeadm's taints only
	}
	data, err := bootstrap.Render(bootstrap.OSRocky, bootstrap.Input{ClusterName: cluster, Endpoint: endpoint,
		Token: token, CACert: ca, NodeName: name, KubernetesVersion: version, ClusterDNS: clusterDNS,
		NodeLabels: map[string]string{"butler.butlerlabs.dev/tenant-cluster": cluster}, NodeTaints: taints})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"cluster.x-k8s.io/cluster-name": cluster},
			Annotations: map[string]string{bootstrap.OSAnnotation: string(bootstrap.OSRocky)}},
		Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": data, "format": []byte("cloud-config")}}
	if _, err := Plane.Kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	MustApply(t, fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata: {name: %[1]s, namespace: %[2]s, labels: {cluster.x-k8s.io/cluster-name: %[3]s}}
spec:
  clusterName: %[3]s
  version: %[4]s
  bootstrap: {dataSecretName: %[1]s}
  infrastructureRef: {apiGroup: infrastructure.butlerlabs.dev, kind: LocalMachine, name: %[1]s}
---
apiVersion: infrastructure.butlerlabs.dev/v1alpha1
kind: LocalMachine
metadata: {name: %[1]s, namespace: %[2]s, labels: {cluster.x-k8s.io/cluster-name: %[3]s}}%[5]s
`, name, ns, cluster, version, spec))
}

// WaitFor polls check every 100ms until it reports done, and fails with its last word otherwise.
func WaitFor(t *testing.T, timeout time.Duration, what string, check func() (bool, string)) string {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var done bool
		done, last = check()
		return done, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
	return last
}
