// Package componenttest has the fixtures of the component builders' tests: a TenantCluster, a
// complete ProviderConfig of each provider, a ButlerConfig and IP allocations, and golden files.
// Only tests import it.
package componenttest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Namespace is the tenant namespace of Cluster (name and the first 8 characters of the UID).
const Namespace = "prod-0a1b2c3d"

// Providers are all seven providers of the API.
var Providers = []v1alpha1.ProviderType{
	v1alpha1.ProviderHarvester, v1alpha1.ProviderNutanix, v1alpha1.ProviderProxmox,
	v1alpha1.ProviderAWS, v1alpha1.ProviderAzure, v1alpha1.ProviderGCP, v1alpha1.ProviderLocal,
}

// Cluster is TenantCluster team-a/prod with defaults applied: 3 talos workers, hosted control
// plane, cilium, metallb and traefik.
func Cluster() *v1alpha1.TenantCluster {
	tc := &v1alpha1.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "0a1b2c3d-4e5f-6789-abcd-ef0123456789", Generation: 1},
		Spec: v1alpha1.TenantClusterSpec{
			KubernetesVersion: "v1.36.3",
			ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "pc", Namespace: "butler-system"},
			Workers:           v1alpha1.WorkersSpec{Replicas: 3},
			Addons: v1alpha1.AddonsSpec{
				CNI:          &v1alpha1.CNIAddon{Provider: "cilium"},
				LoadBalancer: &v1alpha1.LoadBalancerAddon{Provider: "metallb", Version: "0.14.9"},
				Ingress:      &v1alpha1.IngressAddon{Enabled: ptr.To(true)},
			},
		},
	}
	v1alpha1.SetObjectDefaults_TenantCluster(tc)
	return tc
}

// Provider is a complete ProviderConfig butler-system/pc of a provider.
func Provider(p v1alpha1.ProviderType) *v1alpha1.ProviderConfig {
	pc := &v1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "pc", Namespace: "butler-system"},
		Spec: v1alpha1.ProviderConfigSpec{
			Provider:       p,
			CredentialsRef: &v1alpha1.SecretKeyReference{Name: "pc-credentials"},
		},
	}
	switch p {
	case v1alpha1.ProviderHarvester:
		pc.Spec.Harvester = &v1alpha1.HarvesterConfig{Endpoint: "https://harvester.example.com", Namespace: "tenants",
			NetworkName: "default/vlan100", ImageName: "default/talos-1-11"}
	case v1alpha1.ProviderNutanix:
		pc.Spec.Nutanix = &v1alpha1.NutanixConfig{Endpoint: "https://prism.example.com:9440", ClusterUUID: "00000000-0000-0000-0000-000000000001",
			SubnetUUID: "00000000-0000-0000-0000-000000000002", ImageUUID: "00000000-0000-0000-0000-000000000003"}
	case v1alpha1.ProviderProxmox:
		pc.Spec.Proxmox = &v1alpha1.ProxmoxConfig{Endpoint: "https://pve.example.com:8006", Nodes: []string{"pve1", "pve2"},
			Storage: "local-lvm", TemplateID: 9000, VMIDRange: &v1alpha1.VMIDRange{Start: 1000, End: 1999}}
		pc.Spec.Network = v1alpha1.ProviderNetwork{Mode: v1alpha1.NetworkModeIPAM, PoolRefs: []v1alpha1.PoolReference{{Name: "lan"}},
			Subnet: "10.0.0.0/24", Gateway: "10.0.0.1", DNSServers: []string{"10.0.0.2", "10.0.0.3"}}
	case v1alpha1.ProviderAWS:
		pc.Spec.AWS = &v1alpha1.AWSConfig{Region: "eu-central-1", VPCID: "vpc-0123", SubnetIDs: []string{"subnet-a", "subnet-b"},
			SecurityGroupIDs: []string{"sg-1"}}
	case v1alpha1.ProviderAzure:
		pc.Spec.Azure = &v1alpha1.AzureConfig{SubscriptionID: "sub-1", ResourceGroup: "rg-tenants", Location: "westeurope",
			VnetName: "vnet-tenants", SubnetName: "workers"}
	case v1alpha1.ProviderGCP:
		pc.Spec.GCP = &v1alpha1.GCPConfig{ProjectID: "butler-tenants", Region: "europe-west4", Network: "tenants", Subnetwork: "workers"}
	case v1alpha1.ProviderLocal:
		pc.Spec.CredentialsRef = nil
	}
	v1alpha1.SetObjectDefaults_ProviderConfig(pc)
	return pc
}

// Config is ButlerConfig butler with default addon versions and LoadBalancer exposure.
func Config() *v1alpha1.ButlerConfig {
	c := &v1alpha1.ButlerConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "butler"},
		Spec: v1alpha1.ButlerConfigSpec{
			DefaultAddonVersions: v1alpha1.AddonVersions{Cilium: "1.18.2", Metallb: "0.15.2", Traefik: "37.1.1"},
			ControlPlaneExposure: v1alpha1.ControlPlaneExposure{Hostname: "k8s.example.com", IngressClassName: "haproxy",
				GatewayRef: &v1alpha1.NamespacedObjectReference{Name: "tenants", Namespace: "gateways"}},
		},
	}
	v1alpha1.SetObjectDefaults_ButlerConfig(c)
	return c
}

// Allocations are the cluster's allocated nodes (10.0.0.10-10.0.0.14) and load balancer
// (10.0.0.100-10.0.0.107) blocks.
func Allocations() []v1alpha1.IPAllocation {
	alloc := func(name string, typ v1alpha1.IPAllocationType, start, end string, n int64) v1alpha1.IPAllocation {
		return v1alpha1.IPAllocation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "butler-system"},
			Spec:       v1alpha1.IPAllocationSpec{PoolRef: v1alpha1.LocalObjectReference{Name: "lan"}, Type: typ, Count: ptr.To(int32(n))},
			Status: v1alpha1.IPAllocationStatus{Phase: v1alpha1.IPAllocationAllocated, StartAddress: start, EndAddress: end,
				AllocatedCount: n},
		}
	}
	return []v1alpha1.IPAllocation{
		alloc("prod-0a1b2c3d-nodes", v1alpha1.IPAllocationNodes, "10.0.0.10", "10.0.0.14", 5),
		alloc("prod-0a1b2c3d-lb", v1alpha1.IPAllocationLoadBalancer, "10.0.0.100", "10.0.0.107", 8),
	}
}

// Input is the builders' input for a provider.
func Input(p v1alpha1.ProviderType) component.Input {
	return component.Input{Cluster: Cluster(), Namespace: Namespace, Provider: Provider(p), Config: Config(), Allocations: Allocations()}
}

// Quantity parses a quantity.
func Quantity(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

// Golden compares obj, as YAML, with testdata/<name>.yaml (go test -update rewrites it).
func Golden(t *testing.T, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".yaml")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", path, d)
	}
}
