package stewardcontrolplane

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/crdtest"
)

func testSCP() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": external.StewardControlPlaneGVK.GroupVersion().String(), "kind": external.StewardControlPlaneGVK.Kind,
		"metadata": map[string]any{
			"name": "t1", "namespace": "t1-abcd1234", "uid": "scp-uid",
			"labels":      map[string]any{clusterv1.ClusterNameLabel: "t1", "butler.butlerlabs.dev/tenant-cluster": "t1"},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "kept"},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "t1", "uid": "cluster-uid"}},
		},
		"spec": map[string]any{
			"version":   "1.36.3",
			"replicas":  int64(2),
			"kubelet":   map[string]any{"cgroupfs": "systemd", "preferredAddressTypes": []any{"InternalIP"}},
			"apiServer": map[string]any{"extraArgs": []any{"--v=2"}},
			"network": map[string]any{
				"serviceType": "LoadBalancer",
				"certSANs":    []any{"t1.example.com"},
				"ingress":     map[string]any{"hostname": "t1.ingress.example.com:443"},
			},
			"addons": map[string]any{
				"coreDNS":   map[string]any{"dnsServiceIPs": []any{"10.96.0.10"}, "imageTag": "v1.11.1"},
				"kubeProxy": map[string]any{},
			},
			"dataStoreName": "default",
		},
	}}
}

func testCluster() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "t1", "namespace": "t1-abcd1234"},
		"spec": map[string]any{
			"clusterNetwork": map[string]any{
				"apiServerPort": int64(6443),
				"services":      map[string]any{"cidrBlocks": []any{"10.96.0.0/12"}},
				"pods":          map[string]any{"cidrBlocks": []any{"10.244.0.0/16"}},
				"serviceDomain": "tenant.local",
			},
			"controlPlaneRef":   map[string]any{"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "StewardControlPlane", "name": "t1"},
			"infrastructureRef": map[string]any{"apiGroup": "infrastructure.butlerlabs.dev", "kind": "LocalCluster", "name": "t1"},
		},
	}}
}

func TestDesiredTCP(t *testing.T) {
	tcp, err := desiredTCP(testSCP(), testCluster())
	if err != nil {
		t.Fatal(err)
	}
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(tcp.Object, path...)
		return v
	}
	strs := func(path ...string) []string {
		v, _, _ := unstructured.NestedStringSlice(tcp.Object, path...)
		return v
	}
	checks := map[string][2]string{
		"version":     {str("spec", "kubernetes", "version"), "v1.36.3"},
		"serviceType": {str("spec", "controlPlane", "service", "serviceType"), "LoadBalancer"},
		"serviceCidr": {str("spec", "networkProfile", "serviceCidr"), "10.96.0.0/12"},
		"podCidr":     {str("spec", "networkProfile", "podCidr"), "10.244.0.0/16"},
		"domain":      {str("spec", "networkProfile", "clusterDomain"), "tenant.local"},
		"dataStore":   {str("spec", "dataStore"), "default"},
		"cgroupfs":    {str("spec", "kubernetes", "kubelet", "cgroupfs"), "systemd"},
		"coreDNS tag": {str("spec", "addons", "coreDNS", "imageTag"), "v1.11.1"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	if port, _, _ := unstructured.NestedInt64(tcp.Object, "spec", "networkProfile", "port"); port != 6443 {
		t.Errorf("port = %d", port)
	}
	if replicas, _, _ := unstructured.NestedInt64(tcp.Object, "spec", "controlPlane", "deployment", "replicas"); replicas != 2 {
		t.Errorf("replicas = %d", replicas)
	}
	if got := strs("spec", "networkProfile", "certSANs"); !slices.Equal(got, []string{"t1.example.com", "t1.ingress.example.com"}) {
		t.Errorf("certSANs = %v", got)
	}
	if got := strs("spec", "networkProfile", "dnsServiceIPs"); !slices.Equal(got, []string{"10.96.0.10"}) {
		t.Errorf("dnsServiceIPs = %v", got)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(tcp.Object, "spec", "addons", "coreDNS", "dnsServiceIPs"); found {
		t.Error("addons.coreDNS.dnsServiceIPs copied; the TenantControlPlane has no such field")
	}
	if got := strs("spec", "controlPlane", "deployment", "extraArgs", "apiServer"); !slices.Equal(got, []string{"--v=2"}) {
		t.Errorf("extraArgs.apiServer = %v", got)
	}
	refs := tcp.GetOwnerReferences()
	if len(refs) != 1 || refs[0].Kind != external.StewardControlPlaneGVK.Kind || refs[0].APIVersion != external.StewardControlPlaneGVK.GroupVersion().String() || refs[0].UID != "scp-uid" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ownerReferences = %+v", refs)
	}
	if tcp.GetLabels()[clusterv1.ClusterNameLabel] != "t1" {
		t.Errorf("labels = %v", tcp.GetLabels())
	}
	if a := tcp.GetAnnotations(); a["note"] != "kept" || a["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Errorf("annotations = %v", a)
	}
	// The StewardControlPlane itself is not changed by the copy.
	if _, found, _ := unstructured.NestedStringSlice(testSCP().Object, "spec", "addons", "coreDNS", "dnsServiceIPs"); !found {
		t.Error("desiredTCP changed its input")
	}

	bad := testSCP()
	if err := unstructured.SetNestedStringSlice(bad.Object, []string{"t1.example.com:6443"}, "spec", "network", "certSANs"); err != nil {
		t.Fatal(err)
	}
	if _, err := desiredTCP(bad, testCluster()); err == nil {
		t.Error("a certSAN with a port was accepted")
	}
	noVersion := testSCP()
	unstructured.RemoveNestedField(noVersion.Object, "spec", "version")
	if _, err := desiredTCP(noVersion, testCluster()); err == nil {
		t.Error("a StewardControlPlane without a version was accepted")
	}
}

// Every TenantControlPlane made passes the CRD's validation (no unknown field, schema, CEL), and
// has a networkProfile even when the Cluster says nothing of its network: the CRD's update rules
// read it.
func TestDesiredTCPValidates(t *testing.T) {
	dir, err := crdtest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crdtest.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	bare := testCluster()
	unstructured.RemoveNestedField(bare.Object, "spec", "clusterNetwork")
	for name, cluster := range map[string]*unstructured.Unstructured{"with network": testCluster(), "without network": bare} {
		tcp, err := desiredTCP(testSCP(), cluster)
		if err != nil {
			t.Fatal(err)
		}
		if errs := crds.Validate(tcp); len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
		if _, found, _ := unstructured.NestedMap(tcp.Object, "spec", "networkProfile"); !found {
			t.Errorf("%s: no spec.networkProfile", name)
		}
	}
}

func TestOwnerAndRefs(t *testing.T) {
	if got := ownerCluster(testSCP()); got != "t1" {
		t.Errorf("ownerCluster = %q", got)
	}
	orphan := testSCP()
	orphan.SetOwnerReferences(nil)
	if got := ownerCluster(orphan); got != "" {
		t.Errorf("ownerCluster of an orphan = %q", got)
	}
	if got := controlPlaneOfCluster(testCluster()); !slices.Equal(got, []string{"t1-abcd1234/t1"}) {
		t.Errorf("controlPlaneOfCluster = %v", got)
	}
	kcp := testCluster()
	if err := unstructured.SetNestedField(kcp.Object, "KubeadmControlPlane", "spec", "controlPlaneRef", "kind"); err != nil {
		t.Fatal(err)
	}
	if got := controlPlaneOfCluster(kcp); got != nil {
		t.Errorf("a KubeadmControlPlane's Cluster maps to %v", got)
	}
}

// Only local clusters' control planes are this stand-in's: another provider's are Steward's.
func TestOnlyLocalClusters(t *testing.T) {
	if !onLocalInfrastructure(testCluster()) {
		t.Error("a Cluster on a LocalCluster is not local")
	}
	kubevirt := testCluster()
	if err := unstructured.SetNestedStringMap(kubevirt.Object, map[string]string{
		"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "KubevirtCluster", "name": "t1"}, "spec", "infrastructureRef"); err != nil {
		t.Fatal(err)
	}
	if onLocalInfrastructure(kubevirt) {
		t.Error("a Cluster on a KubevirtCluster is local")
	}
}

func TestSCPStatusEqual(t *testing.T) {
	want := map[string]any{
		"ready": true, "version": "v1.36.3", "failureReason": nil,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
			"observedGeneration": int64(1), "lastTransitionTime": "2026-01-01T00:00:00Z"}},
	}
	have := map[string]any{
		"ready": true, "version": "v1.36.3",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
			"observedGeneration": int64(1), "lastTransitionTime": "2026-02-02T00:00:00Z"}},
	}
	if !scpStatusEqual(want, have) {
		t.Error("a status whose conditions differ only in their transition times differs")
	}
	have["failureReason"] = "Old"
	if scpStatusEqual(want, have) {
		t.Error("a failureReason to clear was not seen")
	}
	delete(have, "failureReason")
	have["ready"] = false
	if scpStatusEqual(want, have) {
		t.Error("ready differs but the statuses are equal")
	}
}

// The TenantControlPlanes this stand-in makes say what it does beyond Steward's contract.
func TestCapabilities(t *testing.T) {
	tcp, err := desiredTCP(testSCP(), testCluster())
	if err != nil {
		t.Fatal(err)
	}
	if got := tcp.GetAnnotations()[external.LocalProviderCapabilitiesAnnotation]; got != "wake-on-request,restore,snapshots,credential-rotation" {
		t.Errorf("capabilities annotation %q", got)
	}
}
