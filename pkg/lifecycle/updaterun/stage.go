package updaterun

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// failurePrefix starts the message of a run paused by a failure (not by spec.state).
const failurePrefix = "paused on failure: "

// workStage works on the current stage and says whether it is done: failures beyond the gate's
// maxFailed apply the run's onFailure; while clusters remain, more are started; once all are
// done, the stage's tasks run in order.
func (c *Controller) workStage(ctx context.Context, p *pass, st *v1alpha1.StageStatus, spec v1alpha1.UpdateStage) (bool, error) {
	if failed := count(st, v1alpha1.ClusterUpdateFailed); failed > maxFailed(spec) {
		return c.onFailure(ctx, p, st, failed)
	}
	if count(st, v1alpha1.ClusterUpdatePending, v1alpha1.ClusterUpdateHeld, v1alpha1.ClusterUpdateSnapshotting, v1alpha1.ClusterUpdateUpgrading) > 0 {
		if err := c.startClusters(ctx, p, st, spec); err != nil {
			return false, err
		}
		moving := count(st, v1alpha1.ClusterUpdateSnapshotting, v1alpha1.ClusterUpdateUpgrading)
		waiting := count(st, v1alpha1.ClusterUpdatePending, v1alpha1.ClusterUpdateHeld)
		setPhase(p, v1alpha1.UpdateRunRunning, fmt.Sprintf("stage %s: %d moving (at most %d), %d waiting their turn",
			st.Name, moving, maxConcurrency(spec, len(st.Clusters)), waiting))
		return false, nil
	}
	if !c.runTasks(p, st, spec) {
		return false, nil
	}
	st.Phase = v1alpha1.StageSucceeded
	p.event(corev1.EventTypeNormal, "StageSucceeded", "stage "+st.Name+" done"+approvers(st))
	return true, nil
}

func maxFailed(spec v1alpha1.UpdateStage) int {
	if spec.HealthGate == nil {
		return 0
	}
	return int(spec.HealthGate.MaxFailed)
}

// onFailure applies the run's onFailure to a stage with more failed clusters than it allows:
// Pause starts no more clusters (those moving go on) until a new run; Abandon ends the run;
// Continue gives the stage up as Failed and goes on to the next.
func (c *Controller) onFailure(ctx context.Context, p *pass, st *v1alpha1.StageStatus, failed int) (bool, error) {
	why := fmt.Sprintf("stage %s: %d cluster(s) failed (%s)", st.Name, failed, failures(st))
	switch p.run.Spec.OnFailure {
	case v1alpha1.UpdateFailureContinue:
		st.Phase = v1alpha1.StageFailed
		p.event(corev1.EventTypeWarning, "StageFailed", why+"; onFailure Continue goes on to the next stage")
		return true, nil
	case v1alpha1.UpdateFailureAbandon:
		p.event(corev1.EventTypeWarning, "Failed", why+"; onFailure Abandon ends the run")
		st.Phase = v1alpha1.StageFailed
		p.run.Status.CompletionTime = &metav1.Time{Time: p.now}
		setPhase(p, v1alpha1.UpdateRunFailed, why)
		return false, c.releaseAll(ctx, p)
	}
	if p.run.Status.Phase != v1alpha1.UpdateRunPaused {
		p.event(corev1.EventTypeWarning, "Paused", why+"; no more clusters are started")
	}
	setPhase(p, v1alpha1.UpdateRunPaused, failurePrefix+why+"; fix the cause and start a new run (clusters at the target are skipped), or abandon this one")
	return false, nil
}

func failures(st *v1alpha1.StageStatus) string {
	var out []string
	for _, e := range st.Clusters {
		if e.Phase == v1alpha1.ClusterUpdateFailed {
			out = append(out, e.Name+": "+e.Message)
		}
	}
	return strings.Join(out, "; ")
}

// runTasks runs the stage's tasks in order and says whether all are done: a wait ends by the
// clock; an approval by updateruns/approve, which marks the task Succeeded in status.
func (c *Controller) runTasks(p *pass, st *v1alpha1.StageStatus, spec v1alpha1.UpdateStage) bool {
	for i := range st.Tasks {
		task := &st.Tasks[i]
		if task.Phase == v1alpha1.TaskSucceeded {
			continue
		}
		if task.Phase != v1alpha1.TaskWaiting {
			task.Phase, task.StartTime = v1alpha1.TaskWaiting, &metav1.Time{Time: p.now}
			p.event(corev1.EventTypeNormal, "TaskWaiting", fmt.Sprintf("stage %s: %s", st.Name, describe(spec.AfterStage[i])))
		}
		if task.Type == v1alpha1.TaskApproval {
			st.Phase = v1alpha1.StageWaitingForApproval
			setPhase(p, v1alpha1.UpdateRunWaitingForApproval, fmt.Sprintf(
				"stage %s waits for approval: create updateruns/approve with {\"spec\":{\"stage\":%q}}", st.Name, st.Name))
			return false
		}
		left := spec.AfterStage[i].Wait.Duration.Duration - p.now.Sub(task.StartTime.Time)
		if left > 0 {
			st.Phase = v1alpha1.StageWaiting
			setPhase(p, v1alpha1.UpdateRunWaiting, fmt.Sprintf("stage %s waits %s more", st.Name, left.Round(1e9)))
			p.recheck(left)
			return false
		}
		task.Phase, task.CompletionTime = v1alpha1.TaskSucceeded, &metav1.Time{Time: p.now}
	}
	return true
}

func describe(t v1alpha1.UpdateTask) string {
	if t.Approval != nil {
		return "waiting for approval"
	}
	return "waiting " + t.Wait.Duration.Duration.String()
}

func approvers(st *v1alpha1.StageStatus) string {
	var out []string
	for _, t := range st.Tasks {
		if t.Type == v1alpha1.TaskApproval && t.ApprovedBy != "" {
			out = append(out, t.ApprovedBy)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (approved by " + strings.Join(out, ", ") + ")"
}

// abandon ends the run for good: clusters already moving go on by themselves (their spec says
// the target), but are no longer held, and nothing more is started.
func (c *Controller) abandon(ctx context.Context, p *pass) error {
	p.run.Status.CompletionTime = &metav1.Time{Time: p.now}
	setPhase(p, v1alpha1.UpdateRunAbandoned, "abandoned by spec.state")
	p.event(corev1.EventTypeNormal, "Abandoned", "run abandoned; no more clusters are started")
	return c.releaseAll(ctx, p)
}

func (c *Controller) releaseAll(ctx context.Context, p *pass) error {
	for _, st := range p.run.Status.Stages {
		for _, e := range st.Clusters {
			tc, err := c.cluster(e.Name)
			if err != nil {
				return err
			}
			if tc != nil {
				if err := c.release(ctx, tc, p.key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func cutKey(key string) (string, string, bool) { return strings.Cut(key, "/") }
