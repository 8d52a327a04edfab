package stewardcontrolplane

import (
	"cmp"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

// desiredTCP is the TenantControlPlane capi-steward makes of a StewardControlPlane and its
// Cluster: the Cluster's network (service and pod CIDRs, domain, API port), the version, and the
// StewardControlPlane's fields that have a place in the TenantControlPlane. The fields it reads
// come through the mirrors; the subtrees it hands on as they are (kubelet, admission
// controllers, extra arguments, addons) are copied by path, as capi-steward copies them.
func desiredTCP(scp, cluster *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	cl, err := external.FromUnstructured[clusterv1.Cluster](cluster)
	if err != nil {
		return nil, err
	}
	typed, err := external.FromUnstructured[steward.StewardControlPlane](scp)
	if err != nil {
		return nil, err
	}
	if typed.Spec.Version == "" {
		return nil, fmt.Errorf("spec.version is empty")
	}
	spec := map[string]any{}
	tcpComponents(spec, scp, typed.Spec)
	if err := tcpNetworkProfile(spec, cl.Spec.ClusterNetwork, typed.Spec); err != nil {
		return nil, err
	}
	tcpAddons(spec, scp)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": external.TenantControlPlaneGVK.GroupVersion().String(), "kind": external.TenantControlPlaneGVK.Kind,
		"metadata": tcpMetadata(scp), "spec": spec,
	}}, nil
}

// setIn sets v at path in m, making the maps on the way.
func setIn(m map[string]any, v any, path ...string) {
	_ = unstructured.SetNestedField(m, v, path...)
}

// scpField is a deep copy of the StewardControlPlane's field at path.
func scpField(scp *unstructured.Unstructured, path ...string) (any, bool) {
	v, ok, _ := unstructured.NestedFieldCopy(scp.Object, path...)
	return v, ok
}

// tcpComponents sets the version, the kubelet, admission controllers, the Service type,
// replicas, the components' extra arguments and the datastore.
func tcpComponents(spec map[string]any, scp *unstructured.Unstructured, in steward.StewardControlPlaneSpec) {
	setIn(spec, normalizeVersion(in.Version), "kubernetes", "version")
	kubelet, ok := scpField(scp, "spec", "kubelet")
	if !ok {
		kubelet = map[string]any{"cgroupfs": "systemd"}
	}
	setIn(spec, kubelet, "kubernetes", "kubelet")
	if v, ok := scpField(scp, "spec", "admissionControllers"); ok {
		setIn(spec, v, "kubernetes", "admissionControllers")
	}
	setIn(spec, cmp.Or(ptr.Deref(in.Network, steward.NetworkComponent{}).ServiceType, "LoadBalancer"), "controlPlane", "service", "serviceType")
	if in.Replicas != nil {
		setIn(spec, int64(*in.Replicas), "controlPlane", "deployment", "replicas")
	}
	for from, to := range map[string]string{"apiServer": "apiServer", "controllerManager": "controllerManager", "scheduler": "scheduler", "kine": "kine"} {
		if v, ok := scpField(scp, "spec", from, "extraArgs"); ok {
			setIn(spec, v, "controlPlane", "deployment", "extraArgs", to)
		}
	}
	for to, v := range map[string]string{
		"dataStore": in.DataStoreName, "dataStoreSchema": in.DataStoreSchema, "dataStoreUsername": in.DataStoreUsername,
	} {
		if v != "" {
			setIn(spec, v, to)
		}
	}
}

// tcpNetworkProfile sets the Cluster's network and the StewardControlPlane's address, DNS
// service IPs and certificate SANs. networkProfile is always there, if empty: the
// TenantControlPlane's update-time CEL rules read self.networkProfile.* and fail on an object
// without it (and the server fills in its defaults: port, CIDRs, domain).
func tcpNetworkProfile(spec map[string]any, network clusterv1.ClusterNetwork, in steward.StewardControlPlaneSpec) error {
	spec["networkProfile"] = map[string]any{}
	scpNetwork := ptr.Deref(in.Network, steward.NetworkComponent{})
	if network.APIServerPort != 0 {
		setIn(spec, int64(network.APIServerPort), "networkProfile", "port")
	}
	if blocks := network.Services.CIDRBlocks; len(blocks) > 0 {
		setIn(spec, blocks[0], "networkProfile", "serviceCidr")
	}
	if blocks := network.Pods.CIDRBlocks; len(blocks) > 0 {
		setIn(spec, blocks[0], "networkProfile", "podCidr")
	}
	if network.ServiceDomain != "" {
		setIn(spec, network.ServiceDomain, "networkProfile", "clusterDomain")
	}
	if scpNetwork.ServiceAddress != "" {
		setIn(spec, scpNetwork.ServiceAddress, "networkProfile", "address")
	}
	dnsIPs := scpNetwork.DNSServiceIPs
	if in.Addons != nil && in.Addons.CoreDNS != nil && in.Addons.CoreDNS.DNSServiceIPs != nil {
		dnsIPs = in.Addons.CoreDNS.DNSServiceIPs
	}
	if len(dnsIPs) > 0 {
		setIn(spec, toAny(dnsIPs), "networkProfile", "dnsServiceIPs")
	}
	sans, err := certSANs(scpNetwork)
	if err != nil {
		return err
	}
	if len(sans) > 0 {
		setIn(spec, toAny(sans), "networkProfile", "certSANs")
	}
	return nil
}

// certSANs are the asked SANs (hosts, never with a port) and the Ingress's or Gateway's
// hostname, which reaches the API server too and so must be in its certificate.
func certSANs(scpNetwork steward.NetworkComponent) ([]string, error) {
	sans := scpNetwork.CertSANs
	for _, san := range sans {
		if _, _, err := net.SplitHostPort(san); err == nil {
			return nil, fmt.Errorf("spec.network.certSANs: %q: a certificate SAN is a host, without a port", san)
		}
	}
	var hostnames []string
	if scpNetwork.Ingress != nil {
		hostnames = append(hostnames, scpNetwork.Ingress.Hostname)
	}
	if scpNetwork.Gateway != nil {
		hostnames = append(hostnames, scpNetwork.Gateway.Hostname)
	}
	for _, h := range hostnames {
		if h != "" {
			if host, _, err := net.SplitHostPort(h); err == nil {
				h = host
			}
			sans = append(sans, h)
		}
	}
	return sans, nil
}

// tcpAddons copies the addons: they have the same schema in both kinds, but for CoreDNS'
// service IPs (in networkProfile).
func tcpAddons(spec map[string]any, scp *unstructured.Unstructured) {
	if addons, ok := scpField(scp, "spec", "addons"); ok {
		if m, ok := addons.(map[string]any); ok {
			if dns, ok := m["coreDNS"].(map[string]any); ok {
				delete(dns, "dnsServiceIPs")
			}
			if len(m) > 0 {
				setIn(spec, m, "addons")
			}
		}
	}
}

// tcpMetadata names the TenantControlPlane as its StewardControlPlane, owned by it, with its
// labels and annotations (but kubectl's and the local provider's own), and the capabilities
// annotation by which the workers tell this stand-in from Steward.
func tcpMetadata(scp *unstructured.Unstructured) map[string]any {
	meta := map[string]any{
		"name": scp.GetName(), "namespace": scp.GetNamespace(),
		"ownerReferences": []any{map[string]any{
			"apiVersion": external.StewardControlPlaneGVK.GroupVersion().String(), "kind": external.StewardControlPlaneGVK.Kind,
			"name": scp.GetName(), "uid": string(scp.GetUID()), "controller": true, "blockOwnerDeletion": true,
		}},
	}
	if labels := scp.GetLabels(); len(labels) > 0 {
		meta["labels"] = toAnyMap(labels)
	}
	annotations := map[string]any{}
	for k, v := range scp.GetAnnotations() {
		if k != corev1.LastAppliedConfigAnnotation && !strings.HasPrefix(k, "localprovider.butlerlabs.dev/") {
			annotations[k] = v
		}
	}
	caps := make([]string, 0, len(external.LocalProviderCapabilities))
	for _, c := range external.LocalProviderCapabilities {
		caps = append(caps, string(c))
	}
	annotations[external.LocalProviderCapabilitiesAnnotation] = strings.Join(caps, ",")
	meta["annotations"] = annotations
	return meta
}

// normalizeVersion gives a version its "v" prefix, as capi-steward tolerates versions without.
func normalizeVersion(v string) string {
	if v == "" || strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
