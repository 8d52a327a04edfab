package tenantclustersnapshot

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	butlerresource "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of tenantclustersnapshots: CLUSTER, PHASE, REVISION, OBJECTS, SIZE, AGE.
var Table = butlerresource.Table[*butler.TenantClusterSnapshot]{
	Columns: []metav1.TableColumnDefinition{
		butlerresource.Column("Cluster", "string", "TenantCluster the snapshot was taken of."),
		butlerresource.Column("Phase", "string", "Pending, Running, Ready or Failed."),
		butlerresource.Column("Revision", "integer", "The datastore's etcd revision the snapshot was read at."),
		butlerresource.Column("Objects", "integer", "Keys in the snapshot."),
		butlerresource.Column("Size", "string", "Stored (compressed) size."),
	},
	Cells: func(obj *butler.TenantClusterSnapshot) []any {
		size := ""
		if obj.Status.Bytes > 0 {
			size = resource.NewQuantity(obj.Status.Bytes, resource.BinarySI).String()
		}
		return []any{obj.Spec.ClusterRef.Name, string(obj.Status.Phase), obj.Status.Revision, obj.Status.ObjectCount, size}
	},
}
