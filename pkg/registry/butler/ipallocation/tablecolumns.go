package ipallocation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of ipallocations: POOL, TENANT, TYPE, RANGE, PHASE, AGE.
var Table = resource.Table[*butler.IPAllocation]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Pool", "string", "NetworkPool the addresses come from."),
		resource.Column("Tenant", "string", "TenantCluster holding the addresses."),
		resource.Column("Type", "string", "nodes or loadbalancer."),
		resource.Column("Range", "string", "First and last address held."),
		resource.Column("Phase", "string", "Lifecycle phase."),
	},
	Cells: func(obj *butler.IPAllocation) []any {
		tenant := ""
		if ref := obj.Spec.TenantClusterRef; ref != nil {
			tenant = ref.Name
			if ref.Namespace != "" {
				tenant = ref.Namespace + "/" + ref.Name
			}
		}
		addrRange := ""
		if obj.Status.StartAddress != "" {
			addrRange = obj.Status.StartAddress + "-" + obj.Status.EndAddress
		}
		return []any{obj.Spec.PoolRef.Name, tenant, string(obj.Spec.Type), addrRange, string(obj.Status.Phase)}
	},
}
