package providerconfig

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of providerconfigs: PROVIDER, NETWORK MODE, READY, AGE.
var Table = resource.Table[*butler.ProviderConfig]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Provider", "string", "Infrastructure provider."),
		resource.Column("Network Mode", "string", "ipam or cloud."),
		resource.Column("Ready", "boolean", "Whether the provider is reachable and validated."),
	},
	Cells: func(obj *butler.ProviderConfig) []any {
		return []any{string(obj.Spec.Provider), string(obj.Spec.Network.Mode), obj.Status.Ready}
	},
}
