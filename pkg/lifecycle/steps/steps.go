// Package steps writes a long reconcile as a list of named steps, in the manner of Gardener's
// flow: Ensure runs every step forward, each owning one status condition; a step runs once the
// steps it comes after are done, so independent ones make progress together; Cleanup runs the
// steps backwards and moves past a step only once what it made is gone.
package steps

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Result is what a step's Ensure found.
type Result struct {
	// Done: what the step makes exists and is ready; its condition is True.
	Done bool
	// Reason (CamelCase) and Message explain the condition, above all when it is not Done.
	Reason, Message string
	// Failed: the step cannot make progress by itself; a person has to act (Message says how).
	// The reconcile is retried with backoff, and the phase is Failed.
	Failed bool
	// WaitingFor names the steps this one comes after that were not Done, or Done with
	// StoreFirst, so it did not run (set by Plan.Ensure; empty when the step ran).
	WaitingFor []string
	// StoreFirst, with Done: the steps after this one wait for the next run, so that the status
	// says this step is done before slower steps run; the status write brings the reconcile
	// back. For a step whose readiness others wait on (the control plane), set when it turns
	// Done, not on every run.
	StoreFirst bool
}

// Ran says whether the step's Ensure ran, rather than waiting for the steps it comes after:
// what it found (in the plan's state) is of this run.
func (r Result) Ran() bool { return len(r.WaitingFor) == 0 }

// State is where a step stands, as a value: what status, progress and Events are built on,
// rather than on its reason's text.
type State string

const (
	// StateWaiting: not done yet; an event brings the reconcile back.
	StateWaiting State = "Waiting"
	// StateDone: what the step makes is there and ready.
	StateDone State = "Done"
	// StateFailed: a person has to act.
	StateFailed State = "Failed"
)

// State is the Result's state.
func (r Result) State() State {
	switch {
	case r.Done:
		return StateDone
	case r.Failed:
		return StateFailed
	}
	return StateWaiting
}

// BlockedReason is the reason of a step that waits for the steps it comes after: it has not
// started. No step's Ensure gives it.
const BlockedReason = "Waiting"

// Ready is a Done Result.
func Ready(reason, format string, args ...any) Result {
	return Result{Done: true, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Waiting is a not-Done Result that resolves by itself (an event brings the reconcile back).
func Waiting(reason, format string, args ...any) Result {
	return Result{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Failure is a not-Done Result that needs a person.
func Failure(reason, format string, args ...any) Result {
	return Result{Reason: reason, Message: fmt.Sprintf(format, args...), Failed: true}
}

// Step is one named part of a reconcile over the state S.
type Step[S any] struct {
	// Name names the step in progress messages ("control plane").
	Name string
	// Condition is the status condition the step owns; empty for none.
	Condition string
	// After names the steps that must be Done before this one runs.
	After []string
	// ReadsOnly says the step only reads (what is watched, mostly) and writes nothing: a
	// StoreFirst step it comes after does not hold it back, so what it finds goes in the same
	// status write.
	ReadsOnly bool
	// Ensure makes what the step makes and says whether it is ready. An error is transient:
	// the reconcile is retried with backoff.
	Ensure func(ctx context.Context, s S) (Result, error)
	// Cleanup removes what the step made; it reports true once all of it is gone. Nil: nothing.
	Cleanup func(ctx context.Context, s S) (bool, error)
}

// Plan is an ordered list of steps.
type Plan[S any] []Step[S]

// Outcome is what a forward run found.
type Outcome struct {
	// Results holds each step's Result by name; steps that did not run are absent.
	Results map[string]Result
	// Conditions are the steps' conditions: True when Done, False with the step's reason while
	// not, False "Waiting" while a step waits for another.
	Conditions []metav1.Condition
	// First is the first step in order that is not Done ("" when all are).
	First string
	// Done counts the steps that are Done.
	Done int
	// Failed says a step needs a person; FirstFailed is the first such step in order.
	Failed      bool
	FirstFailed string
}

// Ran says whether the named step's Ensure ran in this forward run: false for a step that
// waited for the steps it comes after, or that an earlier error kept from running.
func (o Outcome) Ran(step string) bool {
	r, ok := o.Results[step]
	return ok && r.Ran()
}

// StepError is the error a step's Ensure returned, which stopped the forward run.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Ensure runs the plan forward. It stops at the first error, a *StepError.
func (p Plan[S]) Ensure(ctx context.Context, s S, generation int64) (Outcome, error) {
	out := Outcome{Results: map[string]Result{}}
	for _, step := range p {
		var notDone, toStore []string
		for _, dep := range step.After {
			switch r := out.Results[dep]; {
			case !r.Done:
				notDone = append(notDone, dep)
			case r.StoreFirst && !step.ReadsOnly:
				toStore = append(toStore, dep)
			}
		}
		var r Result
		switch {
		case len(notDone) > 0:
			r = Waiting(BlockedReason, "waiting for the %s", strings.Join(notDone, " and the "))
			r.WaitingFor = append(notDone, toStore...)
		case len(toStore) > 0:
			r = Waiting(BlockedReason, "the %s is ready; this step runs once the status says so", strings.Join(toStore, " and the "))
			r.WaitingFor = toStore
		default:
			var err error
			if r, err = step.Ensure(ctx, s); err != nil {
				return out, &StepError{Step: step.Name, Err: err}
			}
			r.WaitingFor = nil
		}
		out.Results[step.Name] = r
		if r.Done {
			out.Done++
		} else if out.First == "" {
			out.First = step.Name
		}
		if r.Failed && !out.Failed {
			out.FirstFailed = step.Name
		}
		out.Failed = out.Failed || r.Failed
		if step.Condition != "" {
			c := metav1.Condition{Type: step.Condition, Status: metav1.ConditionFalse, Reason: r.Reason,
				Message: r.Message, ObservedGeneration: generation}
			if r.Done {
				c.Status = metav1.ConditionTrue
			}
			if c.Reason == "" {
				c.Reason = "Unknown"
			}
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out, nil
}

// Progress is the share of steps Done, in percent.
func (o Outcome) Progress(total int) int32 {
	if total == 0 {
		return 100
	}
	return int32(o.Done * 100 / total)
}

// Cleanup runs the plan backwards. It returns the name of the step still cleaning up, or ""
// once everything is gone.
func (p Plan[S]) Cleanup(ctx context.Context, s S) (string, error) {
	for _, step := range slices.Backward(p) {
		if step.Cleanup == nil {
			continue
		}
		gone, err := step.Cleanup(ctx, s)
		if err != nil {
			return step.Name, fmt.Errorf("cleaning up the %s: %w", step.Name, err)
		}
		if !gone {
			return step.Name, nil
		}
	}
	return "", nil
}

// SetConditions merges conds into *into (LastTransitionTime moves only on a status change).
func SetConditions(into *[]metav1.Condition, conds ...metav1.Condition) {
	for _, c := range conds {
		meta.SetStatusCondition(into, c)
	}
}

// Transition is a step whose condition moved in a forward run: it started, became done, is no
// longer done, failed anew, or (after a failure) moved on to another reason.
type Transition struct {
	Step, Condition string
	// From is the state the stored condition said: "" when there was none or the step waited
	// for the steps it comes after (it had not started), StateDone for a True one,
	// StateWaiting for a False one (which includes failed).
	From   State
	Result Result
}

// Transitions are the steps with a condition whose state moved from what previous (the stored
// conditions) says, in plan order: one Event per state change, not one per reconcile or per
// step of a wait. Left out: a step that did not run (waiting for the steps it comes after; its
// Event comes when it starts) unless it was done, a wait that moved to another reason (the
// condition says which), and the same wait or failure again. failedBefore says the stored status
// was failed: then a False condition may be a failure, and any other reason is a move on.
func (p Plan[S]) Transitions(previous []metav1.Condition, failedBefore bool, out Outcome) []Transition {
	var ts []Transition
	for _, step := range p {
		r, ran := out.Results[step.Name]
		if step.Condition == "" || !ran {
			continue
		}
		old := meta.FindStatusCondition(previous, step.Condition)
		var from State
		switch {
		case old == nil || (old.Status != metav1.ConditionTrue && old.Reason == BlockedReason):
		case old.Status == metav1.ConditionTrue:
			from = StateDone
		default:
			from = StateWaiting
		}
		switch {
		case !r.Ran() && from != StateDone:
			continue
		case from == "", (from == StateDone) != r.Done:
		case r.Done, old.Reason == r.Reason:
			continue
		case r.Failed, failedBefore:
		default:
			continue
		}
		ts = append(ts, Transition{Step: step.Name, Condition: step.Condition, From: from, Result: r})
	}
	return ts
}
