package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func validProviderConfig() *butler.ProviderConfig {
	return &butler.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "harvester", Namespace: "butler-system", ResourceVersion: "1"},
		Spec: butler.ProviderConfigSpec{
			Provider:       butler.ProviderHarvester,
			CredentialsRef: &butler.SecretKeyReference{Name: "harvester-kubeconfig", Namespace: "butler-system", Key: "kubeconfig"},
			Harvester:      &butler.HarvesterConfig{Namespace: "default", NetworkName: "default/vlan40", ImageName: "default/talos-1.8"},
			Network: butler.ProviderNetwork{
				Mode:       butler.NetworkModeIPAM,
				PoolRefs:   []butler.PoolReference{{Name: "lab", Priority: 0}, {Name: "overflow", Priority: 10}},
				Subnet:     "10.40.0.0/22",
				Gateway:    "10.40.0.1",
				DNSServers: []string{"10.40.0.2", "1.1.1.1"},
				LoadBalancer: &butler.LoadBalancerAllocation{
					DefaultPoolSize: ptr.To[int32](8), AllocationMode: butler.LBAllocationElastic,
					InitialPoolSize: ptr.To[int32](2), GrowthIncrement: ptr.To[int32](2),
				},
				QuotaPerTenant: &butler.TenantIPQuota{MaxNodeIPs: ptr.To[int32](20), MaxLoadBalancerIPs: ptr.To[int32](16)},
			},
			Scope:  butler.ProviderScope{Type: butler.ScopeTeam, TeamRef: &butler.LocalObjectReference{Name: "team-a"}},
			Limits: &butler.ProviderLimits{MaxClustersPerTeam: ptr.To[int32](5), MaxNodesPerTeam: ptr.To[int32](50)},
		},
	}
}

// useProvider switches the valid ProviderConfig to another provider with a valid block.
func useProvider(p butler.ProviderType) func(*butler.ProviderConfig) {
	return func(o *butler.ProviderConfig) {
		o.Spec.Provider = p
		o.Spec.Harvester = nil
		switch p {
		case butler.ProviderNutanix:
			o.Spec.Nutanix = &butler.NutanixConfig{Endpoint: "https://prism.example.com:9440", Port: 9440, ClusterUUID: "c-1", SubnetUUID: "s-1"}
		case butler.ProviderProxmox:
			o.Spec.Proxmox = &butler.ProxmoxConfig{Endpoint: "https://pve.example.com:8006", Nodes: []string{"pve1", "pve2"}, Storage: "local-lvm",
				TemplateID: 9000, VMIDRange: &butler.VMIDRange{Start: 1000, End: 1999}}
		case butler.ProviderAWS:
			o.Spec.AWS = &butler.AWSConfig{Region: "eu-west-1", SubnetIDs: []string{"subnet-1"}}
		case butler.ProviderAzure:
			o.Spec.Azure = &butler.AzureConfig{SubscriptionID: "sub", ResourceGroup: "rg"}
		case butler.ProviderGCP:
			o.Spec.GCP = &butler.GCPConfig{ProjectID: "proj", Region: "europe-west1"}
		case butler.ProviderLocal:
			o.Spec.CredentialsRef = nil
		}
	}
}

func then(fns ...func(*butler.ProviderConfig)) func(*butler.ProviderConfig) {
	return func(o *butler.ProviderConfig) {
		for _, fn := range fns {
			fn(o)
		}
	}
}

func TestValidateProviderConfig(t *testing.T) {
	runCreateCases(t, validProviderConfig, ValidateProviderConfig, []createCase[butler.ProviderConfig]{
		{"cluster scoped", func(o *butler.ProviderConfig) { o.Namespace = "" }, []fieldErr{required("metadata.namespace")}},
		{"nutanix", useProvider(butler.ProviderNutanix), nil},
		{"proxmox", useProvider(butler.ProviderProxmox), nil},
		{"aws", useProvider(butler.ProviderAWS), nil},
		{"azure", useProvider(butler.ProviderAzure), nil},
		{"gcp", useProvider(butler.ProviderGCP), nil},
		{"local without credentials", useProvider(butler.ProviderLocal), nil},
		{"cloud network, platform scope", func(o *butler.ProviderConfig) {
			o.Spec.Network = butler.ProviderNetwork{Mode: butler.NetworkModeCloud}
			o.Spec.Scope = butler.ProviderScope{Type: butler.ScopePlatform}
		}, nil},

		{"no provider", func(o *butler.ProviderConfig) { o.Spec.Provider = "" }, []fieldErr{required("spec.provider")}},
		{"unknown provider", func(o *butler.ProviderConfig) { o.Spec.Provider = "vsphere" }, []fieldErr{notSupp("spec.provider")}},
		{"unknown provider, nothing else", func(o *butler.ProviderConfig) {
			o.Spec.Provider, o.Spec.CredentialsRef, o.Spec.Harvester = "vsphere", nil, nil
		},
			[]fieldErr{notSupp("spec.provider")}},
		{"no credentials", func(o *butler.ProviderConfig) { o.Spec.CredentialsRef = nil }, []fieldErr{required("spec.credentialsRef")}},
		{"bad credentials", func(o *butler.ProviderConfig) {
			o.Spec.CredentialsRef = &butler.SecretKeyReference{Namespace: "Butler", Key: "a/b"}
		}, []fieldErr{required("spec.credentialsRef.name"), invalid("spec.credentialsRef.namespace"), invalid("spec.credentialsRef.key")}},
		{"missing block", func(o *butler.ProviderConfig) { o.Spec.Harvester = nil }, []fieldErr{required("spec.harvester")}},
		{"block of another provider", func(o *butler.ProviderConfig) { o.Spec.AWS = &butler.AWSConfig{Region: "us-east-1"} }, []fieldErr{forbidden("spec.aws")}},
		{"local with a block", then(useProvider(butler.ProviderLocal), func(o *butler.ProviderConfig) { o.Spec.GCP = &butler.GCPConfig{} }),
			[]fieldErr{forbidden("spec.gcp")}},
		// Real nodes asked of a provider that cannot boot them: refused, not ignored.
		{"real nodes of another provider", func(o *butler.ProviderConfig) { o.Spec.Local = &butler.LocalConfig{NodeType: butler.LocalNodeReal} },
			[]fieldErr{forbidden("spec.local")}},
		{"local with real nodes", then(useProvider(butler.ProviderLocal), func(o *butler.ProviderConfig) {
			o.Spec.Local = &butler.LocalConfig{NodeType: butler.LocalNodeReal}
		}), nil},
		{"local with an unknown node type", then(useProvider(butler.ProviderLocal), func(o *butler.ProviderConfig) {
			o.Spec.Local = &butler.LocalConfig{NodeType: "vm"}
		}), []fieldErr{notSupp("spec.local.nodeType")}},

		{"harvester network not namespaced", func(o *butler.ProviderConfig) { o.Spec.Harvester.NetworkName = "vlan40" }, []fieldErr{invalid("spec.harvester.networkName")}},
		{"harvester network with extra slash", func(o *butler.ProviderConfig) { o.Spec.Harvester.NetworkName = "default/vlan/40" }, []fieldErr{invalid("spec.harvester.networkName")}},
		{"harvester network missing", func(o *butler.ProviderConfig) { o.Spec.Harvester.NetworkName = "" }, []fieldErr{required("spec.harvester.networkName")}},
		{"harvester bad endpoint and namespace", func(o *butler.ProviderConfig) {
			o.Spec.Harvester.Endpoint, o.Spec.Harvester.Namespace = "harvester.local", "Default"
		}, []fieldErr{invalid("spec.harvester.endpoint"), invalid("spec.harvester.namespace")}},

		{"nutanix required fields", then(useProvider(butler.ProviderNutanix), func(o *butler.ProviderConfig) {
			o.Spec.Nutanix = &butler.NutanixConfig{Endpoint: "prism.example.com:9440", Port: 70000}
		}), []fieldErr{
			invalid("spec.nutanix.endpoint"), invalid("spec.nutanix.port"),
			required("spec.nutanix.clusterUUID"), required("spec.nutanix.subnetUUID"),
		}},
		{"proxmox required fields", then(useProvider(butler.ProviderProxmox), func(o *butler.ProviderConfig) {
			o.Spec.Proxmox = &butler.ProxmoxConfig{}
		}), []fieldErr{required("spec.proxmox.endpoint"), required("spec.proxmox.nodes"), required("spec.proxmox.storage")}},
		{"proxmox vmid range below 100", then(useProvider(butler.ProviderProxmox), func(o *butler.ProviderConfig) {
			o.Spec.Proxmox.VMIDRange = &butler.VMIDRange{Start: 50, End: 99}
		}), []fieldErr{invalid("spec.proxmox.vmidRange.start")}},
		{"proxmox vmid range reversed", then(useProvider(butler.ProviderProxmox), func(o *butler.ProviderConfig) {
			o.Spec.Proxmox.VMIDRange = &butler.VMIDRange{Start: 2000, End: 1000}
		}), []fieldErr{invalid("spec.proxmox.vmidRange.end")}},
		{"proxmox duplicate node", then(useProvider(butler.ProviderProxmox), func(o *butler.ProviderConfig) {
			o.Spec.Proxmox.Nodes = []string{"pve1", "pve1"}
		}), []fieldErr{dup("spec.proxmox.nodes[1]")}},
		{"aws without region", then(useProvider(butler.ProviderAWS), func(o *butler.ProviderConfig) { o.Spec.AWS.Region = "" }), []fieldErr{required("spec.aws.region")}},
		{"azure required fields", then(useProvider(butler.ProviderAzure), func(o *butler.ProviderConfig) { o.Spec.Azure = &butler.AzureConfig{} }),
			[]fieldErr{required("spec.azure.subscriptionID"), required("spec.azure.resourceGroup")}},
		{"gcp required fields", then(useProvider(butler.ProviderGCP), func(o *butler.ProviderConfig) { o.Spec.GCP = &butler.GCPConfig{} }),
			[]fieldErr{required("spec.gcp.projectID"), required("spec.gcp.region")}},

		{"unknown network mode", func(o *butler.ProviderConfig) { o.Spec.Network.Mode = "dhcp" }, []fieldErr{notSupp("spec.network.mode")}},
		{"ipam without pools", func(o *butler.ProviderConfig) { o.Spec.Network.PoolRefs = nil }, []fieldErr{required("spec.network.poolRefs")}},
		{"duplicate pool", func(o *butler.ProviderConfig) { o.Spec.Network.PoolRefs[1].Name = "lab" }, []fieldErr{dup("spec.network.poolRefs[1].name")}},
		{"pool without name", func(o *butler.ProviderConfig) { o.Spec.Network.PoolRefs[0].Name = "" }, []fieldErr{required("spec.network.poolRefs[0].name")}},
		{"bad subnet, gateway and DNS", func(o *butler.ProviderConfig) {
			o.Spec.Network.Subnet, o.Spec.Network.Gateway = "10.40.0.0/40", "10.40.0.256"
			o.Spec.Network.DNSServers = []string{"1.1.1.1", "dns.example.com"}
		}, []fieldErr{invalid("spec.network.subnet"), invalid("spec.network.gateway"), invalid("spec.network.dnsServers[1]")}},
		{"gateway outside subnet", func(o *butler.ProviderConfig) { o.Spec.Network.Gateway = "10.41.0.1" }, []fieldErr{invalid("spec.network.gateway")}},
		{"load balancer sizes", func(o *butler.ProviderConfig) {
			lb := o.Spec.Network.LoadBalancer
			lb.DefaultPoolSize, lb.InitialPoolSize, lb.GrowthIncrement, lb.AllocationMode = ptr.To[int32](0), ptr.To[int32](0), ptr.To[int32](-1), "dynamic"
		}, []fieldErr{
			invalid("spec.network.loadBalancer.defaultPoolSize"), invalid("spec.network.loadBalancer.initialPoolSize"),
			invalid("spec.network.loadBalancer.growthIncrement"), notSupp("spec.network.loadBalancer.allocationMode"),
		}},
		{"quota below one", func(o *butler.ProviderConfig) {
			o.Spec.Network.QuotaPerTenant = &butler.TenantIPQuota{MaxNodeIPs: ptr.To[int32](0), MaxLoadBalancerIPs: ptr.To[int32](0)}
		}, []fieldErr{invalid("spec.network.quotaPerTenant.maxNodeIPs"), invalid("spec.network.quotaPerTenant.maxLoadBalancerIPs")}},

		{"unknown scope", func(o *butler.ProviderConfig) { o.Spec.Scope.Type = "tenant" }, []fieldErr{notSupp("spec.scope.type")}},
		{"team scope without team", func(o *butler.ProviderConfig) { o.Spec.Scope.TeamRef = nil }, []fieldErr{required("spec.scope.teamRef")}},
		{"platform scope with team", func(o *butler.ProviderConfig) { o.Spec.Scope.Type = butler.ScopePlatform }, []fieldErr{forbidden("spec.scope.teamRef")}},
		{"bad team name", func(o *butler.ProviderConfig) { o.Spec.Scope.TeamRef.Name = "team.a" }, []fieldErr{invalid("spec.scope.teamRef.name")}},
		{"limits below one", func(o *butler.ProviderConfig) {
			o.Spec.Limits = &butler.ProviderLimits{MaxClustersPerTeam: ptr.To[int32](0), MaxNodesPerTeam: ptr.To[int32](0)}
		}, []fieldErr{invalid("spec.limits.maxClustersPerTeam"), invalid("spec.limits.maxNodesPerTeam")}},
	})
}

func TestValidateProviderConfigUpdate(t *testing.T) {
	runUpdateCases(t, validProviderConfig, ValidateProviderConfigUpdate, []updateCase[butler.ProviderConfig]{
		{"add pool", func(o *butler.ProviderConfig) {
			o.Spec.Network.PoolRefs = append(o.Spec.Network.PoolRefs, butler.PoolReference{Name: "spare", Priority: 20})
		}, nil},
		{"spec rules apply", func(o *butler.ProviderConfig) { o.Spec.Network.PoolRefs = nil }, []fieldErr{required("spec.network.poolRefs")}},
		// The clusters' machines were made with the old node type: kwok workers never become real.
		{"node type changed", then(useProvider(butler.ProviderLocal), func(o *butler.ProviderConfig) {
			o.Spec.Local = &butler.LocalConfig{NodeType: butler.LocalNodeReal}
		}), []fieldErr{invalid("spec.local.nodeType")}},
	})
}

func TestValidateProviderConfigStatusUpdate(t *testing.T) {
	runUpdateCases(t, validProviderConfig, ValidateProviderConfigStatusUpdate, []updateCase[butler.ProviderConfig]{
		{"ready", func(o *butler.ProviderConfig) {
			o.Status = butler.ProviderConfigStatus{Validated: true, Ready: true, Capacity: &butler.ProviderCapacity{AvailableIPs: 995, EstimatedTenants: 76}}
		}, nil},
		{"negative capacity", func(o *butler.ProviderConfig) {
			o.Status.Capacity = &butler.ProviderCapacity{AvailableIPs: -1, EstimatedTenants: -1}
		}, []fieldErr{invalid("status.capacity.availableIPs"), invalid("status.capacity.estimatedTenants")}},
	})
}
