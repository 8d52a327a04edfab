package kubectlbutler

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// `kubectl butler upgrade` drives the UpdateRun API and nothing else: start creates a run,
// approve creates updateruns/approve, status reads the run. RBAC and admission judge each
// request as they judge kubectl's (a Team viewer's approval is the API's 403).

func newUpgradeCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Upgrade clusters stage by stage with an UpdateRun: start, status, approve",
	}
	cmd.AddCommand(newUpgradeStartCommand(o), newUpgradeStatusCommand(o), newUpgradeApproveCommand(o))
	return cmd
}

// runRequest is what `upgrade start` asks for.
type runRequest struct {
	name, to, onFailure string
	snapshot, plan      bool
}

func newUpgradeStartCommand(o *Options) *cobra.Command {
	var r runRequest
	cmd := verb(o, "start STRATEGY --to VERSION [--name RUN] [--snapshot] [--on-failure Pause|Abandon|Continue] [--plan]",
		"Create an UpdateRun that moves the strategy's clusters to VERSION", func(ctx context.Context, c clients, strategy string) error {
			return r.start(ctx, c, strategy)
		})
	cmd.Flags().StringVar(&r.to, "to", "", "the Kubernetes version to move the clusters to (one the catalog offers)")
	cmd.Flags().StringVar(&r.name, "name", "", "the run's name (default STRATEGY- and a generated suffix)")
	cmd.Flags().BoolVar(&r.snapshot, "snapshot", false, "take a TenantClusterSnapshot of each cluster before it moves")
	cmd.Flags().StringVar(&r.onFailure, "on-failure", "", "Pause (the API's default), Abandon or Continue")
	cmd.Flags().BoolVar(&r.plan, "plan", false, "only compute the plan (state Plan): move nothing")
	return cmd
}

func (r *runRequest) start(ctx context.Context, c clients, strategy string) error {
	if r.to == "" {
		return fmt.Errorf("--to VERSION is required")
	}
	run := &v1alpha1.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: c.ns},
		Spec: v1alpha1.UpdateRunSpec{
			StrategyRef:           v1alpha1.LocalObjectReference{Name: strategy},
			Target:                v1alpha1.UpdateTarget{KubernetesVersion: r.to},
			SnapshotBeforeUpgrade: r.snapshot,
			OnFailure:             v1alpha1.UpdateFailurePolicy(r.onFailure),
		},
	}
	if r.name == "" {
		run.GenerateName = strategy + "-"
	}
	if r.plan {
		run.Spec.State = v1alpha1.UpdateRunStatePlan
	}
	created, err := c.butler.ButlerV1alpha1().UpdateRuns(c.ns).Create(ctx, run, metav1.CreateOptions{})
	if err != nil {
		return explainKind(err, "creating an UpdateRun (updateruns) of strategy "+strategy, c.ns, "UpdateRun", run.Name+run.GenerateName)
	}
	fmt.Fprintf(c.out, "updaterun.butler.butlerlabs.dev/%s created: strategy %s to %s (follow it: kubectl butler upgrade status %s -n %s --watch)\n",
		created.Name, strategy, r.to, created.Name, c.ns)
	return nil
}

func newUpgradeApproveCommand(o *Options) *cobra.Command {
	var stage string
	cmd := verb(o, "approve RUN [--stage STAGE]", "Approve the stage of an UpdateRun that waits for approval (updateruns/approve)",
		func(ctx context.Context, c clients, run string) error {
			return approve(ctx, c, run, stage)
		})
	cmd.Flags().StringVar(&stage, "stage", "", "the stage to approve (default: the one that waits)")
	return cmd
}

// approve approves stage of the run, or the stage that waits when none is named. The API still
// decides: a stage that does not wait is its 409, an approver without the right its 403.
func approve(ctx context.Context, c clients, name, stage string) error {
	runs := c.butler.ButlerV1alpha1().UpdateRuns(c.ns)
	if stage == "" {
		run, err := runs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return explainKind(err, "approve", c.ns, "UpdateRun", name)
		}
		if stage = waitingStage(run); stage == "" {
			return fmt.Errorf("approve: no stage of UpdateRun %q waits for approval (the run is %s); name one with --stage", name, phaseOf(run))
		}
	}
	approval := &v1alpha1.UpdateRunApproval{Spec: v1alpha1.UpdateRunApprovalSpec{Stage: stage}}
	done, err := runs.Approve(ctx, name, approval, metav1.CreateOptions{})
	if err != nil {
		return explainKind(err, "approving stage "+stage+" (updateruns/approve)", c.ns, "UpdateRun", name)
	}
	fmt.Fprintf(c.out, "updaterun.butler.butlerlabs.dev/%s: stage %s approved by %s\n", name, stage, done.Status.ApprovedBy)
	return nil
}

// waitingStage is the stage whose approval task waits, "" when none does.
func waitingStage(run *v1alpha1.UpdateRun) string {
	for _, s := range run.Status.Stages {
		if slices.ContainsFunc(s.Tasks, func(t v1alpha1.TaskStatus) bool {
			return t.Type == v1alpha1.TaskApproval && t.Phase == v1alpha1.TaskWaiting
		}) {
			return s.Name
		}
	}
	return ""
}

func newUpgradeStatusCommand(o *Options) *cobra.Command {
	var watch bool
	var every time.Duration
	cmd := verb(o, "status RUN [--watch]", "Print an UpdateRun as a tree: its stages, their clusters and tasks",
		func(ctx context.Context, c clients, run string) error {
			if !watch {
				return printRun(ctx, c, run)
			}
			return watchRun(ctx, c, run, every)
		})
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "print again on each change until the run ends or pauses")
	cmd.Flags().DurationVar(&every, "interval", 2*time.Second, "how often --watch reads the run")
	return cmd
}

// watchRun prints the run whenever it changed, until it ends or pauses (a person must act).
func watchRun(ctx context.Context, c clients, name string, every time.Duration) error {
	seen, printed := "", false
	return wait.PollUntilContextCancel(ctx, every, true, func(ctx context.Context) (bool, error) {
		run, err := c.butler.ButlerV1alpha1().UpdateRuns(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, explainKind(err, "status", c.ns, "UpdateRun", name)
		}
		if !printed || run.ResourceVersion != seen {
			seen, printed = run.ResourceVersion, true
			if err := renderRun(c.out, run); err != nil {
				return false, err
			}
			fmt.Fprintln(c.out)
		}
		return runStopped(run.Status.Phase), nil
	})
}

// runStopped: the run will not move again without a person (or at all).
func runStopped(phase v1alpha1.UpdateRunPhase) bool {
	switch phase {
	case v1alpha1.UpdateRunSucceeded, v1alpha1.UpdateRunFailed, v1alpha1.UpdateRunAbandoned, v1alpha1.UpdateRunPaused:
		return true
	}
	return false
}

func printRun(ctx context.Context, c clients, name string) error {
	run, err := c.butler.ButlerV1alpha1().UpdateRuns(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return explainKind(err, "status", c.ns, "UpdateRun", name)
	}
	return renderRun(c.out, run)
}

// renderRun prints the run's tree: PHASE is the run's, a stage's, a cluster's or a task's phase;
// DETAIL the target, the version a cluster came from or who approved.
func renderRun(w io.Writer, run *v1alpha1.UpdateRun) error {
	return renderTable(w, "NAME\tPHASE\tDETAIL\tSINCE\tMESSAGE", runTree(run), time.Now())
}

// runTree is UpdateRun → stages → (clusters, tasks), a Node's Ready holding the phase and its
// Reason the detail.
func runTree(run *v1alpha1.UpdateRun) *Node {
	root := &Node{Name: "UpdateRun/" + run.Name, Ready: string(phaseOf(run)), Reason: "to " + run.Spec.Target.KubernetesVersion,
		Message: run.Status.Message, Since: timeOf(run.Status.StartTime)}
	for _, s := range run.Status.Stages {
		stage := &Node{Name: "Stage/" + s.Name, Ready: string(s.Phase)}
		for _, cl := range s.Clusters {
			n := &Node{Name: "TenantCluster/" + cl.Name, Ready: string(cl.Phase), Message: cl.Message, Since: timeOf(cl.StartTime)}
			if cl.FromVersion != "" {
				n.Reason = "from " + cl.FromVersion
			}
			if cl.Snapshot != "" {
				n.Add(&Node{Name: "TenantClusterSnapshot/" + cl.Snapshot})
			}
			stage.Add(n)
		}
		for _, t := range s.Tasks {
			n := &Node{Name: "Task/" + t.Type, Ready: t.Phase, Since: timeOf(t.StartTime)}
			if t.ApprovedBy != "" {
				n.Reason = "by " + t.ApprovedBy
			}
			stage.Add(n)
		}
		root.Add(stage)
	}
	if len(run.Status.NotSelected) > 0 {
		root.Add(&Node{Name: "NotSelected", Message: fmt.Sprint(run.Status.NotSelected)})
	}
	return root
}

func phaseOf(run *v1alpha1.UpdateRun) v1alpha1.UpdateRunPhase {
	if run.Status.Phase == "" {
		return "NotStarted"
	}
	return run.Status.Phase
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
