package stewardcontrolplane

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
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
	if external.MadeForNamespaces(scp, c.opts.ExternalNamespaces) {
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
	tcp, err := external.LocalProvider.Apply(ctx, c.deps.Dynamic.Resource(external.TenantControlPlaneGVR).Namespace(scp.GetNamespace()), desired)
	if err != nil {
		status.set(conditionTCPCreated, false, "ApplyFailed", err.Error())
		_ = c.setSCPStatus(ctx, scp, status)
		return fmt.Errorf("applying the TenantControlPlane: %w", err)
	}
	status.set(conditionTCPCreated, true, "Created", "")
	status.tcp = tcp

	if endpoint := publishedStatus(tcp).ControlPlaneEndpoint; endpoint != "" {
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
	if versionStatus == steward.VersionStatusReady || versionStatus == steward.VersionStatusUpgrading {
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
			message = fmt.Sprintf("the TenantControlPlane is %s", cmp.Or(versionStatus, "not reconciled yet"))
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

// ownerCluster is the name of the Cluster that owns obj, or "".
func ownerCluster(obj *unstructured.Unstructured) string {
	for _, ref := range obj.GetOwnerReferences() {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == external.CAPIGroup && ref.Kind == "Cluster" {
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
	if ref.Kind != external.StewardControlPlaneGVK.Kind || ref.Name == "" {
		return nil
	}
	return []string{cl.Namespace + "/" + ref.Name}
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
	adminName := publishedStatus(tcp).Kubeconfig.Admin.SecretName
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

// Names of the Secrets: Cluster API's of a cluster, Steward's of a TenantControlPlane's CA.
func clusterKubeconfigName(c string) string { return c + "-kubeconfig" }
func clusterCASecretName(c string) string   { return c + "-ca" }
func caSecretName(tcp string) string        { return tcp + "-ca" }

// ownerReferenceAC makes obj the controller of a Secret it owns.
func ownerReferenceAC(obj *unstructured.Unstructured) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion(obj.GetAPIVersion()).WithKind(obj.GetKind()).
		WithName(obj.GetName()).WithUID(obj.GetUID()).WithController(true).WithBlockOwnerDeletion(true)
}
