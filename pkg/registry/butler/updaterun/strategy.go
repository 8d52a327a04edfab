// Package updaterun holds the registry strategy and kubectl columns of updateruns.
package updaterun

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Strategy is the create/update/delete strategy of updateruns.
type Strategy = resource.Strategy[*butler.UpdateRun, butler.UpdateRunSpec, butler.UpdateRunStatus]

// NewStrategy returns the strategy of updateruns.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		Namespaced:    true,
		HasStatus:     true,
		Parts: func(obj *butler.UpdateRun) (*butler.UpdateRunSpec, *butler.UpdateRunStatus) {
			return &obj.Spec, &obj.Status
		},
		ValidateNew:          validation.ValidateUpdateRun,
		ValidateChange:       validation.ValidateUpdateRunUpdate,
		ValidateStatusChange: validation.ValidateUpdateRunStatusUpdate,
		SelectableFields: func(obj *butler.UpdateRun) fields.Set {
			return fields.Set{"status.phase": string(obj.Status.Phase), "spec.strategyRef.name": obj.Spec.StrategyRef.Name}
		},
	}
}

// Table is the kubectl view of updateruns: TARGET, STATE, PHASE, STAGE, DONE, FAILED, AGE.
var Table = resource.Table[*butler.UpdateRun]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Target", "string", "The Kubernetes version the run moves clusters to."),
		resource.Column("State", "string", "What the run is asked to do: Run, Plan, Pause or Abandon."),
		resource.Column("Phase", "string", "Where the run is."),
		resource.Column("Stage", "string", "The stage under way (or the last one)."),
		resource.Column("Done", "string", "Clusters that passed their gate, of those selected."),
		resource.Column("Failed", "integer", "Clusters that failed."),
	},
	Cells: func(obj *butler.UpdateRun) []any {
		stage, done, failed, total := "", 0, 0, 0
		for _, s := range obj.Status.Stages {
			if s.Phase != butler.StagePending && s.Phase != "" {
				stage = s.Name
			}
			for _, c := range s.Clusters {
				total++
				switch c.Phase {
				case butler.ClusterUpdateSucceeded:
					done++
				case butler.ClusterUpdateFailed:
					failed++
				}
			}
		}
		return []any{obj.Spec.Target.KubernetesVersion, string(obj.Spec.State), string(obj.Status.Phase), stage,
			fmt.Sprintf("%d/%d", done, total), failed}
	},
}
