package controlplane

import (
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

// TenantControlPlanes, the kind this package runs.
var tenantControlPlanes = schema.GroupVersionResource{Group: "steward.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantcontrolplanes"}

const (
	tenantControlPlaneAPIVersion  = "steward.butlerlabs.dev/v1alpha1"
	tenantControlPlaneKind        = "TenantControlPlane"
	stewardControlPlaneAPIVersion = "controlplane.cluster.x-k8s.io/v1alpha1"
	stewardControlPlaneKind       = "StewardControlPlane"

	// Finalizer holds a TenantControlPlane until its processes are stopped and its etcd prefix
	// is deleted.
	Finalizer = "localprovider.butlerlabs.dev/processes"
)

// Version statuses of a TenantControlPlane (status.kubernetesResources.version.status).
const (
	statusProvisioning = "Provisioning"
	statusUpgrading    = "Upgrading"
	statusReady        = steward.VersionStatusReady
	statusNotReady     = "NotReady"
	// statusSleeping is Kamaji's status of a control plane scaled to zero replicas.
	statusSleeping = steward.VersionStatusSleeping
)

// Names of the Secrets of a tenant control plane.
func caSecretName(tcp string) string              { return tcp + "-ca" }
func adminKubeconfigName(tcp string) string       { return tcp + "-admin-kubeconfig" }
func endpointString(host string, port int) string { return net.JoinHostPort(host, fmt.Sprint(port)) }

// tenantSpec is what a TenantControlPlane asks of its processes.
type tenantSpec struct {
	Namespace, Name, UID string
	Version              string
	ServiceCIDR          string
	PodCIDR              string
	ClusterDomain        string
	DNSServiceIPs        []string
	CertSANs             []string
	AdmissionPlugins     []string
	CgroupDriver         string
	// DataStore is the DataStore asked for (spec.dataStore), "" for placement; DataStoreSchema
	// the key prefix without slashes (spec.dataStoreSchema, else the UID) and DataStoreUser the
	// etcd user (spec.dataStoreUsername, else <namespace>_<name>, as Steward defaults them).
	DataStore, DataStoreSchema, DataStoreUser string
	// ExtraArgs per component ("--flag=value"), as Steward's spec.controlPlane.deployment.extraArgs.
	APIServerArgs, ControllerManagerArgs, SchedulerArgs []string
	// Replicas is spec.controlPlane.deployment.replicas (1 when unset): 0 stops the control plane
	// (data and endpoint kept), more than one cannot run here.
	Replicas int64
}

// Defaults of Steward's TenantControlPlane networkProfile.
const (
	defaultServiceCIDR   = "10.96.0.0/16"
	defaultPodCIDR       = "10.244.0.0/16"
	defaultClusterDomain = "cluster.local"
)

// parseTenantSpec reads the fields this provider acts on from a TenantControlPlane.
func parseTenantSpec(tcp *unstructured.Unstructured) (tenantSpec, error) {
	s := tenantSpec{Namespace: tcp.GetNamespace(), Name: tcp.GetName(), UID: string(tcp.GetUID())}
	typed, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return s, err
	}
	spec := typed.Spec
	s.Version = normalizeVersion(spec.Kubernetes.Version)
	if s.Version == "" {
		return s, fmt.Errorf("spec.kubernetes.version is empty")
	}
	network := spec.NetworkProfile
	s.ServiceCIDR = orDefault(network.ServiceCIDR, defaultServiceCIDR)
	s.PodCIDR = orDefault(network.PodCIDR, defaultPodCIDR)
	s.ClusterDomain = orDefault(network.ClusterDomain, defaultClusterDomain)
	s.DNSServiceIPs = network.DNSServiceIPs
	s.CertSANs = network.CertSANs
	if network.Address != "" {
		s.CertSANs = append(s.CertSANs, network.Address)
	}
	s.DataStore = spec.DataStore
	s.DataStoreSchema = orDefault(strings.Trim(spec.DataStoreSchema, "/"), s.UID)
	s.DataStoreUser = orDefault(spec.DataStoreUsername, s.Namespace+"_"+s.Name)
	s.AdmissionPlugins = spec.Kubernetes.AdmissionControllers
	s.CgroupDriver = orDefault(spec.Kubernetes.Kubelet.Cgroupfs, "systemd")
	deployment := spec.ControlPlane.Deployment
	s.APIServerArgs = deployment.ExtraArgs.APIServer
	s.ControllerManagerArgs = deployment.ExtraArgs.ControllerManager
	s.SchedulerArgs = deployment.ExtraArgs.Scheduler
	s.Replicas = 1
	if r := deployment.Replicas; r != nil {
		if *r < 0 {
			return s, fmt.Errorf("spec.controlPlane.deployment.replicas is %d", *r)
		}
		s.Replicas = int64(*r)
	}
	if _, err := firstServiceIP(s.ServiceCIDR); err != nil {
		return s, fmt.Errorf("spec.networkProfile.serviceCidr: %w", err)
	}
	if _, _, err := net.ParseCIDR(s.PodCIDR); err != nil {
		return s, fmt.Errorf("spec.networkProfile.podCidr: %w", err)
	}
	return s, nil
}

// normalizeVersion gives a version its "v" prefix, as capi-steward tolerates versions without.
func normalizeVersion(v string) string {
	if v == "" || strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// firstServiceIP is the kubernetes Service's address: the first address of the service CIDR.
func firstServiceIP(cidr string) (net.IP, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ip := make(net.IP, len(n.IP))
	copy(ip, n.IP)
	ip[len(ip)-1]++
	if !n.Contains(ip) {
		return nil, fmt.Errorf("%s has no first address", cidr)
	}
	return ip, nil
}

// nthServiceIP is the n-th address of the service CIDR (kubeadm's cluster DNS is the 10th).
func nthServiceIP(cidr string, n int) (net.IP, error) {
	_, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ip := make(net.IP, len(ipnet.IP))
	copy(ip, ipnet.IP)
	for i := len(ip) - 1; n > 0 && i >= 0; i-- {
		sum := int(ip[i]) + n
		ip[i] = byte(sum % 256)
		n = sum / 256
	}
	if !ipnet.Contains(ip) {
		return nil, fmt.Errorf("%s is too small", cidr)
	}
	return ip, nil
}
