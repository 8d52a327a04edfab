// Package updaterun is the controller of UpdateRuns: it moves the clusters an UpdateStrategy
// selects to the run's Kubernetes version, stage by stage, never more of a stage at once than
// its maxConcurrency, each through the same spec.kubernetesVersion update a user makes (so
// admission and the TenantCluster controller treat it as theirs), optionally after a snapshot, and
// counts a cluster done once it passes the stage's health gate. Between stages it runs the
// stage's tasks (timed waits, approvals through updateruns/approve). Every step is an Event on
// the run, and on the cluster it moves.
package updaterun

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// PlatformNamespace is where a run may select clusters of every namespace; a run anywhere else
// selects its own namespace's clusters only, so a Team's run never reaches another Team's.
const PlatformNamespace = "butler-system"

// defaultGateTimeout is how long a moved cluster may take to pass its gate when the strategy
// says nothing.
const defaultGateTimeout = 30 * time.Minute

// Controller runs UpdateRuns.
type Controller struct {
	butler     clientset.Interface
	runs       listers.UpdateRunLister
	strategies listers.UpdateStrategyLister
	clusters   listers.TenantClusterLister
	snapshots  listers.TenantClusterSnapshotLister
	events     events.EventRecorder
	clock      clock.PassiveClock
	queue      *controllerkit.Queue
	synced     []cache.InformerSynced
	// written tells a cached run older than this controller's own last status write: a pass on it
	// would decide again what the stored status already decided (and may move a cluster on it).
	written controllerkit.OwnWrites
}

// New builds the controller on the shared informers: a run is looked at when it changes, and
// when a cluster or a snapshot it may be waiting for changes.
func New(d *controllerkit.Deps) (*Controller, error) {
	b := d.ButlerInformers.Butler().V1alpha1()
	c := &Controller{butler: d.Butler, runs: b.UpdateRuns().Lister(), strategies: b.UpdateStrategies().Lister(),
		clusters: b.TenantClusters().Lister(), snapshots: b.TenantClusterSnapshots().Lister(),
		events: d.Recorder("butler-updaterun"), clock: d.Now()}
	c.queue = controllerkit.NewQueue("updaterun", c.reconcile)
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{b.UpdateRuns().Informer(), c.queue.Handler(controllerkit.ByKey)},
		{b.UpdateRuns().Informer(), c.written.ForgetDeleted()},
		{b.TenantClusters().Informer(), c.queue.Handler(c.activeRuns)},
		{b.TenantClusterSnapshots().Informer(), c.queue.Handler(c.activeRuns)},
		{b.UpdateStrategies().Informer(), c.queue.Handler(c.activeRuns)},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, h.inf.HasSynced)
	}
	return c, nil
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 1, c.synced...) }

// activeRuns are the runs not finished: a cluster's or a snapshot's change may move them on.
func (c *Controller) activeRuns(any) []string {
	all, _ := c.runs.List(k8slabels.Everything())
	var keys []string
	for _, r := range all {
		if !finished(r.Status.Phase) {
			keys = append(keys, r.Namespace+"/"+r.Name)
		}
	}
	return keys
}

func finished(p v1alpha1.UpdateRunPhase) bool {
	return p == v1alpha1.UpdateRunSucceeded || p == v1alpha1.UpdateRunFailed || p == v1alpha1.UpdateRunAbandoned
}

// pass is one reconcile of one run: the status it builds, the Events to send once it is
// stored, and how soon to look again.
type pass struct {
	run   *v1alpha1.UpdateRun
	key   string
	now   time.Time
	notes []note
	after time.Duration
}

type note struct {
	regarding   runtime.Object
	kind        string
	reason, msg string
}

func (p *pass) event(kind, reason, msg string) {
	p.notes = append(p.notes, note{p.run, kind, reason, msg})
}
func (p *pass) clusterEvent(tc runtime.Object, kind, reason, msg string) {
	p.notes = append(p.notes, note{tc, kind, reason, msg})
}

// recheck asks to be looked at again within d (the earliest of all asks wins).
func (p *pass) recheck(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.after == 0 || d < p.after {
		p.after = d
	}
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	stored, err := c.runs.UpdateRuns(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if stored.DeletionTimestamp != nil || finished(stored.Status.Phase) {
		return nil
	}
	if c.written.Stale(stored.UID, stored.ResourceVersion) {
		return controllerkit.ErrStaleCopy
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("updateRun", key))
	p := &pass{run: stored.DeepCopy(), key: key, now: c.clock.Now()}
	if err := c.step(ctx, p); err != nil {
		return err
	}
	if err := c.writeStatus(ctx, stored, p); err != nil {
		return err
	}
	if p.after > 0 && !finished(p.run.Status.Phase) {
		c.queue.AddAfter(key, p.after)
	}
	return nil
}

// step moves the run as far as it can now, as named steps: freeze the strategy and plan the
// stages once; obey the state asked for; follow the clusters in flight; then finish the
// current stage (its gate, failures and tasks) or start more of its clusters.
func (c *Controller) step(ctx context.Context, p *pass) error {
	if p.run.Status.Strategy == nil {
		if !c.freezeAndPlan(p) {
			return nil
		}
	}
	switch p.run.Spec.State {
	case v1alpha1.UpdateRunStatePlan:
		setPhase(p, v1alpha1.UpdateRunPlanned, "planned; set spec.state to Run to start")
		return nil
	case v1alpha1.UpdateRunStateAbandon:
		return c.abandon(ctx, p)
	}
	if p.run.Status.StartTime == nil {
		p.run.Status.StartTime = &metav1.Time{Time: p.now}
		p.event(corev1.EventTypeNormal, "Started", "run started to "+p.run.Spec.Target.KubernetesVersion)
	}
	if err := c.followClusters(ctx, p); err != nil {
		return err
	}
	if p.run.Spec.State == v1alpha1.UpdateRunStatePause {
		setPhase(p, v1alpha1.UpdateRunPaused, "paused by spec.state; clusters already moving go on")
		return nil
	}
	return c.advance(ctx, p)
}

// advance works on the first stage not done, and on to the next when it finishes.
func (c *Controller) advance(ctx context.Context, p *pass) error {
	for i := range p.run.Status.Stages {
		st := &p.run.Status.Stages[i]
		if st.Phase == v1alpha1.StageSucceeded || st.Phase == v1alpha1.StageFailed {
			continue
		}
		spec := p.run.Status.Strategy.Stages[i]
		if st.Phase == v1alpha1.StagePending || st.Phase == "" {
			st.Phase = v1alpha1.StageRunning
			p.event(corev1.EventTypeNormal, "StageStarted", "stage "+st.Name+" started")
		}
		done, err := c.workStage(ctx, p, st, spec)
		if err != nil || !done {
			return err
		}
	}
	p.run.Status.CompletionTime = &metav1.Time{Time: p.now}
	setPhase(p, v1alpha1.UpdateRunSucceeded, "every stage is done")
	p.event(corev1.EventTypeNormal, "Succeeded", "run to "+p.run.Spec.Target.KubernetesVersion+" succeeded")
	return nil
}

func setPhase(p *pass, phase v1alpha1.UpdateRunPhase, msg string) {
	p.run.Status.Phase, p.run.Status.Message = phase, msg
}

// writeStatus stores the status built, then sends its Events: a status that could not be
// stored is built again, and its Events with it.
func (c *Controller) writeStatus(ctx context.Context, stored *v1alpha1.UpdateRun, p *pass) error {
	if !apiequality.Semantic.DeepEqual(stored.Status, p.run.Status) {
		updated, err := c.butler.ButlerV1alpha1().UpdateRuns(p.run.Namespace).UpdateStatus(ctx, p.run, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		c.written.Wrote(stored.UID, stored.ResourceVersion, updated.ResourceVersion)
	}
	for _, n := range mergeNotes(p.notes) {
		var related runtime.Object
		if n.regarding != runtime.Object(p.run) {
			related = p.run
		}
		c.events.Eventf(n.regarding, related, n.kind, n.reason, "UpdateRun", "%s", controllerkit.EventNote(n.msg))
	}
	return nil
}

// mergeNotes joins the notes of one pass about one object with one type and reason into one,
// in order: client-go's recorder makes such Events (same object and resourceVersion, same
// reason) a series and keeps only one note, so a pass ending two stages would lose one (and
// with it who approved).
func mergeNotes(notes []note) []note {
	var out []note
	for _, n := range notes {
		i := slices.IndexFunc(out, func(o note) bool {
			return o.regarding == n.regarding && o.kind == n.kind && o.reason == n.reason
		})
		if i < 0 {
			out = append(out, n)
		} else {
			out[i].msg += "; " + n.msg
		}
	}
	return out
}
