package tenantcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// strandedAfter is how old a Machine without its infrastructure machine or bootstrap config
// must be before it is replaced, and how often a cluster whose workers have not all joined is
// looked at for one. Cluster API makes both objects before the Machine, so a younger one
// missing is only ever the moment of a deletion.
const strandedAfter = 30 * time.Second

// lookAtMachines reads the MachineDeployment's Machines while not all its workers are ready:
// it tells the Team of the ones auto-repair found unhealthy, and replaces the ones Cluster API
// stranded. It returns how many it replaced.
func (c *Controller) lookAtMachines(ctx context.Context, s *state, deployment string) (int, error) {
	r, err := c.objects.resource(external.MachineGVK, s.namespace)
	if err != nil {
		return 0, err
	}
	list, err := r.List(ctx, metav1.ListOptions{LabelSelector: clusterv1.MachineDeploymentNameLabel + "=" + deployment})
	if err != nil {
		return 0, err
	}
	machines := make([]*clusterv1.Machine, 0, len(list.Items))
	for i := range list.Items {
		if m, err := external.FromUnstructured[clusterv1.Machine](&list.Items[i]); err == nil {
			machines = append(machines, m)
		}
	}
	c.tellRepairs(s, machines)
	return c.replaceStrandedMachines(ctx, s, r, machines)
}

// replaceStrandedMachines deletes the Machines that Cluster API left without their
// infrastructure machine or bootstrap config, so that their MachineSet makes new ones; it returns
// how many it deleted. Cluster API's MachineSet controller deletes both objects when the
// Machine's create fails, and on a slow API server the create can fail on the client's deadline
// (its reconciles get a minute) yet be stored: the Machine then waits for ever for objects that
// are gone ("BootstrapConfig does not exist"), until a MachineHealthCheck's node startup timeout,
// 10 minutes, if the cluster has one. Only Machines that never had a provider ID are replaced:
// one that did is a node, which auto-repair's checks are about.
func (c *Controller) replaceStrandedMachines(ctx context.Context, s *state, r dynamic.ResourceInterface, machines []*clusterv1.Machine) (int, error) {
	replaced := 0
	for _, m := range machines {
		if m.DeletionTimestamp != nil || m.Spec.ProviderID != "" {
			continue
		}
		if age := c.clock.Since(m.CreationTimestamp.Time); age < strandedAfter {
			s.recheckWithin(strandedAfter - age)
			continue
		}
		s.recheckWithin(strandedAfter) // the objects may go later; a stranded Machine makes no event
		missing, err := c.missingRef(ctx, s.namespace, m.Spec.InfrastructureRef, m.Spec.Bootstrap.ConfigRef)
		if err != nil || missing == "" {
			continue
		}
		policy := metav1.DeletePropagationBackground
		err = r.Delete(ctx, m.Name, metav1.DeleteOptions{PropagationPolicy: &policy,
			Preconditions: &metav1.Preconditions{UID: &m.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return replaced, err
		}
		replaced++
		klog.FromContext(ctx).Info("Deleted a Machine Cluster API left without its objects; its MachineSet makes another",
			"machine", klog.KObj(m), "missing", missing)
		c.events.Eventf(s.tc, nil, corev1.EventTypeWarning, "StrandedMachineReplaced", "Reconcile",
			"Machine %s/%s had no %s (Cluster API removed it after a create it took for failed); deleted, its MachineSet makes another",
			m.Namespace, m.Name, missing)
	}
	return replaced, nil
}

// missingRef names the first of refs whose object does not exist ("" when all do), read from the
// API server: an informer's copy could be behind the Machine's.
func (c *Controller) missingRef(ctx context.Context, ns string, refs ...clusterv1.ContractVersionedObjectReference) (string, error) {
	for _, ref := range refs {
		if !ref.IsDefined() {
			continue
		}
		m, err := c.objects.mapper.RESTMapping(ref.GroupKind())
		if err != nil {
			return "", err
		}
		got, err := c.objects.get(ctx, m.GroupVersionKind, ns, ref.Name)
		if err != nil {
			return "", err
		}
		if got == nil {
			return fmt.Sprintf("%s %s", ref.Kind, ref.Name), nil
		}
	}
	return "", nil
}

// tellRepairs makes a WorkerUnhealthy Event on the TenantCluster for each Machine auto-repair's
// MachineHealthCheck found unhealthy (Cluster API's own Events are on the Machine, in the tenant
// namespace, where a Team does not look), once per Machine while it stays so.
func (c *Controller) tellRepairs(s *state, machines []*clusterv1.Machine) {
	told, _ := c.repairsTold.Load(s.namespace)
	before, _ := told.(map[types.UID]bool)
	now := map[types.UID]bool{}
	for _, m := range machines {
		cond := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineHealthCheckSucceededCondition)
		if cond == nil || cond.Status != metav1.ConditionFalse {
			continue
		}
		now[m.UID] = true
		if before[m.UID] {
			continue
		}
		node := "no node"
		if m.Status.NodeRef.IsDefined() {
			node = "node " + m.Status.NodeRef.Name
		}
		c.events.Eventf(s.tc, nil, corev1.EventTypeWarning, "WorkerUnhealthy", "Repair",
			"Machine %s (%s) failed auto-repair's health check: %s; Cluster API replaces it unless too many are unhealthy",
			m.Name, node, controllerkit.EventNote(cond.Message))
	}
	if len(now) == 0 {
		c.repairsTold.Delete(s.namespace)
		return
	}
	c.repairsTold.Store(s.namespace, now)
}
