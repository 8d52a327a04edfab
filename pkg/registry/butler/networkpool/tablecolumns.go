package networkpool

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of networkpools: CIDR, AVAILABLE, ALLOCATED, FRAGMENTATION, AGE.
var Table = resource.Table[*butler.NetworkPool]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("CIDR", "string", "The pool's prefix."),
		resource.Column("Available", "integer", "Addresses free to hand out."),
		resource.Column("Allocated", "integer", "Addresses held by IPAllocations."),
		resource.Column("Fragmentation", "string", "100 - largest free block * 100 / total free."),
	},
	Cells: func(obj *butler.NetworkPool) []any {
		return []any{obj.Spec.CIDR, obj.Status.AvailableIPs, obj.Status.AllocatedIPs,
			strconv.Itoa(int(obj.Status.FragmentationPercent)) + "%"}
	},
}
