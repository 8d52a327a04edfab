package tenantcluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// providerSilentAfter is how long a hosted control plane's provider may leave its objects
// without a word (no TenantControlPlane, no condition; no status on the TenantControlPlane)
// before the cluster says the provider is not answering. The real provider and Steward act
// within seconds of an apply; a minute and a half covers a busy one.
const providerSilentAfter = 90 * time.Second

// What the real pair's refusals say (Steward d49041f's webhooks, which the Cluster API provider
// copies into its TenantControlPlaneCreated condition): the match picks the capability the
// cluster names; anything else is shown as the provider wrote it.
const (
	// steward/internal/webhook/handlers/tcp_version.go: on create and on upgrade.
	refusedVersion = "greater than the supported one"
	// steward/internal/webhook/handlers/tcp_datastore.go.
	refusedDataStore = "DataStore does not exist"
	// The API server could not reach the provider's admission webhook: Steward is not serving.
	webhookUnreachable = "failed calling webhook"
	// reasonProviderUnavailable: the engine's webhook does not answer.
	reasonProviderUnavailable = "ProviderUnavailable"
)

// refusedBecause turns the provider's refusal to create or update the TenantControlPlane (the
// message of its TenantControlPlaneCreated condition) into a result naming the provider, what it
// cannot do and the field that asks for it. A refusal a person must act on is a Failure; one
// not recognised stays a wait, with the provider's words.
func refusedBecause(in component.Input, namespace, why string) steps.Result {
	provider, tc := component.ControlPlaneProvider(in.Config), in.Cluster
	switch {
	case strings.Contains(why, refusedVersion):
		return steps.Failure("VersionUnsupported", "control plane provider %s cannot run Kubernetes %s (spec.kubernetesVersion): %s",
			provider, tc.Spec.KubernetesVersion, why)
	case strings.Contains(why, refusedDataStore):
		return steps.Failure("DataStoreNotFound", "control plane provider %s cannot keep the cluster's data in %s: %s",
			provider, dataStoreAsked(in), why)
	case strings.Contains(why, webhookUnreachable):
		return steps.Failure(reasonProviderUnavailable, "control plane provider %s cannot create or update TenantControlPlanes: its admission webhook does not answer (is it running?): %s",
			provider, why)
	}
	return steps.Waiting("TenantControlPlaneNotCreated", "control plane provider %s could not create TenantControlPlane %s/%s: %s",
		provider, namespace, tc.Name, why)
}

// dataStoreAsked names the DataStore the cluster asks for and the field, or the provider's default.
func dataStoreAsked(in component.Input) string {
	if ref := in.Cluster.Spec.ControlPlane.DataStoreRef; ref != nil && ref.Name != "" {
		return fmt.Sprintf("DataStore %s (spec.controlPlane.dataStoreRef)", ref.Name)
	}
	return "its default DataStore (spec.controlPlane.dataStoreRef unset)"
}

// silentProvider is the result while the provider has said nothing about an object of the
// cluster's, created at created: waiting (the usual wait) until providerSilentAfter, then a wait
// naming the provider and what it has not done; a recheck for when that time comes, as a
// silent provider sends no event. A zero created (not known) is now.
func (c *Controller) silentProvider(s *state, created time.Time, waiting steps.Result, what string) steps.Result {
	var age time.Duration
	if !created.IsZero() {
		age = c.clock.Since(created)
	}
	if age < providerSilentAfter {
		s.recheckWithin(providerSilentAfter - age)
		return waiting
	}
	s.recheckWithin(providerSilentAfter)
	return steps.Waiting("ProviderNotResponding", "control plane provider %s has not acted in %s: it did not %s (is it running?)",
		component.ControlPlaneProvider(s.in.Config), age.Truncate(time.Second), what)
}
