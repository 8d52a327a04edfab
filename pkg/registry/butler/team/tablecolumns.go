package team

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of teams: DISPLAY NAME, PHASE, NAMESPACE, CLUSTERS, QUOTA, AGE.
var Table = resource.Table[*butler.Team]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Display Name", "string", "Human-readable name."),
		resource.Column("Phase", "string", "Lifecycle phase."),
		resource.Column("Namespace", "string", "The Team's namespace."),
		resource.Column("Clusters", "integer", "Number of TenantClusters."),
		resource.Column("Quota", "string", "Quota status: OK, Warning or Exceeded."),
	},
	Cells: func(obj *butler.Team) []any {
		return []any{obj.Spec.DisplayName, string(obj.Status.Phase), obj.Status.Namespace,
			int64(obj.Status.ClusterCount), obj.Status.QuotaStatus}
	},
}
