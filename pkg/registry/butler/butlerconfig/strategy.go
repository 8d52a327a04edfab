// Package butlerconfig holds the registry strategy and kubectl columns of butlerconfigs.
package butlerconfig

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of butlerconfigs.
type Strategy = resource.Strategy[*butler.ButlerConfig, butler.ButlerConfigSpec, butler.ButlerConfigStatus]

// NewStrategy returns the strategy of butlerconfigs.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    false,
		HasStatus:     true,
		Parts: func(obj *butler.ButlerConfig) (*butler.ButlerConfigSpec, *butler.ButlerConfigStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateButlerConfig,
		ValidateChange:       validation.ValidateButlerConfigUpdate,
		ValidateStatusChange: validation.ValidateButlerConfigStatusUpdate,
	}
}
