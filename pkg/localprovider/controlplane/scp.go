package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

// Condition types of a StewardControlPlane, as capi-steward reports them.
const (
	conditionTCPCreated        = "TenantControlPlaneCreated"
	conditionInfraPatched      = "InfrastructureClusterPatched"
	conditionKubeconfigCreated = "KubeconfigSecretCreated"
	conditionReady             = "Ready"
	// conditionAvailable is what Cluster API v1beta2 mirrors into the Cluster's
	// ControlPlaneAvailable condition.
	conditionAvailable = "Available"
)

// reconcileSCP brings one StewardControlPlane's TenantControlPlane, Secrets, infrastructure
// endpoint and status in line, as capi-steward does.
func (c *Controller) reconcileSCP(ctx context.Context, key string) error {
	obj, exists, err := c.scps.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	scp := obj.(*unstructured.Unstructured)
	if scp.GetDeletionTimestamp() != nil {
		// The garbage collector deletes the TenantControlPlane it owns.
		return nil
	}
	logger := klog.FromContext(ctx)
	if c.opts.external(scp) {
		logger.V(2).Info("A real Steward's namespace; leaving its control plane alone")
		return nil
	}
	// Cluster API's Cluster controller sets the ownerReference; until then, nothing is known of
	// the cluster it is for.
	clusterName := ownerCluster(scp)
	if clusterName == "" {
		logger.V(2).Info("Waiting for the Cluster ownerReference")
		return nil
	}
	cobj, exists, err := c.clusters.GetIndexer().GetByKey(scp.GetNamespace() + "/" + clusterName)
	if err != nil || !exists {
		return err
	}
	cluster := cobj.(*unstructured.Unstructured)
	if !onLocalInfrastructure(cluster) {
		// Another provider's cluster: Steward's in a real management cluster, nobody's here.
		logger.V(2).Info("Not a local cluster; leaving its control plane alone", "cluster", clusterName)
		return nil
	}

	status := scpStatus{conditions: scpConditions(scp), cluster: clusterName}
	desired, err := desiredTCP(scp, cluster)
	if err != nil {
		status.set(conditionTCPCreated, false, "InvalidSpec", err.Error())
		status.failure("InvalidSpec", err.Error())
		return c.setSCPStatus(ctx, scp, status)
	}
	tcp, err := external.LocalProvider.Apply(ctx, c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(scp.GetNamespace()), desired)
	if err != nil {
		status.set(conditionTCPCreated, false, "ApplyFailed", err.Error())
		_ = c.setSCPStatus(ctx, scp, status)
		return fmt.Errorf("applying the TenantControlPlane: %w", err)
	}
	status.set(conditionTCPCreated, true, "Created", "")
	status.tcp = tcp

	if endpoint := publishedEndpoint(tcp); endpoint != "" {
		hasInfra, err := c.patchInfrastructureEndpoint(ctx, cluster, endpoint)
		switch {
		case err != nil:
			status.set(conditionInfraPatched, false, "PatchFailed", err.Error())
			_ = c.setSCPStatus(ctx, scp, status)
			return err
		case hasInfra:
			status.set(conditionInfraPatched, true, "Patched", "")
		default:
			status.set(conditionInfraPatched, true, "NoInfrastructureRef", "the Cluster has no infrastructure cluster to patch")
		}
	} else {
		status.set(conditionInfraPatched, false, "WaitingForEndpoint", "the TenantControlPlane has no endpoint yet")
	}

	versionStatus := publishedStatus(tcp).KubernetesResources.Version.Status
	reason, message := tcp.GetAnnotations()[external.LocalProviderReasonAnnotation], tcp.GetAnnotations()[external.LocalProviderMessageAnnotation]
	if versionStatus == statusReady || versionStatus == statusUpgrading {
		if err := c.copyClusterSecrets(ctx, scp, tcp, clusterName); err != nil {
			status.set(conditionKubeconfigCreated, false, "CopyFailed", err.Error())
			_ = c.setSCPStatus(ctx, scp, status)
			return err
		}
		status.set(conditionKubeconfigCreated, true, "Created", "")
		status.set(conditionReady, true, "Ready", "")
		status.set(conditionAvailable, true, "Available", "")
	} else {
		if reason == "" {
			reason = "WaitingForTenantControlPlane"
		}
		if message == "" {
			message = fmt.Sprintf("the TenantControlPlane is %s", orDefault(versionStatus, "not reconciled yet"))
		}
		status.set(conditionReady, false, reason, message)
		status.set(conditionAvailable, false, reason, message)
		if meta.FindStatusCondition(status.conditions, conditionKubeconfigCreated) == nil {
			status.set(conditionKubeconfigCreated, false, "WaitingForTenantControlPlane", "")
		}
	}
	if reason == "KubernetesVersionUnavailable" || reason == "InvalidSpec" {
		status.failure(reason, message)
	}
	return c.setSCPStatus(ctx, scp, status)
}

// onLocalInfrastructure says whether a Cluster's machines are local ones (a LocalCluster): the
// only clusters whose control planes this stand-in runs.
func onLocalInfrastructure(cluster *unstructured.Unstructured) bool {
	cl, err := external.FromUnstructured[clusterv1.Cluster](cluster)
	if err != nil {
		return false
	}
	ref := cl.Spec.InfrastructureRef
	return ref.APIGroup == external.LocalClusterGVK.Group && ref.Kind == external.LocalClusterGVK.Kind
}

// ownedBySCP says whether a StewardControlPlane controls obj: the TenantControlPlanes this
// stand-in made, as opposed to those of another provider or made by hand.
func ownedBySCP(obj *unstructured.Unstructured) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.Kind == stewardControlPlaneKind && ref.APIVersion == stewardControlPlaneAPIVersion
}

// ownerCluster is the name of the Cluster that owns obj, or "".
func ownerCluster(obj *unstructured.Unstructured) string {
	for _, ref := range obj.GetOwnerReferences() {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == clusterGroup && ref.Kind == "Cluster" {
			return ref.Name
		}
	}
	return ""
}

// controlPlaneOfCluster maps a Cluster to the StewardControlPlane it references.
func controlPlaneOfCluster(obj any) []string {
	cl, err := external.FromObject[clusterv1.Cluster](obj)
	if err != nil {
		return nil
	}
	ref := cl.Spec.ControlPlaneRef
	if ref.Kind != stewardControlPlaneKind || ref.Name == "" {
		return nil
	}
	return []string{cl.Namespace + "/" + ref.Name}
}

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
		"apiVersion": tenantControlPlaneAPIVersion, "kind": tenantControlPlaneKind,
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
	setIn(spec, orDefault(ptr.Deref(in.Network, steward.NetworkComponent{}).ServiceType, "LoadBalancer"), "controlPlane", "service", "serviceType")
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
			"apiVersion": stewardControlPlaneAPIVersion, "kind": stewardControlPlaneKind,
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

// patchInfrastructureEndpoint sets the infrastructure cluster's spec.controlPlaneEndpoint to
// endpoint (Cluster API reads the Cluster's endpoint from there), when it differs. It says
// whether the Cluster has an infrastructure cluster at all.
func (c *Controller) patchInfrastructureEndpoint(ctx context.Context, cluster *unstructured.Unstructured, endpoint string) (bool, error) {
	cl, err := external.FromUnstructured[clusterv1.Cluster](cluster)
	if err != nil {
		return false, err
	}
	ref := cl.Spec.InfrastructureRef
	if ref.Kind == "" || ref.Name == "" {
		// A Cluster without infrastructure (a control plane alone) has nothing to patch.
		return false, nil
	}
	return true, c.patchInfrastructureRef(ctx, cluster.GetNamespace(), ref, endpoint)
}

func (c *Controller) patchInfrastructureRef(ctx context.Context, namespace string, ref clusterv1.ContractVersionedObjectReference, endpoint string) error {
	host, portStr, err := net.SplitHostPort(endpoint)
	if err != nil {
		return fmt.Errorf("TenantControlPlane endpoint %q: %w", endpoint, err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return fmt.Errorf("TenantControlPlane endpoint %q: %w", endpoint, err)
	}
	gk := schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind}
	mapping, err := c.mapper.RESTMapping(gk)
	if err != nil {
		// A kind installed after the mapper cached discovery: look again next time.
		if m, ok := c.mapper.(*restmapper.DeferredDiscoveryRESTMapper); ok {
			m.Reset()
		}
		return fmt.Errorf("infrastructure kind %s: %w", gk, err)
	}
	client := c.deps.Dynamic.Resource(mapping.Resource).Namespace(namespace)
	u, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%s %s: %w", gk.Kind, ref.Name, err)
	}
	infra, err := external.FromUnstructured[external.InfrastructureCluster](u)
	if err != nil {
		return err
	}
	if cur := infra.Spec.ControlPlaneEndpoint; cur.Host == host && int64(cur.Port) == port {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": host, "port": port}}})
	if _, err := client.Patch(ctx, ref.Name, types.MergePatchType, patch, external.LocalProvider.PatchOptions()); err != nil {
		return fmt.Errorf("patching %s %s: %w", gk.Kind, ref.Name, err)
	}
	return nil
}

// copyClusterSecrets writes <cluster>-kubeconfig from the tenant's admin.conf and, when its name
// differs from the TenantControlPlane's CA Secret, <cluster>-ca.
func (c *Controller) copyClusterSecrets(ctx context.Context, scp, tcp *unstructured.Unstructured, cluster string) error {
	secrets := c.deps.Kube.CoreV1().Secrets(scp.GetNamespace())
	adminName := tcpAdminSecret(tcp)
	if adminName == "" {
		return fmt.Errorf("the TenantControlPlane names no admin kubeconfig Secret yet")
	}
	admin, err := secrets.Get(ctx, adminName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("Secret %s: %w", adminName, err)
	}
	if len(admin.Data["admin.conf"]) == 0 {
		return fmt.Errorf("Secret %s has no admin.conf", adminName)
	}
	// Cluster API and kwok are management-side clients: kube-apiserver's own address, which
	// neither wakes a sleeping tenant nor keeps it awake.
	value := admin.Data["admin.svc"]
	if len(value) == 0 {
		value = admin.Data["admin.conf"]
	}
	apply := external.LocalProvider.ApplyOptions()
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster}
	kubeconfig := corev1ac.Secret(clusterKubeconfigName(cluster), scp.GetNamespace()).
		WithType(clusterv1.ClusterSecretType).WithLabels(labels).
		WithOwnerReferences(ownerReferenceAC(scp)).
		WithData(map[string][]byte{"value": value})
	if _, err := secrets.Apply(ctx, kubeconfig, apply); err != nil {
		return fmt.Errorf("Secret %s: %w", clusterKubeconfigName(cluster), err)
	}
	if clusterCASecretName(cluster) == caSecretName(tcp.GetName()) {
		return nil
	}
	ca, err := secrets.Get(ctx, caSecretName(tcp.GetName()), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("Secret %s: %w", caSecretName(tcp.GetName()), err)
	}
	caCopy := corev1ac.Secret(clusterCASecretName(cluster), scp.GetNamespace()).WithLabels(labels).
		WithOwnerReferences(ownerReferenceAC(scp)).
		WithData(map[string][]byte{"tls.crt": ca.Data["ca.crt"], "tls.key": ca.Data["ca.key"]})
	if _, err := secrets.Apply(ctx, caCopy, apply); err != nil {
		return fmt.Errorf("Secret %s: %w", clusterCASecretName(cluster), err)
	}
	return nil
}

// scpStatus is what a StewardControlPlane's status is to say.
type scpStatus struct {
	conditions     []metav1.Condition
	tcp            *unstructured.Unstructured
	cluster        string
	failureReason  string
	failureMessage string
}

func (s *scpStatus) set(t string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message})
}

func (s *scpStatus) failure(reason, message string) {
	s.failureReason, s.failureMessage = reason, message
}

func scpConditions(scp *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(scp.Object, "status", "conditions")
	var out []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			out = append(out, cond)
		}
	}
	return out
}

// setSCPStatus writes the status with a merge patch, only when it differs. The fields are those
// of Steward's CRD, which implements Cluster API's v1beta1 control-plane contract (its label
// cluster.x-k8s.io/v1beta1: v1alpha1): initialized and ready, which Cluster API v1beta2 reads
// for such a provider in place of status.initialization.controlPlaneInitialized.
func (c *Controller) setSCPStatus(ctx context.Context, scp *unstructured.Unstructured, s scpStatus) error {
	for i := range s.conditions {
		s.conditions[i].ObservedGeneration = scp.GetGeneration()
	}
	versionStatus, version := "", ""
	if s.tcp != nil {
		versionStatus = publishedStatus(s.tcp).KubernetesResources.Version.Status
		version = tcpVersion(s.tcp)
	}
	ready := versionStatus == statusReady || versionStatus == statusUpgrading
	initialized := version != "" || ready
	readyReplicas, updated, replicas := int64(0), int64(0), int64(1)
	if versionStatus == statusReady {
		readyReplicas, updated = 1, 1
	}
	if s.tcp != nil {
		// As the TenantControlPlane reports them: 0 once stopped.
		if d := publishedStatus(s.tcp).KubernetesResources.Deployment; d != nil && d.Replicas != nil {
			replicas = int64(*d.Replicas)
		}
	}
	conditions := make([]any, 0, len(s.conditions))
	for _, cond := range s.conditions {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cond)
		if err != nil {
			return err
		}
		conditions = append(conditions, m)
	}
	status := map[string]any{
		"externalManagedControlPlane": true,
		"initialized":                 initialized,
		"ready":                       ready,
		"version":                     version,
		"replicas":                    replicas,
		"readyReplicas":               readyReplicas,
		"updatedReplicas":             updated,
		"unavailableReplicas":         max(replicas-readyReplicas, 0),
		"selector":                    clusterv1.ClusterNameLabel + "=" + s.cluster,
		"conditions":                  conditions,
		"failureReason":               nilIfEmpty(s.failureReason),
		"failureMessage":              nilIfEmpty(s.failureMessage),
	}
	if current, ok := scp.Object["status"].(map[string]any); ok && scpStatusEqual(status, current) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = c.deps.Dynamic.Resource(stewardControlPlanes).Namespace(scp.GetNamespace()).
		Patch(ctx, scp.GetName(), types.MergePatchType, patch, external.LocalProvider.PatchOptions(), "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// scpStatusEqual compares the status to write with the current one, ignoring the conditions'
// transition times.
func scpStatusEqual(want, have map[string]any) bool {
	for k, w := range want {
		h, present := have[k]
		switch k {
		case "conditions":
			if !conditionsEqual(w.([]any), h) {
				return false
			}
		default:
			if w == nil {
				if present && h != nil {
					return false
				}
				continue
			}
			if !present || fmt.Sprint(w) != fmt.Sprint(h) {
				return false
			}
		}
	}
	return true
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func conditionsEqual(want []any, have any) bool {
	list, _ := have.([]any)
	if len(list) != len(want) {
		return false
	}
	for i := range want {
		w, h := asMap(want[i]), asMap(list[i])
		for _, f := range []string{"type", "status", "reason", "message", "observedGeneration"} {
			if fmt.Sprint(w[f]) != fmt.Sprint(h[f]) {
				return false
			}
		}
	}
	return true
}
