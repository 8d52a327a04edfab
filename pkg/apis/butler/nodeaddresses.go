package butler

// nodeAddressesUnsupported says why a provider's machines cannot be given addresses from the
// nodes IPAllocation; only Proxmox's can (CAPMOX's ipv4Config/ipv6Config pool, one address per
// machine through Cluster API's in-cluster IPAM). The registry warns with it, the controllers leave
// the nodes allocation out by it.
var nodeAddressesUnsupported = map[ProviderType]string{
	ProviderHarvester: "Cluster API's KubeVirt provider makes every machine of a template from one VM spec and gives its cloud-init drive only the user data, so no machine can be handed an address of its own; the VMs take theirs from the Harvester network (DHCP)",
	ProviderNutanix:   "a NutanixMachine has no static address field; the VMs take theirs from the Nutanix subnet (its IPAM or DHCP)",
	ProviderAWS:       "the cloud gives node addresses from its subnets",
	ProviderAzure:     "the cloud gives node addresses from its subnets",
	ProviderGCP:       "the cloud gives node addresses from its subnets",
	ProviderLocal:     "local machines are simulated on this host's loopback",
}

// NodeAddressesUnsupported is why a provider's machines cannot take the nodes IPAllocation, or
// "" when its machine specs carry it.
func NodeAddressesUnsupported(p ProviderType) string { return nodeAddressesUnsupported[p] }
