package kubectlbutler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// The verbs below are the API's own: a spec field the controllers drive to (hibernation,
// restoreFrom), a TenantClusterSnapshot, or the operation annotation (rotation). The plugin only
// writes them, so RBAC and admission judge it as they judge kubectl.

func newHibernateCommand(o *Options, sleep bool) *cobra.Command {
	use, short, word := "wake CLUSTER", "Wake a hibernated TenantCluster (spec.hibernation.hibernated: false)", "waking"
	if sleep {
		use, short, word = "hibernate CLUSTER", "Hibernate a TenantCluster (spec.hibernation.hibernated: true)", "hibernating"
	}
	patch := map[string]any{"spec": map[string]any{"hibernation": map[string]any{"hibernated": sleep}}}
	return verb(o, use, short, func(ctx context.Context, c clients, cluster string) error {
		return c.patch(ctx, cluster, word, patch)
	})
}

func newRotateCommand(o *Options) *cobra.Command {
	var complete bool
	cmd := verb(o, "rotate CLUSTER [--complete]",
		"Rotate a TenantCluster's CA and service-account key (two phases: start, then --complete once Prepared)",
		func(ctx context.Context, c clients, cluster string) error {
			op := v1alpha1.OperationRotateCredentialsStart
			if complete {
				op = v1alpha1.OperationRotateCredentialsComplete
			}
			patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.OperationAnnotation: op}}}
			return c.patch(ctx, cluster, op, patch)
		})
	cmd.Flags().BoolVar(&complete, "complete", false, "complete a Prepared rotation: the old CA and key stop being trusted")
	return cmd
}

func newRestoreCommand(o *Options) *cobra.Command {
	var from, confirm string
	cmd := &cobra.Command{
		Use:   "restore CLUSTER --from SNAPSHOT --confirm CLUSTER",
		Short: "Roll a TenantCluster back in place to one of its snapshots (spec.restoreFrom)",
		Long: `Sets spec.restoreFrom: every object the cluster holds now is replaced by the snapshot's.
This destroys what was written since the snapshot, so --confirm must repeat the cluster's name.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cluster := args[0]
			if from == "" {
				return fmt.Errorf("--from SNAPSHOT is required")
			}
			if confirm != cluster {
				return fmt.Errorf("restoring %s in place replaces every object it holds now with snapshot %s's; pass --confirm %s", cluster, from, cluster)
			}
			patch := map[string]any{"spec": map[string]any{"restoreFrom": map[string]any{"name": from, "confirm": confirm}}}
			return o.with(cmd, cluster, func(ctx context.Context, c clients, cluster string) error {
				return c.patch(ctx, cluster, "restoring from "+from, patch)
			})
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the TenantClusterSnapshot (in the cluster's namespace)")
	cmd.Flags().StringVar(&confirm, "confirm", "", "the cluster's name, to confirm the in-place restore")
	return cmd
}

func newSnapshotCommand(o *Options) *cobra.Command {
	var name string
	cmd := verb(o, "snapshot CLUSTER [--name NAME]", "Take a TenantClusterSnapshot of a TenantCluster",
		func(ctx context.Context, c clients, cluster string) error {
			return c.snapshot(ctx, cluster, name)
		})
	cmd.Flags().StringVar(&name, "name", "", "the snapshot's name (default CLUSTER-YYYYMMDDHHMMSS)")
	return cmd
}

func (c clients) snapshot(ctx context.Context, cluster, name string) error {
	// The cluster is read first so that a wrong name is "not found", not a snapshot that fails.
	if _, err := c.butler.ButlerV1alpha1().TenantClusters(c.ns).Get(ctx, cluster, metav1.GetOptions{}); err != nil {
		return explain(err, "snapshot", c.ns, cluster)
	}
	if name == "" {
		name = cluster + "-" + time.Now().UTC().Format("20060102150405")
	}
	snap := &v1alpha1.TenantClusterSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec:       v1alpha1.TenantClusterSnapshotSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: cluster}},
	}
	if _, err := c.butler.ButlerV1alpha1().TenantClusterSnapshots(c.ns).Create(ctx, snap, metav1.CreateOptions{}); err != nil {
		return explain(err, "creating TenantClusterSnapshot "+name, c.ns, cluster)
	}
	fmt.Fprintf(c.out, "tenantclustersnapshot.butler.butlerlabs.dev/%s created (watch it: kubectl get tcs %s -n %s -w)\n", name, name, c.ns)
	return nil
}

// patch merge-patches the TenantCluster and says what was asked.
func (c clients) patch(ctx context.Context, cluster, what string, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := c.butler.ButlerV1alpha1().TenantClusters(c.ns).Patch(ctx, cluster, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		return explain(err, what, c.ns, cluster)
	}
	fmt.Fprintf(c.out, "tenantcluster.butler.butlerlabs.dev/%s: %s asked (follow it: kubectl get tc %s -n %s -w)\n", cluster, what, cluster, c.ns)
	return nil
}
