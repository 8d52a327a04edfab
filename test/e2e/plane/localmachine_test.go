package plane

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
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
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
	framework.LongestFirst(t, 68*time.Second)
	ctx := context.Background()
	env := framework.MachineTenant(t, "lm-join", "lm")
	dyn, ns, cluster, tenant, token := env.Dynamic, env.Namespace, env.Cluster, env.Tenant, env.Token
	machine := func(name, token string) { env.Machine(t, name, token, "") }

	// Three machines at once, as a MachineDeployment of three makes them.
	started := time.Now()
	for i := range 3 {
		machine(fmt.Sprintf("lm-worker-%d", i), token)
	}
	framework.WaitFor(t, 2*time.Minute, "Cluster API to adopt the LocalMachines", func() (bool, string) {
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
	framework.WaitFor(t, 30*time.Second, "lm-worker-0 to be provisioned", func() (bool, string) {
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
	framework.WaitFor(t, 2*time.Minute, "Cluster API to set the Machine's nodeRef", func() (bool, string) {
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
	framework.WaitFor(t, time.Minute, "the pod to be Running on the node", func() (bool, string) {
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
	framework.WaitFor(t, time.Minute, "the LocalMachine with an unknown token to report the failed discovery", func() (bool, string) {
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
	framework.MustKubectl(t, "delete", "-n", ns, "machines.cluster.x-k8s.io", "lm-worker-0", "--wait=false")
	framework.WaitFor(t, 2*time.Minute, "the Node and the LocalMachine to be gone", func() (bool, string) {
		_, errNode := tenant.CoreV1().Nodes().Get(ctx, "lm-worker-0", metav1.GetOptions{})
		_, errLM := dyn.Resource(external.LocalMachineGVR).Namespace(ns).Get(ctx, "lm-worker-0", metav1.GetOptions{})
		return apierrors.IsNotFound(errNode) && apierrors.IsNotFound(errLM), fmt.Sprint("node: ", errNode, "; localmachine: ", errLM)
	})
}

// lmWaitNode waits until the tenant's Node name is Ready.
func lmWaitNode(t *testing.T, tenant kubernetes.Interface, name string, timeout time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	framework.WaitFor(t, timeout, "Node "+name+" to be Ready", func() (bool, string) {
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

func lmHasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
