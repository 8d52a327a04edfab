// Package providerconfig holds the registry strategy and kubectl columns of providerconfigs.
package providerconfig

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of providerconfigs.
type Strategy = resource.Strategy[*butler.ProviderConfig, butler.ProviderConfigSpec, butler.ProviderConfigStatus]

// NewStrategy returns the strategy of providerconfigs.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
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
		WarningsFor:          warnings,
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
