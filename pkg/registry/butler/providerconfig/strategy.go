// Package providerconfig holds the registry strategy and kubectl columns of providerconfigs.
package providerconfig

import (
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
	}
}
