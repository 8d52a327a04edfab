// Package addondefinition holds the registry strategy and kubectl columns of addondefinitions. AddonDefinitions have no status.
package addondefinition

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of addondefinitions.
type Strategy = resource.Strategy[*butler.AddonDefinition, butler.AddonDefinitionSpec, struct{}]

// NewStrategy returns the strategy of addondefinitions.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    false,
		HasStatus:     false,
		Parts: func(obj *butler.AddonDefinition) (*butler.AddonDefinitionSpec, *struct{}) {
			return &obj.Spec, &struct{}{}
		},
		ValidateNew:    validation.ValidateAddonDefinition,
		ValidateChange: validation.ValidateAddonDefinitionUpdate,
	}
}
