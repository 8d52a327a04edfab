package tenantcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

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

// TestHostedReadyDuringStewardsRoll: Steward, after a version change, says Upgrading with the
// version before until its Deployment has rolled (blue/green, the old Pods serving meanwhile;
// steward/internal/resources/k8s_deployment_resource.go), then Ready at the new one. The cluster
// says Upgrading from which version to which, as on the stand-in, not that the control plane is
// not ready; the stand-in's word on it (a build) stays in the message.
func TestHostedReadyDuringStewardsRoll(t *testing.T) {
	objs, client := fakeObjects(t)
	c := &Controller{objects: objs, kube: kubefake.NewSimpleClientset(), clock: clocktesting.NewFakePassiveClock(time.Now())}
	s := stepState(v1alpha1.ProviderAWS)
	ctx := context.Background()
	if _, err := c.ensureControlPlane(ctx, s); err != nil {
		t.Fatal(err)
	}
	tcp := &unstructured.Unstructured{}
	tcp.SetGroupVersionKind(external.TenantControlPlaneGVK)
	tcp.SetName("prod")
	tcp.SetNamespace(s.namespace)
	tcp.SetCreationTimestamp(metav1.Now())
	if err := client.Tracker().Create(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
		t.Fatal(err)
	}
	rolling := func(version string) map[string]any {
		return map[string]any{"controlPlaneEndpoint": "10.0.0.10:6443",
			"kubernetesResources": map[string]any{"version": map[string]any{"version": version, "status": "Upgrading"}}}
	}
	setStatus(t, client, external.TenantControlPlaneGVK, s.namespace, "prod", rolling("v1.35.0"))
	r, err := c.ensureControlPlane(ctx, s)
	wantResult(t, "Steward rolling", r, err, false, "Upgrading")
	if want := "the control plane runs v1.35.0 and is moving to " + s.tc.Spec.KubernetesVersion; r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}
	if s.version != "v1.35.0" || s.endpoint != "10.0.0.10:6443" {
		t.Errorf("observed version %q endpoint %q during the roll, want the old version served", s.version, s.endpoint)
	}

	// The stand-in waiting for the new version's build says so as well.
	tcp, _ = client.Resource(external.TenantControlPlaneGVR).Namespace(s.namespace).Get(ctx, "prod", metav1.GetOptions{})
	tcp.SetAnnotations(map[string]string{external.LocalProviderMessageAnnotation: "building " + s.tc.Spec.KubernetesVersion})
	if err := client.Tracker().Update(external.TenantControlPlaneGVR, tcp, s.namespace); err != nil {
		t.Fatal(err)
	}
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "the stand-in building", r, err, false, "Upgrading")
	if !strings.HasSuffix(r.Message, ": building "+s.tc.Spec.KubernetesVersion) {
		t.Errorf("message %q does not say why", r.Message)
	}

	// Upgrading with no version yet is a control plane never served: not an upgrade.
	setStatus(t, client, external.TenantControlPlaneGVK, s.namespace, "prod", rolling(""))
	r, err = c.ensureControlPlane(ctx, s)
	wantResult(t, "no version yet", r, err, false, "TenantControlPlaneNotReady")
}
