package external_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

// The infrastructure contract's readiness in both of its versions, v1beta2's first.
func TestInfrastructureProvisioned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status map[string]any
		want   bool
	}{
		{"none", nil, false},
		{"v1beta2", map[string]any{"initialization": map[string]any{"provisioned": true}}, true},
		{"v1beta2 not yet, v1beta1 stale", map[string]any{"initialization": map[string]any{"provisioned": false}, "ready": true}, false},
		{"v1beta1", map[string]any{"ready": true}, true},
		{"empty initialization, v1beta1", map[string]any{"initialization": map[string]any{}, "ready": true}, true},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
			"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(6443)}}}}
		if tc.status != nil {
			u.Object["status"] = tc.status
		}
		got, err := external.FromUnstructured[external.InfrastructureCluster](u)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Status.Provisioned() != tc.want || got.Spec.ControlPlaneEndpoint.Host != "10.0.0.1" || got.Spec.ControlPlaneEndpoint.Port != 6443 {
			t.Errorf("%s: provisioned %v, endpoint %+v", tc.name, got.Status.Provisioned(), got.Spec.ControlPlaneEndpoint)
		}
	}
}

// A TenantControlPlane as Steward writes it reads into the mirror, unknown fields left out; a
// field of the wrong type is an error, not an absent value.
func TestTenantControlPlaneRead(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "steward.butlerlabs.dev/v1alpha1", "kind": "TenantControlPlane",
		"metadata": map[string]any{"name": "prod", "namespace": "prod-0a1b2c3d", "annotations": map[string]any{external.CredentialsRotatedAnnotation: "Prepared/1"}},
		"spec":     map[string]any{"kubernetes": map[string]any{"version": "v1.30.2", "kubelet": map[string]any{"cgroupfs": "systemd"}}},
		"status": map[string]any{
			"controlPlaneEndpoint": "10.0.0.100:6443",
			"kubeconfig":           map[string]any{"admin": map[string]any{"secretName": "prod-admin-kubeconfig", "lastUpdate": "2026-01-01T00:00:00Z"}},
			"kubernetesResources":  map[string]any{"version": map[string]any{"version": "v1.30.2", "status": "Ready"}},
			"storage":              map[string]any{"dataStoreName": "default", "driver": "etcd"},
		},
	}}
	tcp, err := external.FromUnstructured[steward.TenantControlPlane](u)
	if err != nil {
		t.Fatal(err)
	}
	s := tcp.Status
	if s.ControlPlaneEndpoint != "10.0.0.100:6443" || s.Kubeconfig.Admin.SecretName != "prod-admin-kubeconfig" ||
		s.KubernetesResources.Version != (steward.KubernetesVersion{Version: "v1.30.2", Status: steward.VersionStatusReady}) ||
		s.Storage == nil || s.Storage.DataStoreName != "default" || tcp.Spec.Kubernetes.Version != "v1.30.2" ||
		tcp.Annotations[external.CredentialsRotatedAnnotation] != "Prepared/1" {
		t.Errorf("read %+v", tcp)
	}
	if c := tcp.DeepCopy(); c.Status.Storage == s.Storage {
		t.Error("DeepCopy shares the status' storage")
	}
	u.Object["status"].(map[string]any)["controlPlaneEndpoint"] = int64(6443)
	if _, err := external.FromUnstructured[steward.TenantControlPlane](u); err == nil {
		t.Error("an endpoint of the wrong type read without an error")
	}
}
