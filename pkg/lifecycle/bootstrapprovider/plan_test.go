package bootstrapprovider

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// A Machine that joined needs nothing of its control plane: with its Cluster and CA gone, the
// config stays Ready with its data Secret named, and is not requeued.
func TestJoinedMachineNeedsNoControlPlane(t *testing.T) {
	e := readyEnv(t, "talos")
	if err := e.reconcile(); !isRequeue(err) {
		t.Fatal(err)
	}
	if err := e.dyn.Resource(clusterGVR).Namespace(ns).Delete(e.ctx, cluster, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.CoreV1().Secrets(ns).Delete(e.ctx, cluster+"-ca", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m := machineObj()
	_ = unstructured.SetNestedField(m.Object, machineN, "status", "nodeRef", "name")
	if _, err := e.dyn.Resource(machineGVR).Namespace(ns).Update(e.ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(e.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		o, err := e.c.machines.ByNamespace(ns).Get(machineN)
		if err != nil {
			return false, nil
		}
		mm, _ := external.FromObject[clusterv1.Machine](o)
		_, err = e.c.clusters.ByNamespace(ns).Get(cluster)
		return mm.Status.NodeRef.Name != "" && err != nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(); err != nil {
		t.Fatalf("Reconcile of a joined machine = %v, want nil", err)
	}
	e.wantCondition(metav1.ConditionTrue, ReasonDataSecretCreated, PhaseReady)
	if c := e.condition(ConditionReady); c.Message != "node "+machineN+" joined" {
		t.Errorf("Ready message %q", c.Message)
	}
	if bc := e.config(); bc.Status.DataSecretName == nil || *bc.Status.DataSecretName != configN {
		t.Errorf("status.dataSecretName = %v", bc.Status.DataSecretName)
	}
	if n := len(e.tenantTokens()); n != 0 {
		t.Errorf("%d tokens left after the join", n)
	}
}
