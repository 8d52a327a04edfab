package infra

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// Proxmox (ionos-cloud's CAPMOX) clones a VM template per machine and gives each an address from
// the cluster's in-cluster IP pool, which is the nodes IPAllocations (one block, and one more
// each time the workers outgrow them).
var proxmox = provider{
	cluster:     external.ProxmoxClusterGVK,
	template:    external.ProxmoxMachineTemplateGVK,
	clusterSpec: proxmoxCluster,
	machineSpec: proxmoxMachine,
}

// proxmoxBootDisk is the disk of the VM template CAPMOX resizes.
const proxmoxBootDisk = "scsi0"

func proxmoxConfig(in component.Input) (*v1alpha1.ProxmoxConfig, error) {
	c := in.Provider.Spec.Proxmox
	switch {
	case c == nil:
		return nil, missing(in, "proxmox")
	case c.Endpoint == "":
		return nil, missing(in, "proxmox.endpoint")
	case len(c.Nodes) == 0:
		return nil, missing(in, "proxmox.nodes")
	case c.Storage == "":
		return nil, missing(in, "proxmox.storage")
	}
	return c, nil
}

func proxmoxCluster(in component.Input) (map[string]any, error) {
	c, err := proxmoxConfig(in)
	if err != nil {
		return nil, err
	}
	name, namespace, err := credentials(in)
	if err != nil {
		return nil, err
	}
	net := in.Provider.Spec.Network
	nodes := component.Allocation(in, v1alpha1.IPAllocationNodes)
	if nodes == nil {
		return nil, fmt.Errorf("ProviderConfig %s: proxmox machines take static addresses: spec.network.mode must be ipam, and TenantCluster %s/%s has no allocated nodes IPAllocation yet",
			pcName(in), in.Cluster.Namespace, in.Cluster.Name)
	}
	if net.Subnet == "" {
		return nil, missing(in, "network.subnet")
	}
	if len(net.DNSServers) == 0 {
		return nil, missing(in, "network.dnsServers")
	}
	subnet, err := netip.ParsePrefix(net.Subnet)
	if err != nil {
		return nil, fmt.Errorf("ProviderConfig %s: spec.network.subnet %q: %w", pcName(in), net.Subnet, err)
	}
	start, err := netip.ParseAddr(nodes.Status.StartAddress)
	if err != nil {
		return nil, fmt.Errorf("IPAllocation %s/%s: start address %q: %w", nodes.Namespace, nodes.Name, nodes.Status.StartAddress, err)
	}
	pool := map[string]any{
		"addresses": toAny(component.AddressRanges(in, v1alpha1.IPAllocationNodes)),
		"prefix":    int64(subnet.Bits()),
	}
	if net.Gateway != "" {
		pool["gateway"] = net.Gateway
	}
	ipConfig := "ipv4Config"
	if start.Is6() {
		ipConfig = "ipv6Config"
	}
	return map[string]any{
		"allowedNodes":   toAny(c.Nodes),
		"dnsServers":     toAny(net.DNSServers),
		ipConfig:         pool,
		"credentialsRef": map[string]any{"name": name, "namespace": namespace},
	}, nil
}

func proxmoxMachine(in component.Input, mt v1alpha1.MachineTemplate) (map[string]any, error) {
	c, err := proxmoxConfig(in)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"sourceNode": c.Nodes[0],
		"full":       true,
		"storage":    c.Storage,
		"numSockets": int64(1),
		"numCores":   cpus(mt),
		// CAPMOX wants a multiple of 8 MiB.
		"memoryMiB": ceilDiv(mebibytes(mt.Memory), 8) * 8,
		"disks":     map[string]any{"bootVolume": map[string]any{"disk": proxmoxBootDisk, "sizeGb": gibibytes(mt.DiskSize)}},
	}
	// The VM template: the pool's os.imageRef (a VM id, or else a tag to select templates by),
	// else the ProviderConfig's templateID.
	switch id, err := strconv.ParseInt(mt.OS.ImageRef, 10, 32); {
	case mt.OS.ImageRef != "" && err == nil:
		spec["templateID"] = id
	case mt.OS.ImageRef != "":
		spec["templateSelector"] = map[string]any{"matchTags": []any{mt.OS.ImageRef}}
	case c.TemplateID != 0:
		spec["templateID"] = int64(c.TemplateID)
	default:
		return nil, missing(in, "proxmox.templateID (or the pool's os.imageRef)")
	}
	if r := c.VMIDRange; r != nil {
		spec["vmIDRange"] = map[string]any{"start": int64(r.Start), "end": int64(r.End)}
	}
	// CAPMOX puts the data on a NoCloud ISO (an Ignition one when data.format is ignition) and by
	// default waits, through the QEMU guest agent, for cloud-init to report done. Talos runs
	// neither; Flatcar's Ignition and Kairos' agent are not cloud-init.
	switch mt.OS.Type {
	case v1alpha1.OSTalos:
		spec["checks"] = map[string]any{"skipCloudInitStatus": true, "skipQemuGuestAgent": true}
	case v1alpha1.OSFlatcar, v1alpha1.OSKairos:
		spec["checks"] = map[string]any{"skipCloudInitStatus": true}
	}
	return spec, nil
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
