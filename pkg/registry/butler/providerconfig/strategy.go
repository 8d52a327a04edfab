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

// noStaticNodeAddresses are the on-premises providers whose Cluster API machines cannot be given
// an address of their own, and where their nodes' addresses come from instead.
var noStaticNodeAddresses = map[butler.ProviderType]string{
	butler.ProviderHarvester: "Cluster API's KubeVirt provider makes every machine of a template from one VM spec; nodes take their addresses from the Harvester network (DHCP)",
	butler.ProviderNutanix:   "a NutanixMachine has no static address field; nodes take their addresses from the Nutanix subnet (its IPAM or DHCP)",
}

// warnings tells who asks for ipam mode on such a provider that the pools will give load-balancer
// addresses only, since a user of an on-premises provider may expect node addresses too.
func warnings(pc *butler.ProviderConfig) []string {
	why, ok := noStaticNodeAddresses[pc.Spec.Provider]
	if !ok || pc.Spec.Network.Mode != butler.NetworkModeIPAM {
		return nil
	}
	return []string{fmt.Sprintf("spec.network.mode: ipam gives %s clusters load-balancer addresses from the pools, not node addresses: %s", pc.Spec.Provider, why)}
}
