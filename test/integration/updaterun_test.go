package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Through the server: a run naming a strategy that does not exist, and a strategy with a
// maxConcurrency of 0, are 422s naming the field; a run's target cannot change; approving a
// stage that does not wait is a 409 naming why; the approval of a waiting stage is recorded
// with the asker's name, once (a second is a 409). The controller does not run standalone: the test
// writes the status it would.
func TestUpdateRunThroughTheServer(t *testing.T) {
	ctx := context.Background()
	const ns = "fleet"
	b := shared.Client.ButlerV1alpha1()
	newRun := func(strategy string) *v1alpha1.UpdateRun {
		return &v1alpha1.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Spec: v1alpha1.UpdateRunSpec{
			StrategyRef: v1alpha1.LocalObjectReference{Name: strategy}, Target: v1alpha1.UpdateTarget{KubernetesVersion: "v1.30.2"}}}
	}
	_, err := b.UpdateRuns(ns).Create(ctx, newRun("missing"), metav1.CreateOptions{})
	expectInvalidFields(t, err, "spec.strategyRef.name")

	stage := v1alpha1.UpdateStage{Name: "canary", MaxConcurrency: ptr.To(intstr.FromInt32(0)),
		AfterStage: []v1alpha1.UpdateTask{{Approval: &v1alpha1.ApprovalTask{}}}}
	strategy := &v1alpha1.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "rings"}, Spec: v1alpha1.UpdateStrategySpec{Stages: []v1alpha1.UpdateStage{stage}}}
	_, err = b.UpdateStrategies(ns).Create(ctx, strategy, metav1.CreateOptions{})
	expectInvalidFields(t, err, "spec.stages[0].maxConcurrency")
	strategy.Spec.Stages[0].MaxConcurrency = nil
	if _, err = b.UpdateStrategies(ns).Create(ctx, strategy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run, err := b.UpdateRuns(ns).Create(ctx, newRun("rings"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Spec.OnFailure != v1alpha1.UpdateFailurePause || run.Spec.State != v1alpha1.UpdateRunStateRun {
		t.Errorf("defaults: onFailure %q, state %q", run.Spec.OnFailure, run.Spec.State)
	}
	moved := run.DeepCopy()
	moved.Spec.Target.KubernetesVersion = "v1.31.4"
	_, err = b.UpdateRuns(ns).Update(ctx, moved, metav1.UpdateOptions{})
	expectInvalidFields(t, err, "spec")

	approval := &v1alpha1.UpdateRunApproval{Spec: v1alpha1.UpdateRunApprovalSpec{Stage: "canary"}}
	if _, err := b.UpdateRuns(ns).Approve(ctx, "r1", approval, metav1.CreateOptions{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "has not started") {
		t.Errorf("approving a run not started: %v, want 409", err)
	}
	// As the controller would: the canary's clusters are done and its approval waits.
	run.Status = v1alpha1.UpdateRunStatus{Strategy: &strategy.Spec, Phase: v1alpha1.UpdateRunWaitingForApproval,
		Stages: []v1alpha1.StageStatus{{Name: "canary", Phase: v1alpha1.StageWaitingForApproval,
			Tasks: []v1alpha1.TaskStatus{{Type: v1alpha1.TaskApproval, Phase: v1alpha1.TaskWaiting}}}}}
	if _, err := b.UpdateRuns(ns).UpdateStatus(ctx, run, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := b.UpdateRuns(ns).Approve(ctx, "r1", approval, metav1.CreateOptions{})
	if err != nil || got.Status.ApprovedBy == "" {
		t.Fatalf("approving the waiting canary: %v, %+v", err, got)
	}
	stored, _ := b.UpdateRuns(ns).Get(ctx, "r1", metav1.GetOptions{})
	if task := stored.Status.Stages[0].Tasks[0]; task.Phase != v1alpha1.TaskSucceeded || task.ApprovedBy != got.Status.ApprovedBy {
		t.Errorf("stored task %+v", task)
	}
	if _, err := b.UpdateRuns(ns).Approve(ctx, "r1", approval, metav1.CreateOptions{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "not waiting for approval") {
		t.Errorf("a second approval: %v, want 409", err)
	}
}
