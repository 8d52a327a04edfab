package controlplane

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// A TenantControlPlane waiting for its version's build: a new one is Provisioning with no
// version; one being upgraded keeps saying which version serves and where its admin kubeconfig
// is (the old processes still run), so the upgrade does not read as a control plane lost.
func TestUnavailableStateKeepsTheRunningVersion(t *testing.T) {
	running := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "t1", "namespace": "t1-abcd1234"},
		"status": map[string]any{
			"kubernetesResources": map[string]any{"version": map[string]any{"status": statusReady, "version": "v1.30.1"}},
			"kubeconfig":          map[string]any{"admin": map[string]any{"secretName": "t1-admin-kubeconfig"}},
		},
	}}
	fresh := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "t2", "namespace": "t2-abcd1234"},
	}}
	for _, tc := range []struct {
		name                  string
		tcp                   *unstructured.Unstructured
		status                string
		wantStatus, wantVer   string
		wantSecret, wantField bool
	}{
		{"upgrade waits for the build", running, pendingStatus(running, "v1.30.2"), statusUpgrading, "v1.30.1", true, true},
		{"upgrade to an unbuildable version", running, statusNotReady, statusNotReady, "v1.30.1", true, true},
		{"new, its version building", fresh, pendingStatus(fresh, "v1.30.1"), statusProvisioning, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := tcpStatus(tc.tcp, unavailableState(tc.tcp, "127.0.0.1:30001", tc.status, "BuildingKubernetes", "building"))
			got := &unstructured.Unstructured{Object: map[string]any{"status": status}}
			if s := nested(got, "status", "kubernetesResources", "version", "status"); s != tc.wantStatus {
				t.Errorf("version.status %q, want %q", s, tc.wantStatus)
			}
			if v := nested(got, "status", "kubernetesResources", "version", "version"); v != tc.wantVer {
				t.Errorf("version.version %q, want %q", v, tc.wantVer)
			}
			if s := nested(got, "status", "kubeconfig", "admin", "secretName"); (s == "t1-admin-kubeconfig") != tc.wantSecret {
				t.Errorf("kubeconfig.admin.secretName %q (want kept: %v)", s, tc.wantSecret)
			}
			if e := nested(got, "status", "controlPlaneEndpoint"); e != "127.0.0.1:30001" {
				t.Errorf("controlPlaneEndpoint %q", e)
			}
		})
	}
}

func nested(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

// The replicas a TenantControlPlane asks for (spec.controlPlane.deployment.replicas, 1 when
// unset) are read as asked, and a negative count is an invalid spec.
func TestTenantSpecReplicas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas any
		want     int64
		invalid  bool
	}{
		{"unset", nil, 1, false},
		{"stopped", int64(0), 0, false},
		{"one", int64(1), 1, false},
		{"three", int64(3), 3, false},
		{"negative", int64(-1), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]any{"kubernetes": map[string]any{"version": "v1.36.3"}}
			if tc.replicas != nil {
				spec["controlPlane"] = map[string]any{"deployment": map[string]any{"replicas": tc.replicas}}
			}
			s, err := parseTenantSpec(&unstructured.Unstructured{Object: map[string]any{"spec": spec}})
			if (err != nil) != tc.invalid || (!tc.invalid && s.Replicas != tc.want) {
				t.Fatalf("replicas %d, err %v; want %d (invalid %v)", s.Replicas, err, tc.want, tc.invalid)
			}
		})
	}
	// Stopped, the status says no replica and keeps the endpoint.
	tcp := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "t", "namespace": "t-1"}}}
	status := &unstructured.Unstructured{Object: map[string]any{"status": tcpStatus(tcp, tcpState{endpoint: "127.0.0.1:30001", versionStatus: statusSleeping})}}
	if r, _, _ := unstructured.NestedInt64(status.Object, "status", "kubernetesResources", "deployment", "replicas"); r != 0 {
		t.Errorf("stopped: replicas %d", r)
	}
	if e := nested(status, "status", "controlPlaneEndpoint"); e != "127.0.0.1:30001" {
		t.Errorf("stopped: endpoint %q", e)
	}
}

// A status that becomes Ready is written before the reasons why it was not are removed, so the
// lifecycle worker, which waits on the status, sees it one write sooner; a status with a reason
// goes after it, so it is never read without its why.
func TestSetTCPStatusOrder(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{tenantControlPlanes: "TenantControlPlaneList"})
	var writes []string
	client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		what := "annotations"
		if action.GetSubresource() == "status" {
			what = "status"
		}
		writes = append(writes, what)
		return true, &unstructured.Unstructured{Object: map[string]any{}}, nil
	})
	c := &Controller{deps: &controllerkit.Deps{Dynamic: client}, recorder: record.NewFakeRecorder(10), planes: map[string]*plane{}}
	starting := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "t", "namespace": "t-1"}}}
	starting.SetAnnotations(map[string]string{external.LocalProviderReasonAnnotation: "Starting", external.LocalProviderMessageAnnotation: "waiting"})
	ready := tcpState{endpoint: "127.0.0.1:30001", versionStatus: statusReady, runningVersion: "v1.36.3", replicas: 1}
	if err := c.setTCPStatus(context.Background(), starting, ready); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(writes, []string{"status", "annotations"}) {
		t.Errorf("becoming Ready wrote %v, want the status first", writes)
	}

	writes = nil
	fresh := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "t", "namespace": "t-1"}}}
	if err := c.setTCPStatus(context.Background(), fresh, tcpState{versionStatus: statusProvisioning, replicas: 1, reason: "Starting", message: "waiting"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(writes, []string{"annotations", "status"}) {
		t.Errorf("a status with a reason wrote %v, want the annotations first", writes)
	}
}

// The TenantControlPlanes this provider runs are those a StewardControlPlane controls, as the
// StewardControlPlane controller names its owner (pkg/external's kind): not one without an
// owner, nor one another control plane provider made.
func TestOwnedBySCP(t *testing.T) {
	owned := func(apiVersion, kind string) *unstructured.Unstructured {
		tcp := &unstructured.Unstructured{}
		tcp.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "t1", UID: "scp-uid", Controller: ptr.To(true)}})
		return tcp
	}
	if !ownedBySCP(owned(external.StewardControlPlaneGVK.ToAPIVersionAndKind())) {
		t.Error("a TenantControlPlane a StewardControlPlane controls is not ours")
	}
	if ownedBySCP(owned(external.KamajiControlPlaneGVK.ToAPIVersionAndKind())) {
		t.Error("a TenantControlPlane a KamajiControlPlane controls counts as ours")
	}
	if ownedBySCP(&unstructured.Unstructured{}) {
		t.Error("a TenantControlPlane without an owner counts as ours")
	}
}

// A namespace named in ExternalNamespaces is a real Steward's: its TenantControlPlanes are not
// this provider's, though its clusters are on LocalClusters; nor are those butler makes in the
// tenant namespace (<tc>-<uid8>) of a TenantCluster there.
func TestExternalNamespaces(t *testing.T) {
	o := Options{ExternalNamespaces: []string{"steward-demo"}}
	obj := func(namespace, tcNamespace string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: namespace, Labels: map[string]string{external.TenantClusterNamespaceLabel: tcNamespace}}
	}
	for _, c := range []struct {
		obj  *metav1.ObjectMeta
		want bool
	}{
		{&metav1.ObjectMeta{Namespace: "steward-demo"}, true},
		{obj("demo-0a1b2c3d", "steward-demo"), true},
		{obj("demo-4e5f6a7b", "local-demo"), false},
		{&metav1.ObjectMeta{Namespace: "local-demo"}, false},
	} {
		if got := o.external(c.obj); got != c.want {
			t.Errorf("external(%s, TenantCluster in %q) = %v, want %v", c.obj.Namespace, c.obj.Labels[external.TenantClusterNamespaceLabel], got, c.want)
		}
	}
}
