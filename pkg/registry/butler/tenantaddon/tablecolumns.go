package tenantaddon

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of tenantaddons: CLUSTER, ADDON, VERSION, PHASE, AGE.
var Table = resource.Table[*butler.TenantAddon]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Cluster", "string", "TenantCluster the addon is installed into."),
		resource.Column("Addon", "string", "AddonDefinition name, or the Helm chart."),
		resource.Column("Version", "string", "Requested version."),
		resource.Column("Phase", "string", "Lifecycle phase."),
	},
	Cells: func(obj *butler.TenantAddon) []any {
		addon := obj.Spec.Addon
		if addon == "" && obj.Spec.Helm != nil {
			addon = obj.Spec.Helm.Chart
		}
		return []any{obj.Spec.ClusterRef.Name, addon, obj.Spec.Version, string(obj.Status.Phase)}
	},
}
