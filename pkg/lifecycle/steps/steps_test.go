package steps

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type state struct {
	ready   map[string]bool
	gone    map[string]bool
	ran     []string
	cleaned []string
}

func step(name, cond string, after ...string) Step[*state] {
	return Step[*state]{Name: name, Condition: cond, After: after,
		Ensure: func(_ context.Context, s *state) (Result, error) {
			s.ran = append(s.ran, name)
			if s.ready[name] {
				return Ready("Ready", "%s is ready", name), nil
			}
			return Waiting("NotReady", "%s is not ready", name), nil
		},
		Cleanup: func(_ context.Context, s *state) (bool, error) {
			s.cleaned = append(s.cleaned, name)
			return s.gone[name], nil
		},
	}
}

func TestEnsureRunsIndependentStepsAndWaitsForDependencies(t *testing.T) {
	p := Plan[*state]{step("ns", "NS"), step("cp", "CP", "ns"), step("infra", "Infra", "ns"), step("workers", "W", "cp", "infra")}
	s := &state{ready: map[string]bool{"ns": true, "infra": true}}
	out, err := p.Ensure(context.Background(), s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.ran, []string{"ns", "cp", "infra"}) {
		t.Errorf("ran %v, want ns, cp, infra (workers waits for cp)", s.ran)
	}
	if out.First != "cp" || out.Done != 2 || out.Failed {
		t.Errorf("first %q done %d failed %v", out.First, out.Done, out.Failed)
	}
	w := meta.FindStatusCondition(out.Conditions, "W")
	if w == nil || w.Status != metav1.ConditionFalse || w.Reason != "Waiting" || w.Message != "waiting for the cp" || w.ObservedGeneration != 3 {
		t.Errorf("workers condition %+v", w)
	}
	if c := meta.FindStatusCondition(out.Conditions, "Infra"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("infra condition %+v", c)
	}
	if out.Progress(len(p)) != 50 {
		t.Errorf("progress %d", out.Progress(len(p)))
	}
	// Whether a step ran is a value, whatever its reason says.
	for name, ran := range map[string]bool{"ns": true, "cp": true, "infra": true, "workers": false, "absent": false} {
		if out.Ran(name) != ran {
			t.Errorf("Ran(%s) = %v, want %v", name, out.Ran(name), ran)
		}
	}
	if got := out.Results["workers"].WaitingFor; !slices.Equal(got, []string{"cp"}) {
		t.Errorf("workers waits for %v, want [cp]", got)
	}
}

// A step that ran and returned the reason "Waiting" still ran.
func TestRanIsNotTheReason(t *testing.T) {
	p := Plan[*state]{{Name: "a", Ensure: func(context.Context, *state) (Result, error) {
		return Waiting("Waiting", "a step's own reason"), nil
	}}}
	out, err := p.Ensure(context.Background(), &state{}, 1)
	if err != nil || !out.Ran("a") || out.Results["a"].State() != StateWaiting {
		t.Fatalf("out %+v err %v", out, err)
	}
}

func TestEnsureStopsAtAnError(t *testing.T) {
	boom := errors.New("boom")
	p := Plan[*state]{{Name: "a", Ensure: func(context.Context, *state) (Result, error) { return Result{}, boom }}, step("b", "B")}
	s := &state{}
	out, err := p.Ensure(context.Background(), s, 1)
	var stepErr *StepError
	if !errors.Is(err, boom) || !errors.As(err, &stepErr) || stepErr.Step != "a" || err.Error() != "a: boom" {
		t.Fatalf("err %v", err)
	}
	if out.Ran("a") || out.Ran("b") {
		t.Errorf("a step counted as run after the error: %+v", out.Results)
	}
	if len(s.ran) != 0 {
		t.Errorf("b ran after a failed: %v", s.ran)
	}
}

func TestFailureMarksTheOutcome(t *testing.T) {
	p := Plan[*state]{{Name: "a", Condition: "A", Ensure: func(context.Context, *state) (Result, error) {
		return Failure("ProviderConfigNotFound", "ProviderConfig x/y does not exist"), nil
	}}}
	out, err := p.Ensure(context.Background(), &state{}, 1)
	if err != nil || !out.Failed || out.Conditions[0].Reason != "ProviderConfigNotFound" {
		t.Fatalf("out %+v err %v", out, err)
	}
}

func TestCleanupRunsBackwardsAndWaits(t *testing.T) {
	p := Plan[*state]{step("ns", ""), step("cp", ""), step("workers", "")}
	s := &state{gone: map[string]bool{"workers": true}}
	left, err := p.Cleanup(context.Background(), s)
	if err != nil || left != "cp" {
		t.Fatalf("left %q err %v", left, err)
	}
	if !slices.Equal(s.cleaned, []string{"workers", "cp"}) {
		t.Errorf("cleaned %v", s.cleaned)
	}
	s = &state{gone: map[string]bool{"workers": true, "cp": true, "ns": true}}
	if left, err := p.Cleanup(context.Background(), s); err != nil || left != "" {
		t.Fatalf("left %q err %v", left, err)
	}
}

// Transitions are the steps whose state moved, judged by the Results' values: one per state
// change, none for a step that has not started, for a wait moving to another reason, or for the
// same failure again.
func TestTransitions(t *testing.T) {
	plan := Plan[struct{}]{
		{Name: "a", Condition: "AReady"}, {Name: "b", Condition: "BReady"}, {Name: "c", Condition: "CReady"},
		{Name: "d"}, {Name: "e", Condition: "EReady"}, {Name: "f", Condition: "FReady"}, {Name: "g", Condition: "GReady"},
		{Name: "h", Condition: "HReady"}, {Name: "i", Condition: "IReady"}, {Name: "j", Condition: "JReady"},
		{Name: "k", Condition: "KReady"},
	}
	previous := []metav1.Condition{
		{Type: "AReady", Status: metav1.ConditionFalse, Reason: "NotYet"},
		{Type: "BReady", Status: metav1.ConditionTrue, Reason: "Ready"},
		{Type: "CReady", Status: metav1.ConditionFalse, Reason: "NotYet"},
		{Type: "FReady", Status: metav1.ConditionFalse, Reason: BlockedReason},
		{Type: "GReady", Status: metav1.ConditionFalse, Reason: "NotYet"},
		{Type: "HReady", Status: metav1.ConditionFalse, Reason: "Broken"},
		{Type: "IReady", Status: metav1.ConditionTrue, Reason: "Ready"},
		{Type: "KReady", Status: metav1.ConditionFalse, Reason: BlockedReason},
	}
	blocked := Waiting(BlockedReason, "waiting for the a")
	blocked.WaitingFor = []string{"a"}
	out := Outcome{Results: map[string]Result{
		"a": Ready("Ready", "a is ready"),         // Waiting -> Done
		"b": Ready("Ready", "b still"),            // unchanged
		"c": Failure("Broken", "c broke"),         // Waiting -> Failed
		"d": Waiting("X", "no condition"),         // no condition: none
		"e": Waiting("Starting", "e new"),         // no previous condition: starts
		"f": Waiting("Starting", "f starts"),      // was blocked, runs now: starts
		"g": Waiting("Later", "g another reason"), // the same wait, another reason: none
		"h": Failure("Broken", "h broke again"),   // the same failure: none
		"i": blocked,                              // done, now blocked: no longer done
		"j": blocked,                              // blocked from the start: none
		"k": blocked,                              // still blocked: none
	}}
	got := plan.Transitions(previous, false, out)
	want := []struct {
		step     string
		from, to State
	}{{"a", StateWaiting, StateDone}, {"c", StateWaiting, StateFailed}, {"e", "", StateWaiting}, {"f", "", StateWaiting},
		{"i", StateDone, StateWaiting}}
	if len(got) != len(want) {
		t.Fatalf("transitions %+v, want %+v", got, want)
	}
	for i, w := range want {
		if got[i].Step != w.step || got[i].From != w.from || got[i].Result.State() != w.to {
			t.Errorf("transition %d: %s %s -> %s, want %s %s -> %s", i, got[i].Step, got[i].From, got[i].Result.State(), w.step, w.from, w.to)
		}
	}

	// Out of a failure, another reason is a move on.
	got = plan.Transitions(previous, true, out)
	if len(got) != len(want)+1 || got[4].Step != "g" {
		t.Errorf("after a failure: transitions %+v, want g's new reason among them", got)
	}
}

// A step Done with StoreFirst has its condition True, and the steps after it wait for the next
// run (they did not run, so nothing of them is reported as found); independent ones still run,
// and so do those that only read.
func TestStoreFirstHoldsBackTheStepsAfterIt(t *testing.T) {
	cp := step("cp", "CP", "ns")
	ensure := cp.Ensure
	cp.Ensure = func(ctx context.Context, s *state) (Result, error) {
		r, err := ensure(ctx, s)
		r.StoreFirst = r.Done
		return r, err
	}
	reader := step("reader", "", "cp")
	reader.ReadsOnly = true
	p := Plan[*state]{step("ns", "NS"), cp, step("infra", "Infra", "ns"), step("workers", "W", "cp"), step("addons", "A", "cp", "infra"), reader}
	s := &state{ready: map[string]bool{"ns": true, "cp": true, "infra": true, "workers": true, "addons": true, "reader": true}}
	out, err := p.Ensure(context.Background(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.ran, []string{"ns", "cp", "infra", "reader"}) {
		t.Errorf("ran %v, want ns, cp, infra and the reader (ReadsOnly)", s.ran)
	}
	if c := meta.FindStatusCondition(out.Conditions, "CP"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("cp condition %+v, want True", c)
	}
	w := meta.FindStatusCondition(out.Conditions, "W")
	if w == nil || w.Status != metav1.ConditionFalse || w.Reason != "Waiting" || w.Message != "the cp is ready; this step runs once the status says so" {
		t.Errorf("workers condition %+v", w)
	}
	if out.Ran("workers") || out.Ran("addons") || out.First != "workers" || out.Done != 4 {
		t.Errorf("ran workers %v, addons %v; first %q, done %d", out.Ran("workers"), out.Ran("addons"), out.First, out.Done)
	}
	// Without StoreFirst (the status says so already) everything runs.
	s.ran = nil
	cp.Ensure = ensure
	p[1] = cp
	if out, err = p.Ensure(context.Background(), s, 1); err != nil || out.First != "" || len(s.ran) != len(p) {
		t.Errorf("first %q, ran %v, err %v", out.First, s.ran, err)
	}
}
