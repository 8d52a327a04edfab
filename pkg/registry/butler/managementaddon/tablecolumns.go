package managementaddon

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of managementaddons: ADDON, VERSION, ACCOUNT, PHASE, AGE.
var Table = resource.Table[*butler.ManagementAddon]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Addon", "string", "AddonDefinition name, or the Helm chart."),
		resource.Column("Version", "string", "Requested version."),
		resource.Column("Account", "string", "ServiceAccount (namespace/name) the release is installed as."),
		resource.Column("Phase", "string", "Lifecycle phase."),
	},
	Cells: func(obj *butler.ManagementAddon) []any {
		addon := obj.Spec.Addon
		if addon == "" && obj.Spec.Helm != nil {
			addon = obj.Spec.Helm.Chart
		}
		account := obj.Spec.ServiceAccountRef.Namespace + "/" + obj.Spec.ServiceAccountRef.Name
		return []any{addon, obj.Spec.Version, account, string(obj.Status.Phase)}
	},
}
