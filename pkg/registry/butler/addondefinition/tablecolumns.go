package addondefinition

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of addondefinitions: DISPLAY NAME, CATEGORY, CHART, DEFAULT VERSION, AGE.
var Table = resource.Table[*butler.AddonDefinition]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Display Name", "string", "Human-readable name."),
		resource.Column("Category", "string", "Catalog category."),
		resource.Column("Chart", "string", "Helm chart name."),
		resource.Column("Default Version", "string", "Chart version installed when none is asked for."),
	},
	Cells: func(obj *butler.AddonDefinition) []any {
		return []any{obj.Spec.DisplayName, string(obj.Spec.Category), obj.Spec.Chart.Name, obj.Spec.Chart.DefaultVersion}
	},
}
