package tenantcluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// ensureProvider finds the cluster's ProviderConfig and the ButlerConfig. A missing or unready
// ProviderConfig needs a person; its creation or readiness brings the cluster back (watch).
func (c *Controller) ensureProvider(_ context.Context, s *state) (steps.Result, error) {
	if cfg, err := c.configs.Get(butler.ButlerConfigName); err == nil {
		s.in.Config = cfg
	} else if !apierrors.IsNotFound(err) {
		return steps.Result{}, err
	}
	ref, own := c.providerRef(s.tc)
	if ref.Name == "" {
		return steps.Failure("NoProviderConfig",
			"no ProviderConfig: set spec.providerConfigRef, the Team's providerConfigRef or the ButlerConfig's defaultProviderConfigRef"), nil
	}
	pc, err := c.providers.ProviderConfigs(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return steps.Result{}, err
	}
	// Admission checked the cluster's own reference; this check holds even when admission did
	// not run (another replica of an older version) or the ProviderConfig stopped sharing.
	if own && (pc != nil || ref.Namespace != s.tc.Namespace) {
		var scopeType, scopeTeam string
		if pc != nil {
			scopeType = string(pc.Spec.Scope.Type)
			if pc.Spec.Scope.TeamRef != nil {
				scopeTeam = pc.Spec.Scope.TeamRef.Name
			}
		}
		if err := quota.ProviderUse(s.tc.Namespace, ref.Namespace, ref.Name, pc != nil, scopeType, scopeTeam); err != nil {
			return steps.Failure("ProviderConfigNotShared", "%v", err), nil
		}
	}
	if apierrors.IsNotFound(err) {
		return steps.Failure("ProviderConfigNotFound",
			"ProviderConfig %s/%s does not exist: create it or point spec.providerConfigRef at one that does", ref.Namespace, ref.Name), nil
	}
	if !pc.Status.Ready {
		msg := "it has not been validated yet"
		if cond := meta.FindStatusCondition(pc.Status.Conditions, "Ready"); cond != nil && cond.Message != "" {
			msg = cond.Message
		}
		return steps.Failure("ProviderConfigNotReady", "ProviderConfig %s/%s is not ready: %s", ref.Namespace, ref.Name, msg), nil
	}
	s.in.Provider = pc
	return steps.Ready("ProviderConfigReady", "ProviderConfig %s/%s (%s)", pc.Namespace, pc.Name, pc.Spec.Provider), nil
}

// providerRef is the ProviderConfig a cluster uses: its own (own is true), its Team's, or the
// ButlerConfig's default; a reference without a namespace means the cluster's. The Team is the
// one of the cluster's namespace: a teamRef naming another Team selects nothing of it.
func (c *Controller) providerRef(tc *v1alpha1.TenantCluster) (ref v1alpha1.NamespacedObjectReference, own bool) {
	var r *v1alpha1.NamespacedObjectReference
	switch {
	case tc.Spec.ProviderConfigRef != nil:
		r, own = tc.Spec.ProviderConfigRef, true
	case tc.Spec.TeamRef != nil && tc.Spec.TeamRef.Name == tc.Namespace:
		if team, err := c.teams.Get(tc.Spec.TeamRef.Name); err == nil && team.Spec.ProviderConfigRef != nil {
			r = team.Spec.ProviderConfigRef
		}
	}
	if r == nil {
		if cfg, err := c.configs.Get(butler.ButlerConfigName); err == nil {
			r = cfg.Spec.DefaultProviderConfigRef
		}
	}
	if r == nil {
		return v1alpha1.NamespacedObjectReference{}, false
	}
	ref = *r
	if ref.Namespace == "" {
		ref.Namespace = tc.Namespace
	}
	return ref, own
}
