// Package updatestrategy holds the registry strategy and kubectl columns of updatestrategies.
// UpdateStrategies have no status: a run copies the strategy into its own.
package updatestrategy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of updatestrategies.
type Strategy = resource.Strategy[*butler.UpdateStrategy, butler.UpdateStrategySpec, struct{}]

// NewStrategy returns the strategy of updatestrategies.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		Parts: func(obj *butler.UpdateStrategy) (*butler.UpdateStrategySpec, *struct{}) {
			return &obj.Spec, &struct{}{}
		},
		ValidateNew:    validation.ValidateUpdateStrategy,
		ValidateChange: validation.ValidateUpdateStrategyUpdate,
	}
}

// Table is the kubectl view of updatestrategies: STAGES, AGE.
var Table = resource.Table[*butler.UpdateStrategy]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Stages", "string", "The stages' names, in order."),
	},
	Cells: func(obj *butler.UpdateStrategy) []any {
		names := ""
		for i, s := range obj.Spec.Stages {
			if i > 0 {
				names += ","
			}
			names += s.Name
		}
		return []any{names}
	},
}
