package infra_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
)

func TestKinds(t *testing.T) {
	for p, want := range map[v1alpha1.ProviderType][2]string{
		v1alpha1.ProviderHarvester: {"KubevirtCluster", "KubevirtMachineTemplate"},
		v1alpha1.ProviderNutanix:   {"NutanixCluster", "NutanixMachineTemplate"},
		v1alpha1.ProviderProxmox:   {"ProxmoxCluster", "ProxmoxMachineTemplate"},
		v1alpha1.ProviderAWS:       {"AWSCluster", "AWSMachineTemplate"},
		v1alpha1.ProviderAzure:     {"AzureCluster", "AzureMachineTemplate"},
		v1alpha1.ProviderGCP:       {"GCPCluster", "GCPMachineTemplate"},
		v1alpha1.ProviderLocal:     {"LocalCluster", "LocalMachineTemplate"},
	} {
		c, tmpl := infra.Kinds(p)
		if c.Kind != want[0] || tmpl.Kind != want[1] {
			t.Errorf("Kinds(%s) = %s, %s; want %v", p, c.Kind, tmpl.Kind, want)
		}
		if _, err := external.GVR(c); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if _, err := external.GVR(tmpl); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if c, tmpl := infra.Kinds("vsphere"); !c.Empty() || !tmpl.Empty() {
		t.Errorf("Kinds(vsphere) = %v, %v; want none", c, tmpl)
	}
}

// A ProviderConfig that lacks what a provider needs is an error naming the ProviderConfig and
// the field, which the controller shows as a condition.
func TestMissingProviderFields(t *testing.T) {
	for _, tc := range []struct {
		provider v1alpha1.ProviderType
		change   func(in *component.Input)
		want     string
	}{
		{v1alpha1.ProviderHarvester, func(in *component.Input) { in.Provider.Spec.Harvester = nil }, "spec.harvester is required"},
		{v1alpha1.ProviderHarvester, func(in *component.Input) { in.Provider.Spec.Harvester.NetworkName = "" }, "spec.harvester.networkName"},
		{v1alpha1.ProviderHarvester, func(in *component.Input) { in.Provider.Spec.Harvester.ImageName = "" }, "spec.harvester.imageName"},
		{v1alpha1.ProviderHarvester, func(in *component.Input) { in.Provider.Spec.CredentialsRef = nil }, "spec.credentialsRef"},
		{v1alpha1.ProviderNutanix, func(in *component.Input) { in.Provider.Spec.Nutanix = nil }, "spec.nutanix is required"},
		{v1alpha1.ProviderNutanix, func(in *component.Input) { in.Provider.Spec.Nutanix.Endpoint = "" }, "spec.nutanix.endpoint"},
		{v1alpha1.ProviderNutanix, func(in *component.Input) { in.Provider.Spec.Nutanix.ClusterUUID = "" }, "spec.nutanix.clusterUUID"},
		{v1alpha1.ProviderNutanix, func(in *component.Input) { in.Provider.Spec.Nutanix.SubnetUUID = "" }, "spec.nutanix.subnetUUID"},
		{v1alpha1.ProviderNutanix, func(in *component.Input) { in.Provider.Spec.Nutanix.ImageUUID = "" }, "spec.nutanix.imageUUID"},
		{v1alpha1.ProviderNutanix, func(in *component.Input) { in.Provider.Spec.CredentialsRef = nil }, "spec.credentialsRef"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Provider.Spec.Proxmox = nil }, "spec.proxmox is required"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Provider.Spec.Proxmox.Nodes = nil }, "spec.proxmox.nodes"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Provider.Spec.Proxmox.Storage = "" }, "spec.proxmox.storage"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Provider.Spec.Proxmox.TemplateID = 0 }, "spec.proxmox.templateID"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Allocations = nil }, "spec.network.mode must be ipam"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Allocations[0].Status.Phase = v1alpha1.IPAllocationPending }, "no allocated nodes IPAllocation"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Provider.Spec.Network.Subnet = "" }, "spec.network.subnet"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Provider.Spec.Network.DNSServers = nil }, "spec.network.dnsServers"},
		{v1alpha1.ProviderProxmox, func(in *component.Input) { in.Provider.Spec.CredentialsRef = nil }, "spec.credentialsRef"},
		{v1alpha1.ProviderAWS, func(in *component.Input) { in.Provider.Spec.AWS = nil }, "spec.aws is required"},
		{v1alpha1.ProviderAWS, func(in *component.Input) { in.Provider.Spec.AWS.Region = "" }, "spec.aws.region"},
		{v1alpha1.ProviderAWS, func(in *component.Input) { in.Provider.Spec.CredentialsRef = nil }, "spec.credentialsRef"},
		{v1alpha1.ProviderAWS, func(in *component.Input) { in.Cluster.Spec.Workers.MachineTemplate.CPU = ptrTo[int32](512) }, "no aws size has 512 CPUs"},
		{v1alpha1.ProviderAzure, func(in *component.Input) { in.Provider.Spec.Azure = nil }, "spec.azure is required"},
		{v1alpha1.ProviderAzure, func(in *component.Input) { in.Provider.Spec.Azure.SubscriptionID = "" }, "spec.azure.subscriptionID"},
		{v1alpha1.ProviderAzure, func(in *component.Input) { in.Provider.Spec.Azure.ResourceGroup = "" }, "spec.azure.resourceGroup"},
		{v1alpha1.ProviderAzure, func(in *component.Input) { in.Provider.Spec.Azure.Location = "" }, "spec.azure.location"},
		{v1alpha1.ProviderAzure, func(in *component.Input) { in.Provider.Spec.CredentialsRef = nil }, "spec.credentialsRef"},
		{v1alpha1.ProviderGCP, func(in *component.Input) { in.Provider.Spec.GCP = nil }, "spec.gcp is required"},
		{v1alpha1.ProviderGCP, func(in *component.Input) { in.Provider.Spec.GCP.ProjectID = "" }, "spec.gcp.projectID"},
		{v1alpha1.ProviderGCP, func(in *component.Input) { in.Provider.Spec.GCP.Region = "" }, "spec.gcp.region"},
		{v1alpha1.ProviderGCP, func(in *component.Input) { in.Provider.Spec.CredentialsRef = nil }, "spec.credentialsRef"},
		{"vsphere", func(*component.Input) {}, `unknown provider "vsphere"`},
	} {
		t.Run(string(tc.provider)+"/"+tc.want, func(t *testing.T) {
			in := componenttest.Input(tc.provider)
			in.Provider.Spec.Provider = tc.provider
			tc.change(&in)
			_, _, err := infra.ForProvider(in)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "ProviderConfig butler-system/pc") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to name ProviderConfig butler-system/pc and %q", err, tc.want)
			}
		})
	}
}

// The local provider needs no credentials and no configuration.
func TestLocalNeedsNothing(t *testing.T) {
	in := componenttest.Input(v1alpha1.ProviderLocal)
	in.Provider.Spec = v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderLocal}
	in.Allocations = nil
	c, tmpl, err := infra.ForProvider(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Object["spec"]; ok {
		t.Errorf("LocalCluster spec %v; the control plane provider sets its endpoint, we set nothing", c.Object["spec"])
	}
	if got := str(t, tmpl, "spec", "template", "spec"); got != "map[]" {
		t.Errorf("LocalMachineTemplate template spec %s, want empty", got)
	}
}

// spec.local.nodeType real: every machine of the workers' template is a real node.
func TestLocalRealNodes(t *testing.T) {
	in := componenttest.Input(v1alpha1.ProviderLocal)
	in.Provider.Spec = v1alpha1.ProviderConfigSpec{Provider: v1alpha1.ProviderLocal, Local: &v1alpha1.LocalConfig{NodeType: v1alpha1.LocalNodeReal}}
	in.Allocations = nil
	_, tmpl, err := infra.ForProvider(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := str(t, tmpl, "spec", "template", "spec"); got != "map[nodeType:real]" {
		t.Errorf("LocalMachineTemplate template spec %s, want map[nodeType:real]", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// str renders the field at path with fmt (maps print as map[k:v ...]), or "<none>".
func str(t *testing.T, u *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !ok {
		return "<none>"
	}
	return fmt.Sprint(v)
}

// The worker machine template follows the pool: size, image, disk; each cloud's size is the
// smallest general purpose one that fits unless the ProviderConfig names one.
func TestMachineTemplates(t *testing.T) {
	type check struct {
		path []string
		want string
	}
	for _, tc := range []struct {
		name     string
		provider v1alpha1.ProviderType
		change   func(in *component.Input)
		checks   []check
	}{
		{"aws size fits 3 cpu 20Gi", v1alpha1.ProviderAWS, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.CPU = ptrTo[int32](3)
			in.Cluster.Spec.Workers.MachineTemplate.Memory = componenttest.Quantity("20Gi")
			in.Cluster.Spec.Workers.MachineTemplate.OS.ImageRef = "ami-123"
		}, []check{{[]string{"instanceType"}, "m6i.2xlarge"}, {[]string{"ami", "id"}, "ami-123"}}},
		{"aws disk rounds up to GiB", v1alpha1.ProviderAWS, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.DiskSize = componenttest.Quantity("40G")
		}, []check{{[]string{"rootVolume", "size"}, "38"}}},
		{"azure vmSize from the ProviderConfig", v1alpha1.ProviderAzure, func(in *component.Input) {
			in.Provider.Spec.Azure.VMSize = "Standard_E4s_v5"
		}, []check{{[]string{"vmSize"}, "Standard_E4s_v5"}, {[]string{"osDisk", "diskSizeGB"}, "100"}}},
		{"azure derived size and image", v1alpha1.ProviderAzure, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.OS.ImageRef = "/subscriptions/s/images/talos"
		}, []check{{[]string{"vmSize"}, "Standard_D4s_v5"}, {[]string{"image", "id"}, "/subscriptions/s/images/talos"}}},
		{"gcp machineType from the ProviderConfig", v1alpha1.ProviderGCP, func(in *component.Input) {
			in.Provider.Spec.GCP.MachineType = "e2-standard-8"
			in.Cluster.Spec.Workers.MachineTemplate.OS.ImageRef = "projects/p/global/images/talos"
		}, []check{{[]string{"instanceType"}, "e2-standard-8"}, {[]string{"image"}, "projects/p/global/images/talos"}, {[]string{"subnet"}, "workers"}}},
		{"gcp derived size", v1alpha1.ProviderGCP, func(*component.Input) {}, []check{{[]string{"instanceType"}, "n2-standard-4"}, {[]string{"rootDeviceSize"}, "100"}}},
		{"harvester imageRef overrides the image", v1alpha1.ProviderHarvester, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.OS.ImageRef = "images/rocky-9"
			in.Provider.Spec.Harvester.StorageClassName = ""
		}, []check{
			{[]string{"virtualMachineTemplate", "spec", "dataVolumeTemplates"}, "images/rocky-9"},
			{[]string{"virtualMachineTemplate", "spec", "dataVolumeTemplates"}, "longhorn-rocky-9"},
		}},
		{"harvester storage class from the ProviderConfig", v1alpha1.ProviderHarvester, func(in *component.Input) {
			in.Provider.Spec.Harvester.StorageClassName = "fast"
		}, []check{{[]string{"virtualMachineTemplate", "spec", "dataVolumeTemplates"}, "fast"}}},
		{"harvester size", v1alpha1.ProviderHarvester, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.CPU = ptrTo[int32](8)
			in.Cluster.Spec.Workers.MachineTemplate.Memory = componenttest.Quantity("32Gi")
		}, []check{
			{[]string{"virtualMachineTemplate", "spec", "template", "spec", "domain", "cpu", "cores"}, "8"},
			{[]string{"virtualMachineTemplate", "spec", "template", "spec", "domain", "memory", "guest"}, "32Gi"},
		}},
		{"nutanix image by name", v1alpha1.ProviderNutanix, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.OS.ImageRef = "talos-1.11"
		}, []check{{[]string{"image", "type"}, "name"}, {[]string{"image", "name"}, "talos-1.11"}, {[]string{"vcpuSockets"}, "4"}, {[]string{"memorySize"}, "16Gi"}}},
		{"nutanix image by uuid", v1alpha1.ProviderNutanix, func(*component.Input) {},
			[]check{{[]string{"image", "type"}, "uuid"}, {[]string{"image", "uuid"}, "00000000-0000-0000-0000-000000000003"}}},
		{"proxmox imageRef as VM id", v1alpha1.ProviderProxmox, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.OS.ImageRef = "9100"
		}, []check{{[]string{"templateID"}, "9100"}}},
		{"proxmox imageRef as tag", v1alpha1.ProviderProxmox, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.OS.ImageRef = "rocky-9"
			in.Cluster.Spec.Workers.MachineTemplate.OS.Type = v1alpha1.OSRocky
		}, []check{{[]string{"templateSelector", "matchTags"}, "[rocky-9]"}, {[]string{"templateID"}, "<none>"}, {[]string{"checks"}, "<none>"}}},
		{"proxmox memory in multiples of 8 MiB", v1alpha1.ProviderProxmox, func(in *component.Input) {
			in.Cluster.Spec.Workers.MachineTemplate.Memory = componenttest.Quantity("1000M")
		}, []check{{[]string{"memoryMiB"}, "960"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := componenttest.Input(tc.provider)
			tc.change(&in)
			_, tmpl, err := infra.ForProvider(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.checks {
				got := str(t, tmpl, append([]string{"spec", "template", "spec"}, c.path...)...)
				if c.want == "<none>" {
					if got != "<none>" {
						t.Errorf("%s = %s, want none", strings.Join(c.path, "."), got)
					}
					continue
				}
				if !strings.Contains(got, c.want) {
					t.Errorf("%s = %s, want %s", strings.Join(c.path, "."), got, c.want)
				}
			}
		})
	}
}

// Proxmox machines take the nodes IPAllocation, from the in-cluster pool (IPv4 or IPv6) of the
// ProxmoxCluster. No other provider's machines can: their objects carry nothing of it (before,
// KubeVirt's and Nutanix's templates had an annotation nothing read), and each says why.
func TestNodeAddresses(t *testing.T) {
	in := componenttest.Input(v1alpha1.ProviderProxmox)
	in.Allocations[0].Status.StartAddress, in.Allocations[0].Status.EndAddress = "fd00::10", "fd00::14"
	in.Provider.Spec.Network.Subnet = "fd00::/64"
	c, _, err := infra.ForProvider(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := str(t, c, "spec", "ipv6Config"); !strings.Contains(got, "fd00::10-fd00::14") || !strings.Contains(got, "prefix:64") {
		t.Errorf("ipv6Config %s", got)
	}
	if got := str(t, c, "spec", "ipv4Config"); got != "<none>" {
		t.Errorf("ipv4Config %s with an IPv6 allocation", got)
	}
	if why := infra.NodeAddressesUnsupported(v1alpha1.ProviderProxmox); why != "" {
		t.Errorf("proxmox: %s", why)
	}
	for _, p := range componenttest.Providers {
		if p == v1alpha1.ProviderProxmox {
			continue
		}
		if infra.NodeAddressesUnsupported(p) == "" {
			t.Errorf("%s: no reason why its machines take no node addresses", p)
		}
		c, tmpl, err := infra.ForProvider(componenttest.Input(p))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*unstructured.Unstructured{c, tmpl} {
			if b, _ := o.MarshalJSON(); strings.Contains(string(b), "10.0.0.1") {
				t.Errorf("%s %s carries the nodes allocation: %s", p, o.GetKind(), b)
			}
		}
	}
}

func TestNutanixPrismAddress(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		port     int32
		want     string
	}{
		{"prism.example.com", 0, "prism.example.com 9440"},
		{"prism.example.com:9441", 0, "prism.example.com 9441"},
		{"https://prism.example.com:9442/", 0, "prism.example.com 9442"},
		{"https://prism.example.com", 0, "prism.example.com 9440"},
		{"https://prism.example.com:9442", 443, "prism.example.com 443"},
	} {
		in := componenttest.Input(v1alpha1.ProviderNutanix)
		in.Provider.Spec.Nutanix.Endpoint, in.Provider.Spec.Nutanix.Port = tc.endpoint, tc.port
		c, _, err := infra.ForProvider(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := str(t, c, "spec", "prismCentral", "address") + " " + str(t, c, "spec", "prismCentral", "port"); got != tc.want {
			t.Errorf("%s (port %d): prismCentral %s, want %s", tc.endpoint, tc.port, got, tc.want)
		}
	}
}

// A standalone control plane's machines are sized by spec.controlPlane.machineTemplate, or the
// defaults.
func TestControlPlaneTemplate(t *testing.T) {
	in := componenttest.Input(v1alpha1.ProviderAWS)
	in.Cluster.Spec.ControlPlane.Type = v1alpha1.ControlPlaneStandalone
	in.Cluster.Spec.ControlPlane.MachineTemplate = &v1alpha1.MachineTemplate{CPU: ptrTo[int32](2), Memory: componenttest.Quantity("8Gi")}
	tmpl, err := infra.ControlPlaneTemplate(in)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.GetName() != "prod-control-plane" || str(t, tmpl, "spec", "template", "spec", "instanceType") != "m6i.large" {
		t.Errorf("%s: instance type %s, want prod-control-plane m6i.large", tmpl.GetName(), str(t, tmpl, "spec", "template", "spec", "instanceType"))
	}
	in.Cluster.Spec.ControlPlane.MachineTemplate = nil
	if tmpl, err = infra.ControlPlaneTemplate(in); err != nil {
		t.Fatal(err)
	}
	if got := str(t, tmpl, "spec", "template", "spec", "instanceType"); got != "m6i.xlarge" {
		t.Errorf("default size: %s, want m6i.xlarge (4 CPUs, 16Gi)", got)
	}
}
