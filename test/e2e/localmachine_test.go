package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// TestLocalMachineJoins runs the local provider's machine path against the real parts of the
// plane: Cluster API's manager, the local control plane stand-in (a real tenant
// kube-apiserver, controller manager and scheduler) and the machines controller with kwok. A
// Cluster with a StewardControlPlane and a LocalCluster gets its tenant control plane; a Machine
// whose bootstrap data (rocky: kubeadm cloud-init) carries a real bootstrap token joins as a
// Node (CSR approved and signed by the tenant's controller manager), kwok makes the Node Ready
// and a pod Running, and Cluster API matches the Machine to the Node by provider ID. A Machine
// whose data carries a token the tenant does not know never gets a Node; deleting a Machine
// removes its Node.
func TestLocalMachineJoins(t *testing.T) {
	longestFirst(t, 68*time.Second)
	ctx := context.Background()
	env := lmTenant(t, "lm-join", "lm")
	dyn, ns, cluster, tenant, token := env.dyn, env.ns, env.cluster, env.tenant, env.token
	machine := func(name, token string) { env.machine(t, name, token, "") }

	// Three machines at once, as a MachineDeployment of three makes them.
	started := time.Now()
	for i := range 3 {
		machine(fmt.Sprintf("lm-worker-%d", i), token)
	}
	lmWait(t, 2*time.Minute, "Cluster API to adopt the LocalMachines", func() (bool, string) {
		for i := range 3 {
			u, err := dyn.Resource(external.LocalMachineGVR).Namespace(ns).Get(ctx, fmt.Sprintf("lm-worker-%d", i), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if len(u.GetOwnerReferences()) == 0 {
				return false, u.GetName() + " has no owner"
			}
		}
		return true, ""
	})
	adopted := time.Since(started)
	node := lmWaitNode(t, tenant, "lm-worker-0", 2*time.Minute)
	lmWaitNode(t, tenant, "lm-worker-1", 2*time.Minute)
	lmWaitNode(t, tenant, "lm-worker-2", 2*time.Minute)
	t.Logf("3 LocalMachines with bootstrap data -> 3 Nodes Ready: %s (Cluster API had made the Machines their owners after %s)",
		time.Since(started).Round(10*time.Millisecond), adopted.Round(10*time.Millisecond))

	lm, err := dyn.Resource(external.LocalMachineGVR).Namespace(ns).Get(ctx, "lm-worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	providerID, _, _ := unstructured.NestedString(lm.Object, "spec", "providerID")
	if want := "local://" + ns + "/lm-worker-0"; providerID != want || node.Spec.ProviderID != want {
		t.Errorf("provider IDs: LocalMachine %q, Node %q; want %q", providerID, node.Spec.ProviderID, want)
	}
	if node.Labels["butler.butlerlabs.dev/tenant-cluster"] != cluster {
		t.Errorf("Node labels %v lack the data's", node.Labels)
	}
	if len(node.Spec.Taints) == 0 || !lmHasTaint(node, "butler.butlerlabs.dev/e2e") {
		t.Errorf("Node taints %v lack the data's", node.Spec.Taints)
	}
	// The provider writes the status a moment after the Node registers (kwok makes it Ready at
	// once): under load the Node can be seen Ready first.
	lmWait(t, 30*time.Second, "lm-worker-0 to be provisioned", func() (bool, string) {
		u, err := dyn.Resource(external.LocalMachineGVR).Namespace(ns).Get(ctx, "lm-worker-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned")
		return p, fmt.Sprint(u.Object["status"])
	})
	// The node's identity is its own: the CSR was made by the bootstrap token and approved.
	csrs, err := tenant.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var approved bool
	for _, c := range csrs.Items {
		if strings.HasPrefix(c.Spec.Username, "system:bootstrap:"+bootstrap.TokenID(token)) && len(c.Status.Certificate) > 0 {
			approved = true
		}
	}
	if !approved {
		t.Errorf("no issued CSR made by the bootstrap token %s among %d", bootstrap.TokenID(token), len(csrs.Items))
	}

	// Cluster API matches the Machine to the Node by provider ID.
	lmWait(t, 2*time.Minute, "Cluster API to set the Machine's nodeRef", func() (bool, string) {
		m, err := dyn.Resource(external.MachineGVR).Namespace(ns).Get(ctx, "lm-worker-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		name, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		return name == "lm-worker-0", fmt.Sprint(m.Object["status"])
	})

	// kwok runs the pods scheduled to the nodes (the tenant's kube-scheduler picks one of the three).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "hello", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: []corev1.Toleration{{Key: "butler.butlerlabs.dev/e2e", Operator: corev1.TolerationOpExists}}}}
	if _, err := tenant.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a pod in the tenant: %v", err)
	}
	lmWait(t, time.Minute, "the pod to be Running on the node", func() (bool, string) {
		p, err := tenant.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Spec.NodeName, "lm-worker-"), fmt.Sprint(p.Spec.NodeName, p.Status)
	})

	// A token the tenant does not know: no Node, and the LocalMachine says why.
	bad, err := bootstrap.GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	machine("lm-worker-bad", bad)
	lmWait(t, time.Minute, "the LocalMachine with an unknown token to report the failed discovery", func() (bool, string) {
		u, err := dyn.Resource(external.LocalMachineGVR).Namespace(ns).Get(ctx, "lm-worker-bad", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Ready" && c["status"] == "False" && c["reason"] == "DiscoveryFailed" {
				return true, ""
			}
		}
		return false, fmt.Sprint(u.Object["status"])
	})
	if _, err := tenant.CoreV1().Nodes().Get(ctx, "lm-worker-bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a machine with an unknown token registered a Node (err %v)", err)
	}

	// Deleting the Machine removes the Node and the LocalMachine. (The pod goes first: a bare
	// pod is not what this test drains.)
	if err := tenant.CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "delete", "-n", ns, "machines.cluster.x-k8s.io", "lm-worker-0", "--wait=false")
	lmWait(t, 2*time.Minute, "the Node and the LocalMachine to be gone", func() (bool, string) {
		_, errNode := tenant.CoreV1().Nodes().Get(ctx, "lm-worker-0", metav1.GetOptions{})
		_, errLM := dyn.Resource(external.LocalMachineGVR).Namespace(ns).Get(ctx, "lm-worker-0", metav1.GetOptions{})
		return apierrors.IsNotFound(errNode) && apierrors.IsNotFound(errLM), fmt.Sprint("node: ", errNode, "; localmachine: ", errLM)
	})
}

// lmEnv is a Cluster API cluster of the local providers with its tenant control plane up: the
// tenant's client, its endpoint and CA, and a bootstrap token minted in it.
type lmEnv struct {
	dyn              dynamic.Interface
	ns, cluster      string
	endpoint         string
	ca               []byte
	tenant           kubernetes.Interface
	tenantKubeconfig []byte
	token            string
}

// lmVersion is the tenants' Kubernetes version (the pinned one: the kubelet of real nodes is
// built from it too).
const lmVersion = "v1.36.3"

// lmTenant makes a Cluster with a StewardControlPlane and a LocalCluster in a new namespace
// and waits for its control plane, as the local stand-in runs it.
func lmTenant(t *testing.T, nsPrefix, cluster string) *lmEnv {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(plane.config)
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, nsPrefix)
	version := lmVersion
	mustApply(t, fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
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
		_, _ = kubectl(t, "delete", "-n", ns, "--wait=false", "machines.cluster.x-k8s.io", "--all")
		_, _ = kubectl(t, "delete", "-n", ns, "--wait=false", "clusters.cluster.x-k8s.io", cluster)
	})

	// The control plane: the stand-in patches the LocalCluster's endpoint, which makes it
	// provisioned, and writes <cluster>-kubeconfig.
	lmWait(t, 3*time.Minute, "the LocalCluster to be provisioned", func() (bool, string) {
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
	lmWait(t, time.Minute, "the cluster's kubeconfig Secret", func() (bool, string) {
		kubeconfig, err = plane.kube.CoreV1().Secrets(ns).Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	tenantConfig, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig.Data["value"])
	if err != nil {
		t.Fatal(err)
	}
	tenant := kubernetes.NewForConfigOrDie(tenantConfig)
	caSecret, err := plane.kube.CoreV1().Secrets(ns).Get(ctx, cluster+"-ca", metav1.GetOptions{})
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

	return &lmEnv{dyn: dyn, ns: ns, cluster: cluster, endpoint: endpoint, ca: ca, tenant: tenant,
		tenantKubeconfig: kubeconfig.Data["value"], token: token}
}

// machine makes a Machine of the cluster with bootstrap data (rocky) carrying token, and its
// LocalMachine of nodeType (the default when empty).
func (e *lmEnv) machine(t *testing.T, name, token, nodeType string) {
	t.Helper()
	ctx := context.Background()
	ns, cluster, endpoint, ca, version := e.ns, e.cluster, e.endpoint, e.ca, lmVersion
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
	if _, err := plane.kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
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

// lmWaitNode waits until the tenant's Node name is Ready.
func lmWaitNode(t *testing.T, tenant kubernetes.Interface, name string, timeout time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	lmWait(t, timeout, "Node "+name+" to be Ready", func() (bool, string) {
		n, err := tenant.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		node = n
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprint(n.Status.Conditions)
	})
	return node
}

// lmWait polls check every 100ms until it reports done, and fails with its last word otherwise.
func lmWait(t *testing.T, timeout time.Duration, what string, check func() (bool, string)) string {
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

func lmHasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
