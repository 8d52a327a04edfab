package tenantcluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// A standalone control plane is ready once Cluster API says the Cluster's control plane is
// initialized, the KubeadmControlPlane runs the asked version and CAPI's kubeconfig Secret
// exists; the endpoint is the Cluster's. Read typed from the objects as the builders write them.
func TestStandaloneReady(t *testing.T) {
	objs, client := fakeObjects(t)
	kube := kubefake.NewSimpleClientset()
	c := &Controller{objects: objs, kube: kube}
	s := stepState(v1alpha1.ProviderAWS)
	s.tc.Spec.ControlPlane.Type = v1alpha1.ControlPlaneStandalone
	ctx := context.Background()

	cluster, kcp, failed, err := c.applyControlPlane(ctx, s, nil, false)
	if failed != nil || err != nil {
		t.Fatalf("applying: %v %v", failed, err)
	}
	if kcp.GroupVersionKind() != external.KubeadmControlPlaneGVK {
		t.Fatalf("control plane kind %s", kcp.GroupVersionKind())
	}
	r, err := c.standaloneReady(ctx, s, cluster, kcp)
	wantResult(t, "new", r, err, false, "ControlPlaneInitializing")

	setStatus(t, client, external.ClusterGVK, s.namespace, "prod", map[string]any{"initialization": map[string]any{"controlPlaneInitialized": true}})
	setStatus(t, client, external.KubeadmControlPlaneGVK, s.namespace, "prod", map[string]any{"versions": []any{map[string]any{"version": "v1.35.0", "replicas": int64(1)}}})
	cluster, kcp, _, _ = c.applyControlPlane(ctx, s, nil, false)
	cluster.Object["spec"].(map[string]any)["controlPlaneEndpoint"] = map[string]any{"host": "10.0.0.5", "port": int64(6443)}
	r, err = c.standaloneReady(ctx, s, cluster, kcp)
	wantResult(t, "older version", r, err, false, "Upgrading")
	if s.endpoint != "10.0.0.5:6443" || s.version != "v1.35.0" {
		t.Errorf("endpoint %q version %q", s.endpoint, s.version)
	}

	// Mid-roll: one machine still at the old version, listed first.
	setStatus(t, client, external.KubeadmControlPlaneGVK, s.namespace, "prod", map[string]any{"versions": []any{
		map[string]any{"version": "v1.35.0", "replicas": int64(1)}, map[string]any{"version": s.tc.Spec.KubernetesVersion, "replicas": int64(2)}}})
	_, kcp, _, _ = c.applyControlPlane(ctx, s, nil, false)
	r, err = c.standaloneReady(ctx, s, cluster, kcp)
	wantResult(t, "mid-roll", r, err, false, "Upgrading")

	setStatus(t, client, external.KubeadmControlPlaneGVK, s.namespace, "prod", map[string]any{"versions": []any{map[string]any{"version": s.tc.Spec.KubernetesVersion, "replicas": int64(3)}}})
	_, kcp, _, _ = c.applyControlPlane(ctx, s, nil, false)
	r, err = c.standaloneReady(ctx, s, cluster, kcp)
	wantResult(t, "no kubeconfig", r, err, false, "WaitingForKubeconfig")

	if _, err := kube.CoreV1().Secrets(s.namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-kubeconfig", Namespace: s.namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err = c.standaloneReady(ctx, s, cluster, kcp)
	wantResult(t, "ready", r, err, true, "ControlPlaneInitialized")
	if s.kubeconfigSecret != "prod-kubeconfig" {
		t.Errorf("kubeconfig Secret %q", s.kubeconfigSecret)
	}
}
