package updaterun

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// freezeAndPlan copies the strategy into the run's status and puts each cluster the run may see
// into the first stage that selects it, once: editing the strategy or labels later changes
// future runs only. It says false when there is nothing to plan with (the run then failed).
func (c *Controller) freezeAndPlan(p *pass) bool {
	run := p.run
	strategy, err := c.strategies.UpdateStrategies(run.Namespace).Get(run.Spec.StrategyRef.Name)
	if err != nil {
		// Admission refuses a run without its strategy; it may have been deleted since.
		setPhase(p, v1alpha1.UpdateRunFailed, fmt.Sprintf("UpdateStrategy %q: %v", run.Spec.StrategyRef.Name, err))
		p.event(corev1.EventTypeWarning, "StrategyMissing", run.Status.Message)
		return false
	}
	frozen := strategy.Spec.DeepCopy()
	run.Status.Strategy = frozen
	run.Status.Stages = make([]v1alpha1.StageStatus, len(frozen.Stages))
	selectors := make([]k8slabels.Selector, len(frozen.Stages))
	for i, s := range frozen.Stages {
		run.Status.Stages[i] = v1alpha1.StageStatus{Name: s.Name, Phase: v1alpha1.StagePending, Tasks: tasksOf(s)}
		selectors[i] = k8slabels.Everything()
		if s.Selector != nil {
			if selectors[i], err = metav1.LabelSelectorAsSelector(s.Selector); err != nil {
				selectors[i] = k8slabels.Nothing() // validation refuses it; select nothing rather than everything
			}
		}
	}
	for _, tc := range c.visibleClusters(run.Namespace) {
		i := slices.IndexFunc(selectors, func(s k8slabels.Selector) bool { return s.Matches(k8slabels.Set(tc.Labels)) })
		if i < 0 {
			run.Status.NotSelected = append(run.Status.NotSelected, keyOf(tc))
			continue
		}
		st := &run.Status.Stages[i]
		st.Clusters = append(st.Clusters, planCluster(tc, run.Spec.Target.KubernetesVersion))
	}
	setPhase(p, v1alpha1.UpdateRunRunning, "")
	p.event(corev1.EventTypeNormal, "Planned", planSummary(run))
	return true
}

// visibleClusters are the clusters a run in namespace may move, sorted by namespace/name: its
// own namespace's, or every namespace's for a run in the platform namespace.
func (c *Controller) visibleClusters(namespace string) []*v1alpha1.TenantCluster {
	var all []*v1alpha1.TenantCluster
	if namespace == PlatformNamespace {
		all, _ = c.clusters.List(k8slabels.Everything())
	} else {
		all, _ = c.clusters.TenantClusters(namespace).List(k8slabels.Everything())
	}
	all = slices.DeleteFunc(slices.Clone(all), func(tc *v1alpha1.TenantCluster) bool { return tc.DeletionTimestamp != nil })
	slices.SortFunc(all, func(a, b *v1alpha1.TenantCluster) int {
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	})
	return all
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func keyOf(tc *v1alpha1.TenantCluster) string { return tc.Namespace + "/" + tc.Name }

// planCluster is a cluster's first entry in the plan: Pending, or Skipped with why — already at
// (or past) the target, more than one minor behind it (the one-minor rule admission applies to
// everyone), or asleep.
func planCluster(tc *v1alpha1.TenantCluster, target string) v1alpha1.ClusterUpdateStatus {
	entry := v1alpha1.ClusterUpdateStatus{Name: keyOf(tc), Phase: v1alpha1.ClusterUpdatePending, FromVersion: tc.Spec.KubernetesVersion}
	skip := func(msg string) v1alpha1.ClusterUpdateStatus {
		entry.Phase, entry.Message = v1alpha1.ClusterUpdateSkipped, msg
		return entry
	}
	from, errFrom := version.ParseSemantic(tc.Spec.KubernetesVersion)
	to, errTo := version.ParseSemantic(target)
	switch {
	case errFrom != nil || errTo != nil:
		return skip(fmt.Sprintf("cannot compare %q with the target %q", tc.Spec.KubernetesVersion, target))
	case from.AtLeast(to):
		return skip(fmt.Sprintf("already at %s", tc.Spec.KubernetesVersion))
	case to.Major() != from.Major() || to.Minor() > from.Minor()+1:
		return skip(fmt.Sprintf("unreachable in one step: %s to %s skips a minor version", tc.Spec.KubernetesVersion, target))
	case tc.Spec.Hibernation != nil && tc.Spec.Hibernation.Hibernated:
		return skip("hibernated: a sleeping cluster is not upgraded; wake it and start another run")
	}
	return entry
}

func tasksOf(s v1alpha1.UpdateStage) []v1alpha1.TaskStatus {
	var out []v1alpha1.TaskStatus
	for _, t := range s.AfterStage {
		typ := v1alpha1.TaskWait
		if t.Approval != nil {
			typ = v1alpha1.TaskApproval
		}
		out = append(out, v1alpha1.TaskStatus{Type: typ, Phase: v1alpha1.TaskPending})
	}
	return out
}

func planSummary(run *v1alpha1.UpdateRun) string {
	msg := "planned"
	for _, st := range run.Status.Stages {
		moving := 0
		for _, c := range st.Clusters {
			if c.Phase == v1alpha1.ClusterUpdatePending {
				moving++
			}
		}
		msg += fmt.Sprintf("; stage %s: %d to move of %d", st.Name, moving, len(st.Clusters))
	}
	if n := len(run.Status.NotSelected); n > 0 {
		msg += fmt.Sprintf("; %d selected by no stage", n)
	}
	return msg
}
