// Package providerconfig holds the registry strategy and kubectl columns of providerconfigs.
package providerconfig

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of providerconfigs.
type Strategy = resource.Strategy[*butler.ProviderConfig, butler.ProviderConfigSpec, butler.ProviderConfigStatus]

// NewStrategy returns the strategy of providerconfigs. teams reads Teams (nil: there are none),
// to tell a Team's namespace, which bears the Team's name.
func NewStrategy(typer runtime.ObjectTyper, teams rest.Getter) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		HasStatus:     true,
		Parts: func(obj *butler.ProviderConfig) (*butler.ProviderConfigSpec, *butler.ProviderConfigStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateProviderConfig,
		ValidateChange:       validation.ValidateProviderConfigUpdate,
		ValidateStatusChange: validation.ValidateProviderConfigStatusUpdate,
		WarningsFor: func(ctx context.Context, pc *butler.ProviderConfig) []string {
			return append(warnings(pc), scopeWarnings(ctx, teams, pc)...)
		},
	}
}

// warnings tells who asks for ipam mode on a provider whose machines cannot take addresses of
// their own that the pools will give load-balancer addresses only: a user of an on-premises
// provider in particular may expect node addresses too.
func warnings(pc *butler.ProviderConfig) []string {
	why := butler.NodeAddressesUnsupported(pc.Spec.Provider)
	if why == "" || pc.Spec.Network.Mode != butler.NetworkModeIPAM {
		return nil
	}
	return []string{fmt.Sprintf("spec.network.mode: ipam gives %s clusters load-balancer addresses from the pools, not node addresses: %s", pc.Spec.Provider, why)}
}

// scopeWarnings tells who writes a ProviderConfig shared with the platform into a Team's
// namespace that every Team may use it, and its credentials. Butler's CRD defaults an unset
// spec.scope to platform and this API keeps that meaning (the same manifest must mean the same
// on both), so a platform admin who put Team B's credentials in B's namespace and forgot the
// scope learns it here, when it is written, rather than from another Team's cluster.
func scopeWarnings(ctx context.Context, teams rest.Getter, pc *butler.ProviderConfig) []string {
	if teams == nil || pc.Spec.Scope.Type != butler.ScopePlatform {
		return nil
	}
	ns := pc.Namespace
	if ns == "" {
		ns, _ = genericapirequest.NamespaceFrom(ctx)
	}
	if ns == "" {
		return nil
	}
	// A quorum read: a Team made a moment ago counts. Only a client's writes come here (the
	// quota Ledger's go to storage), which are rare.
	if _, err := teams.Get(ctx, ns, &metav1.GetOptions{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return []string{fmt.Sprintf("spec.scope: could not tell whether namespace %s is a Team's (%v); a ProviderConfig of scope platform is shared with every Team", ns, err)}
		}
		return nil
	}
	return []string{fmt.Sprintf("spec.scope: this ProviderConfig is in Team %[1]s's namespace but its scope is platform (the default when spec.scope is unset), "+
		"so every Team's clusters may use it and its credentials; set spec.scope to {type: team, teamRef: {name: %[1]s}} to keep it to Team %[1]s", ns)}
}
