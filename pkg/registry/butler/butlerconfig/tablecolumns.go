package butlerconfig

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of butlerconfigs: MODE, EXPOSURE, TEAMS, CLUSTERS, AGE.
var Table = resource.Table[*butler.ButlerConfig]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Mode", "string", "Multi-tenancy mode."),
		resource.Column("Exposure", "string", "Default control plane exposure."),
		resource.Column("Teams", "integer", "Number of Teams."),
		resource.Column("Clusters", "integer", "Number of TenantClusters."),
	},
	Cells: func(obj *butler.ButlerConfig) []any {
		return []any{string(obj.Spec.MultiTenancy.Mode), string(obj.Spec.ControlPlaneExposure.Mode),
			int64(obj.Status.TeamCount), int64(obj.Status.ClusterCount)}
	},
}
