// Package networkpool holds the registry strategy and kubectl columns of networkpools.
package networkpool

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of networkpools.
type Strategy = resource.Strategy[*butler.NetworkPool, butler.NetworkPoolSpec, butler.NetworkPoolStatus]

// NewStrategy returns the strategy of networkpools.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		HasStatus:     true,
		Parts: func(obj *butler.NetworkPool) (*butler.NetworkPoolSpec, *butler.NetworkPoolStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateNetworkPool,
		ValidateChange:       validation.ValidateNetworkPoolUpdate,
		ValidateStatusChange: validation.ValidateNetworkPoolStatusUpdate,
	}
}
