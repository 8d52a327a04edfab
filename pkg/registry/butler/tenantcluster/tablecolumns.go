package tenantcluster

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// Table is the kubectl view of tenantclusters: PHASE, PROGRESS (what the lifecycle controller does
// or waits for, as lastOperation says), VERSION, WORKERS, ENDPOINT, AGE; -o wide adds OS, TEAM
// and PROVIDER.
var Table = resource.Table[*butler.TenantCluster]{
	Columns: []metav1.TableColumnDefinition{
		resource.Column("Phase", "string", "Lifecycle phase."),
		resource.Column("Progress", "string", "Share of the lifecycle steps done, and what is being done or waited for."),
		resource.Column("Version", "string", "Kubernetes version."),
		resource.Column("Workers", "string", "Ready and desired workers."),
		resource.Column("Endpoint", "string", "Control plane endpoint."),
	},
	WideColumns: []metav1.TableColumnDefinition{
		resource.Column("OS", "string", "Worker operating system."),
		resource.Column("Team", "string", "Owning Team."),
		resource.Column("Provider", "string", "ProviderConfig the workers come from."),
	},
	Cells: func(obj *butler.TenantCluster) []any {
		var ready int32
		if obj.Status.ObservedState != nil {
			ready = obj.Status.ObservedState.Workers.Ready
		}
		team, provider := "", ""
		if obj.Spec.TeamRef != nil {
			team = obj.Spec.TeamRef.Name
		}
		if ref := obj.Spec.ProviderConfigRef; ref != nil {
			provider = ref.Name
			if ref.Namespace != "" {
				provider = ref.Namespace + "/" + ref.Name
			}
		}
		progress := ""
		if op := obj.Status.LastOperation; op != nil {
			progress = fmt.Sprintf("%d%% %s", op.Progress, op.Description)
		}
		return []any{string(obj.Status.Phase), progress, obj.Spec.KubernetesVersion,
			fmt.Sprintf("%d/%d", ready, obj.Spec.Workers.Replicas), obj.Status.ControlPlaneEndpoint,
			string(obj.Spec.Workers.MachineTemplate.OS.Type), team, provider}
	},
}
