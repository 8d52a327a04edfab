package controlplane

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

// unavailableState is the status of a TenantControlPlane that does not serve its version yet
// (its binaries being built or unbuildable, or its processes starting). An upgrade leaves the
// old version's processes serving meanwhile, so the version they run and the admin kubeconfig
// stay in the status: dropping them would turn an upgrade that waits for a build into a control
// plane being provisioned again.
func unavailableState(tcp *unstructured.Unstructured, endpoint, versionStatus, reason, message string) tcpState {
	return tcpState{endpoint: endpoint, versionStatus: versionStatus, runningVersion: tcpVersion(tcp),
		adminSecret: tcpAdminSecret(tcp), replicas: 1, reason: reason, message: message}
}

// pendingStatus is the status of a TenantControlPlane that is not (yet) at version: Provisioning
// before it ever ran, Upgrading from an older version.
func pendingStatus(tcp *unstructured.Unstructured, version string) string {
	if v := tcpVersion(tcp); v != "" && v != version {
		return statusUpgrading
	}
	if tcpVersion(tcp) == "" {
		return statusProvisioning
	}
	return statusNotReady
}

// publishedStatus is the TenantControlPlane's status as this provider last wrote it, read through
// the contract's mirror; one the mirror cannot read (a field of another type) is as none, which
// this provider then writes anew.
func publishedStatus(tcp *unstructured.Unstructured) steward.TenantControlPlaneStatus {
	typed, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return steward.TenantControlPlaneStatus{}
	}
	return typed.Status
}

func tcpVersion(tcp *unstructured.Unstructured) string {
	return publishedStatus(tcp).KubernetesResources.Version.Version
}

func tcpAdminSecret(tcp *unstructured.Unstructured) string {
	return publishedStatus(tcp).Kubeconfig.Admin.SecretName
}

// publishedStorage is the datastore, key prefix (schema) and user the TenantControlPlane's status
// names; "" for what it names not.
func publishedStorage(tcp *unstructured.Unstructured) (name, schema, user string) {
	st := publishedStatus(tcp).Storage
	if st == nil {
		return "", "", ""
	}
	if st.Setup != nil {
		schema, user = st.Setup.Schema, st.Setup.User
	}
	return st.DataStoreName, schema, user
}

// publishedEndpoint is the endpoint in the TenantControlPlane's status, "" before it was first
// published.
func publishedEndpoint(tcp *unstructured.Unstructured) string {
	return publishedStatus(tcp).ControlPlaneEndpoint
}

// tcpState is what a TenantControlPlane's status is to say.
type tcpState struct {
	endpoint       string
	versionStatus  string
	runningVersion string
	adminSecret    string
	// replicas is how many control planes run (0 stopped, else 1: one per tenant here).
	replicas int64
	// reason and message say why it is not Ready (annotations and an Event).
	reason, message string
	// store is the tenant's record: where its data is, once placed (set by setTCPStatus).
	store tenantRecord
}

// setTCPStatus applies the status (server-side, this provider's fields only) and the reason
// annotations, each only when it differs from what the TenantControlPlane says. A status with
// a reason goes after its annotations, so a reader finds why it is not Ready with it; one
// without goes first: readers wait on the status (a Ready control plane), not on the
// annotations' removal.
func (c *Controller) setTCPStatus(ctx context.Context, tcp *unstructured.Unstructured, s tcpState) error {
	if s.reason == "" {
		if err := c.applyTCPStatus(ctx, tcp, s); err != nil {
			return err
		}
		return c.annotateTCP(ctx, tcp, s)
	}
	if err := c.annotateTCP(ctx, tcp, s); err != nil {
		return err
	}
	return c.applyTCPStatus(ctx, tcp, s)
}

// annotateTCP applies the reason annotations (and makes an Event of a reason) when they differ.
func (c *Controller) annotateTCP(ctx context.Context, tcp *unstructured.Unstructured, s tcpState) error {
	ann := tcp.GetAnnotations()
	if ann[external.LocalProviderReasonAnnotation] == s.reason && ann[external.LocalProviderMessageAnnotation] == s.message {
		return nil
	}
	// Its own field manager: the StewardControlPlane's apply of the spec must not drop them.
	meta := map[string]any{"name": tcp.GetName(), "namespace": tcp.GetNamespace()}
	if s.reason != "" {
		meta["annotations"] = map[string]any{external.LocalProviderReasonAnnotation: s.reason, external.LocalProviderMessageAnnotation: s.message}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenantControlPlaneAPIVersion, "kind": tenantControlPlaneKind, "metadata": meta}}
	client := c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(tcp.GetNamespace())
	if _, err := external.LocalProviderReason.Apply(ctx, client, u); err != nil {
		return fmt.Errorf("annotating TenantControlPlane: %w", err)
	}
	if s.reason != "" {
		eventType := corev1.EventTypeNormal
		if s.versionStatus == statusNotReady {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Event(tcp, eventType, s.reason, s.message)
	}
	return nil
}

// applyTCPStatus applies the status when it differs.
func (c *Controller) applyTCPStatus(ctx context.Context, tcp *unstructured.Unstructured, s tcpState) error {
	c.mu.Lock()
	if pl := c.planes[string(tcp.GetUID())]; pl != nil {
		pl.mu.Lock()
		s.store = pl.rec
		pl.mu.Unlock()
	}
	c.mu.Unlock()
	status := tcpStatus(tcp, s)
	if current, ok := tcp.Object["status"].(map[string]any); ok && subsetEqual(status, current) {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenantControlPlaneAPIVersion, "kind": tenantControlPlaneKind,
		"metadata": map[string]any{"name": tcp.GetName(), "namespace": tcp.GetNamespace()},
		"status":   status,
	}}
	client := c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(tcp.GetNamespace())
	if _, err := external.LocalProvider.ApplyStatus(ctx, client, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("TenantControlPlane status: %w", err)
	}
	return nil
}

// tcpStatus is the status Steward writes, as far as it means something here: one "replica"
// (the three processes) or none when stopped, the endpoint, the version, the Secrets, and the
// shared etcd schema.
func tcpStatus(tcp *unstructured.Unstructured, s tcpState) map[string]any {
	ready := int64(0)
	if s.versionStatus == statusReady {
		ready = 1
	}
	version := map[string]any{"status": s.versionStatus}
	if s.runningVersion != "" {
		version["version"] = s.runningVersion
	}
	status := map[string]any{
		"kubernetesResources": map[string]any{
			"version": version,
			"deployment": map[string]any{
				"name": tcp.GetName(), "namespace": tcp.GetNamespace(),
				"selector": clusterv1.ClusterNameLabel + "=" + clusterNameOf(tcp),
				"replicas": s.replicas, "readyReplicas": ready, "availableReplicas": ready,
				"updatedReplicas": ready, "unavailableReplicas": s.replicas - ready,
			},
		},
		"certificates": map[string]any{"ca": map[string]any{"secretName": caSecretName(tcp.GetName())}},
	}
	if s.store.DataStore != "" {
		status["storage"] = map[string]any{
			"driver": "etcd", "dataStoreName": s.store.DataStore,
			"setup": map[string]any{"schema": strings.Trim(s.store.DataStorePrefix, "/"), "user": s.store.DataStoreUser},
		}
	}
	if s.endpoint != "" {
		status["controlPlaneEndpoint"] = s.endpoint
	}
	if s.adminSecret != "" {
		status["kubeconfig"] = map[string]any{"admin": map[string]any{"secretName": s.adminSecret}}
	}
	return status
}

// subsetEqual says whether every field of want has the same value in have.
func subsetEqual(want, have map[string]any) bool {
	for k, w := range want {
		h, ok := have[k]
		if !ok {
			return false
		}
		wm, wIsMap := w.(map[string]any)
		hm, hIsMap := h.(map[string]any)
		switch {
		case wIsMap && hIsMap:
			if !subsetEqual(wm, hm) {
				return false
			}
		case wIsMap != hIsMap:
			return false
		default:
			if fmt.Sprint(w) != fmt.Sprint(h) {
				return false
			}
		}
	}
	return true
}
