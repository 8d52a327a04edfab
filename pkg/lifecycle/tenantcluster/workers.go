package tenantcluster

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/workers"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureWorkers applies the bootstrap template and the MachineDeployment. It runs only once the
// control plane is ready at the asked version, so an upgrade moves the workers after it.
func (c *Controller) ensureWorkers(ctx context.Context, s *state) (steps.Result, error) {
	got, failed, err := c.applyWorkers(ctx, s, nil)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	held, failed, err := c.ensureAutoRepair(ctx, s)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	md, err := external.FromUnstructured[clusterv1.MachineDeployment](got)
	if err != nil {
		return steps.Result{}, err
	}
	want := s.tc.Spec.Workers.Replicas
	replicas := ptr.Deref(md.Status.Replicas, 0)
	ready := ptr.Deref(md.Status.ReadyReplicas, 0)
	upToDate := ptr.Deref(md.Status.UpToDateReplicas, 0)
	s.readyWorkers = ready
	// Counts of an older generation say nothing of this one: right after a version change every
	// old machine is still "up to date" until Cluster API has seen the new template.
	if observed := md.Status.ObservedGeneration; observed < md.Generation {
		return steps.Waiting("WorkersNotReady", "MachineDeployment %s/%s: Cluster API has not seen generation %d yet (status is of %d)",
			got.GetNamespace(), got.GetName(), got.GetGeneration(), observed), nil
	}
	// Nor are the up-to-date counts current at once: Cluster API sums its MachineSets' statuses,
	// which their own controller updates later. The versions its machines run are what says a
	// version change has rolled (status.versions, Cluster API >= 1.14).
	if replicas == want && ready == want && upToDate == want {
		if rolled, versions := atVersion(md.Status.Versions, s.tc.Spec.KubernetesVersion, want); !rolled {
			return steps.Waiting("WorkersNotReady", "%d of %d workers ready, rolling to %s (machines at %s; MachineDeployment %s/%s)",
				ready, want, s.tc.Spec.KubernetesVersion, versions, got.GetNamespace(), got.GetName()), nil
		}
		return steps.Ready("WorkersReady", "%d of %d workers ready at %s", ready, want, s.tc.Spec.KubernetesVersion), nil
	}
	if _, err := c.lookAtMachines(ctx, s, got.GetName()); err != nil {
		return steps.Result{}, err
	}
	if held != "" {
		held = "; " + held
	}
	return steps.Waiting("WorkersNotReady", "%d of %d workers ready, %d up to date (MachineDeployment %s/%s)%s",
		ready, want, upToDate, got.GetNamespace(), got.GetName(), held), nil
}

// atVersion says whether a MachineDeployment's status.versions puts all its want machines at
// version, and what it says ("v1.30.1: 2, v1.30.2: 1"). Without the field (a Cluster API before
// 1.14) it cannot say otherwise.
func atVersion(versions []clusterv1.StatusVersion, version string, want int32) (bool, string) {
	if versions == nil {
		return true, ""
	}
	rolled, total := true, int32(0)
	var parts []string
	for _, v := range versions {
		parts = append(parts, fmt.Sprintf("%s: %d", v.Version, v.Replicas))
		total += v.Replicas
		if v.Version != version && v.Replicas > 0 {
			rolled = false
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	return rolled && total == want, strings.Join(parts, ", ")
}

// applyWorkers applies the bootstrap template and the MachineDeployment, and returns the
// latter; replicas, when set, overrides spec.workers.replicas (hibernation's zero).
func (c *Controller) applyWorkers(ctx context.Context, s *state, replicas *int64) (*unstructured.Unstructured, *steps.Result, error) {
	bootstrap, err := workers.BootstrapTemplate(s.in)
	if err != nil {
		r := steps.Failure("InvalidSpec", "%v", err)
		return nil, &r, nil
	}
	md, err := workers.MachineDeployment(s.in)
	if err != nil {
		r := steps.Failure("InvalidSpec", "%v", err)
		return nil, &r, nil
	}
	if replicas != nil {
		if err := unstructured.SetNestedField(md.Object, *replicas, "spec", "replicas"); err != nil {
			return nil, nil, err
		}
	}
	applied, failed, err := c.applyAll(ctx, bootstrap, md)
	if failed != nil || err != nil {
		return nil, failed, err
	}
	return applied[1], nil, nil
}

func (c *Controller) cleanupWorkers(ctx context.Context, s *state) (bool, error) {
	if gone, err := c.removeAutoRepair(ctx, s); err != nil || !gone {
		return false, err
	}
	gone, err := c.objects.remove(ctx, external.MachineDeploymentGVK, s.namespace, component.WorkersName(s.in))
	if err != nil || !gone {
		return false, err
	}
	_, err = c.objects.remove(ctx, external.BootstrapConfigTemplateGVK, s.namespace, component.WorkersName(s.in))
	return err == nil, err
}

// ensureAutoRepair applies the workers' MachineHealthCheck when spec.workers.autoRepair is on
// and removes it when off. It returns what the check says when it holds repairs back (too many
// unhealthy), for the workers' message.
func (c *Controller) ensureAutoRepair(ctx context.Context, s *state) (string, *steps.Result, error) {
	mhc, err := workers.MachineHealthCheck(s.in)
	if err != nil {
		r := steps.Failure("InvalidSpec", "%v", err)
		return "", &r, nil
	}
	if mhc == nil {
		_, err := c.removeAutoRepair(ctx, s)
		return "", nil, err
	}
	applied, failed, err := c.applyAll(ctx, mhc)
	if failed != nil || err != nil {
		return "", failed, err
	}
	typed, err := external.FromUnstructured[clusterv1.MachineHealthCheck](applied[0])
	if err != nil {
		return "", nil, err
	}
	cond := meta.FindStatusCondition(typed.Status.Conditions, clusterv1.MachineHealthCheckRemediationAllowedCondition)
	if cond == nil || cond.Status == metav1.ConditionTrue {
		return "", nil, nil
	}
	expected := ptr.Deref(typed.Status.ExpectedMachines, 0)
	return fmt.Sprintf("auto-repair holds off: %d of %d workers unhealthy (%s)",
		expected-ptr.Deref(typed.Status.CurrentHealthy, 0), expected, cond.Message), nil, nil
}

// removeAutoRepair deletes the workers' MachineHealthCheck: auto-repair is off, the cluster
// sleeps (a stopped cluster's machines are never remediated) or goes away.
func (c *Controller) removeAutoRepair(ctx context.Context, s *state) (bool, error) {
	return c.objects.remove(ctx, external.MachineHealthCheckGVK, s.namespace, component.WorkersName(s.in))
}
