package storage

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// Approving a stage that is not waiting for approval is a 409 naming its phase; a stage the run
// does not have is a 422 on spec.stage; a waiting one records the approver.
func TestUpdateRunApproveOnlyAWaitingStage(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	run := &butler.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Status: butler.UpdateRunStatus{
		Strategy: &butler.UpdateStrategySpec{Stages: []butler.UpdateStage{{Name: "canary"}, {Name: "prod"}}},
		Stages: []butler.StageStatus{
			{Name: "canary", Phase: butler.StageRunning, Tasks: []butler.TaskStatus{{Type: butler.TaskApproval, Phase: butler.TaskPending}}},
			{Name: "prod", Phase: butler.StagePending},
		}}}
	for _, c := range []struct {
		stage, want string
		check       func(error) bool
	}{
		{"canary", `stage "canary" is Running, not waiting for approval`, apierrors.IsConflict},
		{"prod", `stage "prod" is Pending, not waiting for approval`, apierrors.IsConflict},
		{"nope", "spec.stage", apierrors.IsInvalid},
	} {
		if err := Approve(run, c.stage, "alice", now); !c.check(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("approve %s: %v, want %q", c.stage, err, c.want)
		}
	}
	run.Status.Stages[0].Phase = butler.StageWaitingForApproval
	run.Status.Stages[0].Tasks[0].Phase = butler.TaskWaiting
	if err := Approve(run, "canary", "alice", now); err != nil {
		t.Fatal(err)
	}
	if task := run.Status.Stages[0].Tasks[0]; task.Phase != butler.TaskSucceeded || task.ApprovedBy != "alice" || !task.CompletionTime.Equal(&now) {
		t.Errorf("approved task: %+v", task)
	}
	if err := Approve(run, "canary", "bob", now); !apierrors.IsConflict(err) {
		t.Errorf("a second approval: %v, want 409", err)
	}
}
