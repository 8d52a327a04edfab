package tenantcluster

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
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
	want := s.tc.Spec.Workers.Replicas
	replicas, _, _ := unstructured.NestedInt64(got.Object, "status", "replicas")
	ready, _, _ := unstructured.NestedInt64(got.Object, "status", "readyReplicas")
	upToDate, _, _ := unstructured.NestedInt64(got.Object, "status", "upToDateReplicas")
	s.readyWorkers = int32(ready)
	// Counts of an older generation say nothing of this one: right after a version change every
	// old machine is still "up to date" until Cluster API has seen the new template.
	if observed, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); observed < got.GetGeneration() {
		return steps.Waiting("WorkersNotReady", "MachineDeployment %s/%s: Cluster API has not seen generation %d yet (status is of %d)",
			got.GetNamespace(), got.GetName(), got.GetGeneration(), observed), nil
	}
	// Nor are the up-to-date counts current at once: Cluster API sums its MachineSets' statuses,
	// which their own controller updates later. The versions its machines run are what says a
	// version change has rolled (status.versions, Cluster API >= 1.14).
	if int32(replicas) == want && int32(ready) == want && int32(upToDate) == want {
		if rolled, versions := atVersion(got, s.tc.Spec.KubernetesVersion, want); !rolled {
			return steps.Waiting("WorkersNotReady", "%d of %d workers ready, rolling to %s (machines at %s; MachineDeployment %s/%s)",
				ready, want, s.tc.Spec.KubernetesVersion, versions, got.GetNamespace(), got.GetName()), nil
		}
		return steps.Ready("WorkersReady", "%d of %d workers ready at %s", ready, want, s.tc.Spec.KubernetesVersion), nil
	}
	return steps.Waiting("WorkersNotReady", "%d of %d workers ready, %d up to date (MachineDeployment %s/%s)",
		ready, want, upToDate, got.GetNamespace(), got.GetName()), nil
}

// atVersion says whether a MachineDeployment's status.versions puts all its want machines at
// version, and what it says ("v1.30.1: 2, v1.30.2: 1"). Without the field (a Cluster API before
// 1.14) it cannot say otherwise.
func atVersion(md *unstructured.Unstructured, version string, want int32) (bool, string) {
	versions, found, _ := unstructured.NestedSlice(md.Object, "status", "versions")
	if !found {
		return true, ""
	}
	rolled, total := true, int64(0)
	var parts []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "version")
		n, _, _ := unstructured.NestedInt64(m, "replicas")
		parts = append(parts, fmt.Sprintf("%s: %d", name, n))
		total += n
		if name != version && n > 0 {
			rolled = false
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	return rolled && total == int64(want), strings.Join(parts, ", ")
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
	gone, err := c.objects.remove(ctx, external.MachineDeploymentGVK, s.namespace, s.tc.Name+"-workers")
	if err != nil || !gone {
		return false, err
	}
	_, err = c.objects.remove(ctx, external.BootstrapConfigTemplateGVK, s.namespace, s.tc.Name+"-workers")
	return err == nil, err
}
