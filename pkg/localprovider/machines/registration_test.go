package machines

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

const testAdminKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

// A machine that joined but never booted (its real node failed to boot) is not provisioned: its
// status names no Node. Deleting it deletes the Node its join registered all the same, found by
// what the join recorded, and only while that Node carries the machine's provider ID.
func TestDeleteNeverBootedMachineDeletesItsNode(t *testing.T) {
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = secrets.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "prod-kubeconfig"},
		Data: map[string][]byte{"value": []byte(testAdminKubeconfig)}})
	for _, c := range []struct {
		name, nodeProviderID string
		recorded, deleted    bool
	}{
		{"its Node", "local://tenant/w0", true, true},
		{"a Node of that name of another machine", "local://tenant/other", true, false},
		{"nothing recorded: it never joined", "local://tenant/w0", false, false},
	} {
		tenant := fake.NewSimpleClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w0"}, Spec: corev1.NodeSpec{ProviderID: c.nodeProviderID}})
		ctrl := &Controller{opts: Options{StateDir: t.TempDir()}, secrets: corelisters.NewSecretLister(secrets),
			joiner: &Joiner{NewClient: func(*rest.Config) (kubernetes.Interface, error) { return tenant, nil }}}
		lm := &external.LocalMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "w0",
			Labels: map[string]string{clusterv1.ClusterNameLabel: "prod"}}}
		if c.recorded {
			if err := writeRegistration(ctrl.machineDir(lm), registration{NodeName: "w0", ProviderID: "local://tenant/w0"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := ctrl.deleteNode(context.Background(), lm); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		_, err := tenant.CoreV1().Nodes().Get(context.Background(), "w0", metav1.GetOptions{})
		if deleted := apierrors.IsNotFound(err); deleted != c.deleted {
			t.Errorf("%s: deleted %v (%v), want %v", c.name, deleted, err, c.deleted)
		}
	}
}
