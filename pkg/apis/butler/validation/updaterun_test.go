package validation

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func fieldsOf(errs []string) []string { slices.Sort(errs); return errs }

// Bad strategies and runs are 422s naming the field: a stage without a name or twice the same,
// a maxConcurrency of 0 or over 100%, a holdFor over 24h, a task with neither or both kinds, a
// selector that does not parse; a run's target may not change after create.
func TestUpdateRunAndStrategyValidation(t *testing.T) {
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	good := butler.UpdateStage{Name: "canary", MaxConcurrency: ptr.To(intstr.FromString("50%")),
		HealthGate: &butler.HealthGate{HoldFor: d(2 * time.Minute)}, AfterStage: []butler.UpdateTask{{Approval: &butler.ApprovalTask{}}}}
	bad := []butler.UpdateStage{
		good,
		{Name: "canary", MaxConcurrency: ptr.To(intstr.FromInt32(0))},
		{Name: "Prod", MaxConcurrency: ptr.To(intstr.FromString("150%"))},
		{Name: "late", HealthGate: &butler.HealthGate{HoldFor: d(25 * time.Hour), MaxFailed: -1}},
		{Name: "tasks", AfterStage: []butler.UpdateTask{{}, {Wait: &butler.WaitTask{Duration: d(time.Second)}, Approval: &butler.ApprovalTask{}}}},
		{Name: "sel", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}},
	}
	s := &butler.UpdateStrategy{ObjectMeta: metav1.ObjectMeta{Name: "rings", Namespace: "team-a"}, Spec: butler.UpdateStrategySpec{Stages: bad}}
	var got []string
	for _, e := range ValidateUpdateStrategy(s) {
		got = append(got, e.Field)
	}
	want := []string{"spec.stages[1].maxConcurrency", "spec.stages[1].name", "spec.stages[2].maxConcurrency", "spec.stages[2].name",
		"spec.stages[3].healthGate.holdFor", "spec.stages[3].healthGate.maxFailed", "spec.stages[4].afterStage[0]", "spec.stages[4].afterStage[1]",
		"spec.stages[5].selector.matchLabels"}
	if got = fieldsOf(got); !slices.Equal(got, want) {
		t.Errorf("strategy errors on %v\nwant %v", got, want)
	}
	s.Spec.Stages = bad[:1]
	if errs := ValidateUpdateStrategy(s); len(errs) > 0 {
		t.Errorf("a good strategy: %v", errs)
	}

	run := &butler.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "team-a", ResourceVersion: "1"},
		Spec: butler.UpdateRunSpec{StrategyRef: butler.LocalObjectReference{Name: "rings"}, Target: butler.UpdateTarget{KubernetesVersion: "v1.30.2"},
			OnFailure: butler.UpdateFailurePause, State: butler.UpdateRunStateRun}}
	if errs := ValidateUpdateRun(run); len(errs) > 0 {
		t.Fatalf("a good run: %v", errs)
	}
	noStrategy := run.DeepCopy()
	noStrategy.Spec.StrategyRef.Name, noStrategy.Spec.Target.KubernetesVersion = "", "1.30"
	got = nil
	for _, e := range ValidateUpdateRun(noStrategy) {
		got = append(got, e.Field)
	}
	if want := []string{"spec.strategyRef.name", "spec.target.kubernetesVersion"}; !slices.Equal(fieldsOf(got), want) {
		t.Errorf("run errors on %v, want %v", got, want)
	}
	moved := run.DeepCopy()
	moved.Spec.Target.KubernetesVersion, moved.Spec.State = "v1.31.0", butler.UpdateRunStatePause
	if errs := ValidateUpdateRunUpdate(moved, run); len(errs) != 1 || errs[0].Field != "spec" {
		t.Errorf("changing a run's target: %v, want one error on spec", errs)
	}
	paused := run.DeepCopy()
	paused.Spec.State = butler.UpdateRunStatePause
	if errs := ValidateUpdateRunUpdate(paused, run); len(errs) > 0 {
		t.Errorf("pausing a run: %v", errs)
	}
	abandoned := run.DeepCopy()
	abandoned.Spec.State = butler.UpdateRunStateAbandon
	if errs := ValidateUpdateRunUpdate(run, abandoned); len(errs) != 1 || errs[0].Field != "spec.state" {
		t.Errorf("resuming an abandoned run: %v", errs)
	}
}
