package kubectlbutler

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestUpdateRunPluginStart: `upgrade start` creates a run of the strategy to the version, with
// the flags' snapshot, failure policy and plan; without --to it asks nothing.
func TestUpdateRunPluginStart(t *testing.T) {
	butler := fake.NewSimpleClientset()
	var out bytes.Buffer
	c := clients{butler: butler, ns: "team-a", out: &out}
	if err := (&runRequest{}).start(context.Background(), c, "gated"); err == nil || !strings.Contains(err.Error(), "--to") {
		t.Errorf("start without --to: %v", err)
	}
	if n := len(butler.Actions()); n != 0 {
		t.Errorf("start without --to asked the API %d times", n)
	}
	r := &runRequest{name: "r1", to: "v1.30.2", snapshot: true, onFailure: "Abandon", plan: true}
	if err := r.start(context.Background(), c, "gated"); err != nil {
		t.Fatal(err)
	}
	run, err := butler.ButlerV1alpha1().UpdateRuns("team-a").Get(context.Background(), "r1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.UpdateRunSpec{StrategyRef: v1alpha1.LocalObjectReference{Name: "gated"}, Target: v1alpha1.UpdateTarget{KubernetesVersion: "v1.30.2"},
		SnapshotBeforeUpgrade: true, OnFailure: v1alpha1.UpdateFailureAbandon, State: v1alpha1.UpdateRunStatePlan}
	if run.Spec != want {
		t.Errorf("spec %+v, want %+v", run.Spec, want)
	}
	if !strings.Contains(out.String(), "updaterun.butler.butlerlabs.dev/r1 created") || !strings.Contains(out.String(), "upgrade status r1 -n team-a --watch") {
		t.Errorf("output: %s", out.String())
	}
}

// TestUpdateRunPluginApprove: without --stage the plugin approves the stage that waits, through
// updateruns/approve; when none waits it says the run's phase and asks nothing more; the API's
// 403 is said as a missing right.
func TestUpdateRunPluginApprove(t *testing.T) {
	waiting := updateRun("r1", v1alpha1.UpdateRunWaitingForApproval,
		v1alpha1.StageStatus{Name: "canary", Phase: v1alpha1.StageWaitingForApproval, Tasks: []v1alpha1.TaskStatus{
			{Type: v1alpha1.TaskWait, Phase: v1alpha1.TaskSucceeded}, {Type: v1alpha1.TaskApproval, Phase: v1alpha1.TaskWaiting}}},
		v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StagePending})
	running := updateRun("r2", v1alpha1.UpdateRunRunning, v1alpha1.StageStatus{Name: "canary", Phase: v1alpha1.StageRunning})
	butler := fake.NewSimpleClientset(waiting, running)
	var approved []string
	forbid := false
	butler.PrependReactor("create", "updateruns", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "approve" {
			return false, nil, nil
		}
		if forbid {
			return true, nil, apierrors.NewForbidden(v1alpha1.Resource("updateruns"), "r1", errors.New(`User "vic" cannot create resource "updateruns/approve"`))
		}
		req := a.(k8stesting.CreateAction).GetObject().(*v1alpha1.UpdateRunApproval)
		approved = append(approved, a.(k8stesting.CreateAction).GetObject().(*v1alpha1.UpdateRunApproval).Spec.Stage)
		return true, &v1alpha1.UpdateRunApproval{Spec: req.Spec, Status: v1alpha1.UpdateRunApprovalStatus{ApprovedBy: "ann"}}, nil
	})
	var out bytes.Buffer
	c := clients{butler: butler, ns: "team-a", out: &out}
	ctx := context.Background()

	if err := approve(ctx, c, "r1", ""); err != nil || strings.Join(approved, ",") != "canary" || !strings.Contains(out.String(), "stage canary approved by ann") {
		t.Errorf("approve r1: %v, approved %v, %s", err, approved, out.String())
	}
	if err := approve(ctx, c, "r2", ""); err == nil || !strings.Contains(err.Error(), "no stage of UpdateRun \"r2\" waits for approval (the run is Running)") || len(approved) != 1 {
		t.Errorf("approve r2 with no stage waiting: %v, approved %v", err, approved)
	}
	if err := approve(ctx, c, "nope", ""); err == nil || !strings.Contains(err.Error(), `UpdateRun "nope" not found in namespace "team-a"`) {
		t.Errorf("approve a missing run: %v", err)
	}
	forbid = true
	if err := approve(ctx, c, "r1", "canary"); err == nil || !strings.Contains(err.Error(), "no right") || !strings.Contains(err.Error(), "updateruns/approve") {
		t.Errorf("approve without the right: %v", err)
	}
}

// TestUpdateRunPluginStatus: status prints the run, its stages, their clusters (from which
// version, the snapshot) and tasks (who approved); --watch stops once the run has ended.
func TestUpdateRunPluginStatus(t *testing.T) {
	run := updateRun("r1", v1alpha1.UpdateRunSucceeded,
		v1alpha1.StageStatus{Name: "canary", Phase: v1alpha1.StageSucceeded,
			Clusters: []v1alpha1.ClusterUpdateStatus{{Name: "c1", Phase: v1alpha1.ClusterUpdateSucceeded, FromVersion: "v1.30.1", Snapshot: "c1-r1"}},
			Tasks:    []v1alpha1.TaskStatus{{Type: v1alpha1.TaskApproval, Phase: v1alpha1.TaskSucceeded, ApprovedBy: "ann"}}})
	run.Status.NotSelected = []string{"stray"}
	var out bytes.Buffer
	c := clients{butler: fake.NewSimpleClientset(run), ns: "team-a", out: &out}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := watchRun(ctx, c, "r1", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"NAME PHASE DETAIL", "UpdateRun/r1  Succeeded  to v1.30.2", "├─Stage/canary", "├─TenantCluster/c1  Succeeded  from v1.30.1",
		"TenantClusterSnapshot/c1-r1", "└─Task/Approval  Succeeded  by ann", "NotSelected", "[stray]",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}

func updateRun(name string, phase v1alpha1.UpdateRunPhase, stages ...v1alpha1.StageStatus) *v1alpha1.UpdateRun {
	return &v1alpha1.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec:       v1alpha1.UpdateRunSpec{StrategyRef: v1alpha1.LocalObjectReference{Name: "gated"}, Target: v1alpha1.UpdateTarget{KubernetesVersion: "v1.30.2"}},
		Status:     v1alpha1.UpdateRunStatus{Phase: phase, Stages: stages, Strategy: &v1alpha1.UpdateStrategySpec{}},
	}
}
