package tenantcluster

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// state is one reconcile's view of a cluster: what the steps read and what they found.
type state struct {
	tc        *v1alpha1.TenantCluster
	namespace string
	// in is what the builders read; its Provider and Config are set by the provider step.
	in component.Input

	// Found by the steps, for the status.
	endpoint         string
	kubeconfigSecret string
	dataStore        string
	version          string
	readyWorkers     int32
	addons           []v1alpha1.ObservedAddon
	allocationRefs   []v1alpha1.LocalObjectReference
	networkChecked   bool
	credentials      []v1alpha1.CredentialExpiry
	// rotated is the provider's answer to a rotation (external.CredentialsRotatedAnnotation);
	// rotation the rotation moved on by it, nil when it stays as stored.
	rotated  string
	rotation *v1alpha1.CredentialsRotation
	// capable is what the hosted control plane's provider can do of what the cluster asks
	// (ConditionProviderCapable), once its TenantControlPlane is read; nil before.
	capable *metav1.Condition
	// offersSnapshots says whether that provider takes TenantClusterSnapshots
	// (external.CapabilitySnapshots); read with capable.
	offersSnapshots bool
	// gitops is what the GitOps step found of the repository's sync; nil when it has nothing
	// to say (no repository, none before).
	gitops *gitopsOutcome
	// tenantNamespaces are the tenant's namespaces the access step listed; policyApplied says
	// it applied butler-api-endpoint in this run; exposure is what the service addresses step
	// found (nil when it did not look).
	tenantNamespaces []access.Namespace
	policyApplied    bool
	exposure         *metav1.Condition
	// recheckAfter, when set, brings the cluster back after it: a step waits for what no watch
	// announces.
	recheckAfter time.Duration
}

// recheckWithin brings the cluster back within d: the soonest any step asks for.
func (s *state) recheckWithin(d time.Duration) {
	if d <= 0 {
		d = time.Millisecond // now: 0 would read as no recheck at all
	}
	if s.recheckAfter == 0 || d < s.recheckAfter {
		s.recheckAfter = d
	}
}

func (c *Controller) newState(tc *v1alpha1.TenantCluster) *state {
	ns := TenantNamespace(tc)
	return &state{tc: tc, namespace: ns, in: component.Input{Cluster: tc, Namespace: ns}}
}
