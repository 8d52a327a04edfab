package addons

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/klog/v2"
)

// DefaultTimeout bounds an install, upgrade, rollback or uninstall when the request sets none.
const DefaultTimeout = 5 * time.Minute

// maxHistory is how many revisions of a release Helm keeps.
const maxHistory = 10

// OwnerLabel is the release label naming the object (its UID) the release belongs to, so two
// objects asking for the same release in one cluster are told apart.
const OwnerLabel = "butler.butlerlabs.dev/owner-uid"

// RestrictedLabel marks (with "true") a release installed under the allow-list, so its
// uninstall goes through the allow-list too.
const RestrictedLabel = "butler.butlerlabs.dev/restricted"

// Target is a tenant cluster as the engine reaches it.
type Target struct {
	// Cluster identifies the cluster for the Configuration cache, e.g. namespace/name/uid.
	Cluster string
	// Kubeconfig is an admin kubeconfig of the cluster (its current context is used).
	Kubeconfig []byte
}

// ReleaseKey names a release in a cluster.
type ReleaseKey struct {
	Name, Namespace string
}

// Request is the desired state of one release.
type Request struct {
	Target  Target
	Release ReleaseKey
	// CreateNamespace creates the release namespace on install.
	CreateNamespace bool
	Chart           ChartRef
	// Values are the merged values (Merge) the release must carry.
	Values Values
	// Timeout bounds the operation; DefaultTimeout when zero.
	Timeout time.Duration
	// Wait waits for the release's resources to be ready (Helm's --wait) before success.
	Wait bool
	// Owner, when set, is recorded as the release label OwnerLabel; a release recorded for
	// another owner is refused.
	Owner string
	// Restriction, when set, installs with the least privilege of a Team's own chart: what Helm
	// renders and sends is checked against an allow-list (privilege.go) and refused, before
	// anything reaches the cluster, naming each object. It says who may not, for the refusal:
	// "a chart from a repository".
	Restriction string
}

// Action is what Ensure did or is about to do.
type Action string

const (
	ActionInstall   Action = "Install"
	ActionUpgrade   Action = "Upgrade"
	ActionUnchanged Action = "Unchanged"
)

// ReleaseInfo is a release as Helm stores it.
type ReleaseInfo struct {
	Name, Namespace string
	Chart           string
	ChartVersion    string
	AppVersion      string
	Revision        int
	// Status is Helm's: deployed, failed, pending-install, superseded, ...
	Status      string
	Description string
	// ValuesHash is Hash of the values the release was made with.
	ValuesHash string
}

// Result is the outcome of a successful Ensure.
type Result struct {
	Action  Action
	Release ReleaseInfo
}

// OperationError is a failed Ensure: Helm's error, and the release as it stands afterwards.
type OperationError struct {
	// Action is the operation that failed (Install or Upgrade), or empty when the failure came
	// before one started (the cluster, the chart).
	Action Action
	Err    error
	// Release is the last revision after the failure (nil when none exists).
	Release *ReleaseInfo
	// RolledBack says a failed upgrade was rolled back: the previous revision runs again.
	RolledBack bool
	// RollbackErr is why the rollback of a failed upgrade failed.
	RollbackErr error
}

func (e *OperationError) Error() string {
	msg := e.Err.Error()
	if e.Action != "" {
		msg = fmt.Sprintf("%s failed: %s", lower(e.Action), msg)
	}
	switch {
	case e.RolledBack && e.Release != nil:
		msg += fmt.Sprintf("; rolled back to revision %d (chart version %s)", e.Release.Revision, e.Release.ChartVersion)
	case e.RollbackErr != nil:
		msg += "; the rollback failed too: " + e.RollbackErr.Error()
	}
	return msg
}

func (e *OperationError) Unwrap() error { return e.Err }

func lower(a Action) string {
	switch a {
	case ActionInstall:
		return "install"
	case ActionUpgrade:
		return "upgrade"
	}
	return string(a)
}

// Engine runs Helm actions against tenant clusters.
type Engine struct {
	charts *Charts

	mu       sync.Mutex
	configs  map[configKey]*configEntry
	clusters map[string]*clusterEntry
	locks    map[string]*releaseLock

	// renderDeadline bounds a render (DefaultRenderDeadline); poisoned holds the charts and
	// values whose render outlived it, abandoned how many of those still run.
	renderDeadline time.Duration
	poisoned       map[string]bool
	abandoned      atomic.Int64
	// namespaceLabels reads a tenant namespace's labels (tenantNamespaceLabels; tests replace it).
	namespaceLabels func(ctx context.Context, target Target, namespace string) (map[string]string, error)
}

type configKey struct{ cluster, namespace string }

type configEntry struct {
	kubeconfigSum [32]byte
	cfg           *action.Configuration
}

type clusterEntry struct {
	kubeconfigSum [32]byte
	clients       *clusterClients
}

type releaseLock struct {
	sync.Mutex
	users int
}

// NewEngine returns an engine that fetches charts through charts.
func NewEngine(charts *Charts) *Engine {
	e := &Engine{charts: charts, configs: map[configKey]*configEntry{},
		clusters: map[string]*clusterEntry{}, locks: map[string]*releaseLock{},
		renderDeadline: DefaultRenderDeadline, poisoned: map[string]bool{}}
	e.namespaceLabels = e.tenantNamespaceLabels
	return e
}

// Charts is the engine's chart source.
func (e *Engine) Charts() *Charts { return e.charts }

// Ensure brings the release in line with req: installs it when it has no history, upgrades it
// when the chart version or the values differ from the deployed revision, and does nothing
// otherwise. starting, when not nil, is called just before an install or upgrade begins (to
// report progress); it is not called when nothing needs doing. A failure is an
// *OperationError carrying Helm's error text.
func (e *Engine) Ensure(ctx context.Context, req Request, starting func(Action)) (*Result, error) {
	unlock := e.lock(req.Target.Cluster, req.Release)
	defer unlock()
	op := &operation{e: e, req: req, timeout: req.Timeout, helmCtx: context.WithoutCancel(ctx),
		logger: klog.FromContext(ctx).WithValues("release", req.Release.Namespace+"/"+req.Release.Name)}
	if op.timeout <= 0 {
		op.timeout = DefaultTimeout
	}
	if err := op.readHistory(ctx); err != nil {
		return nil, err
	}
	if unchanged, err := op.loadChart(ctx); unchanged != nil || err != nil {
		return unchanged, err
	}
	// A release whose uninstall was interrupted (or kept its history) is installed anew.
	gone := op.last != nil && (op.last.Info.Status == release.StatusUninstalled || op.last.Info.Status == release.StatusUninstalling)
	if op.last == nil || gone {
		if starting != nil {
			starting(ActionInstall)
		}
		return op.install(gone)
	}
	if starting != nil {
		starting(ActionUpgrade)
	}
	return op.upgrade(ctx)
}

// operation is one Ensure of a release: what it read of the release's history and of the chart.
type operation struct {
	e       *Engine
	req     Request
	timeout time.Duration
	logger  klog.Logger
	// helmCtx is the context Helm's Install and Upgrade get: never cancelled, because they watch
	// it in a goroutine that outlives the call, and a cancel seen after success (even our own
	// deferred one) marks the finished release failed. timeout bounds them instead.
	helmCtx context.Context

	cfg     *action.Configuration
	last    *release.Release // the newest revision before the operation, nil without history
	current *ReleaseInfo     // last, as reported

	ref    ChartRef // req.Chart at its resolved version
	ch     *chart.Chart
	values map[string]any
	g      *gate
	run    *action.Configuration // cfg through the gate, for the install or upgrade
	labels map[string]string
}

// readHistory reads the release's newest revision; another owner's release is refused, and one
// left pending by an interrupted operation is marked failed.
func (op *operation) readHistory(ctx context.Context) error {
	req := op.req
	cfg, err := op.e.configuration(ctx, req.Target, req.Release.Namespace)
	if err != nil {
		return &OperationError{Err: err}
	}
	last, err := lastRevision(cfg, req.Release.Name)
	if err != nil {
		return &OperationError{Err: err}
	}
	op.cfg, op.last, op.current = cfg, last, infoOf(last)
	if last != nil && req.Owner != "" {
		if owner := last.Labels[OwnerLabel]; owner != "" && owner != req.Owner {
			return &OperationError{Release: op.current,
				Err: fmt.Errorf("release %s in namespace %s belongs to another object (uid %s)", req.Release.Name, req.Release.Namespace, owner)}
		}
	}
	if last != nil && last.Info.Status.IsPending() {
		if err := op.e.recoverPending(cfg, last, op.timeout); err != nil {
			return &OperationError{Release: op.current, Err: err}
		}
		op.logger.Info("Marked a release left pending by an interrupted operation as failed", "revision", last.Version)
	}
	return nil
}

// loadChart resolves the chart's version: the deployed revision at that version with the same
// values is the result (nothing to do). Otherwise it loads the chart and readies the gate Helm
// acts through.
func (op *operation) loadChart(ctx context.Context) (*Result, error) {
	req, e := op.req, op.e
	version, err := e.charts.Resolve(ctx, req.Chart)
	if err != nil {
		return nil, &OperationError{Release: op.current, Err: err}
	}
	if c := op.current; op.last != nil && op.last.Info.Status == release.StatusDeployed &&
		c.Chart == req.Chart.Name && c.ChartVersion == version && c.ValuesHash == Hash(req.Values) {
		return &Result{Action: ActionUnchanged, Release: *c}, nil
	}
	op.ref = req.Chart
	op.ref.Version = version
	if op.ch, err = e.charts.Load(ctx, op.ref); err != nil {
		return nil, &OperationError{Release: op.current, Err: err}
	}
	if op.values, err = deepCopy(req.Values); err != nil {
		return nil, &OperationError{Release: op.current, Err: err}
	}
	if e.isPoisoned(op.ref, req.Values) {
		return nil, &OperationError{Release: op.current, Err: fmt.Errorf("chart %s: rendering it with these values did not end within %s before; "+
			"it is not rendered again until butler-apiserver restarts", op.ref, e.renderDeadline)}
	}
	if op.g, err = e.gateFor(ctx, req, op.ch, op.cfg); err != nil {
		return nil, &OperationError{Release: op.current, Err: err}
	}
	op.labels = map[string]string{}
	if req.Owner != "" {
		op.labels[OwnerLabel] = req.Owner
	}
	if req.Restriction != "" {
		op.labels[RestrictedLabel] = "true"
	}
	op.run = perAction(op.cfg)
	op.run.KubeClient = op.g
	op.run.Releases = gatedStorage(op.cfg.Releases, op.g)
	op.run.RESTClientGetter = gatedGetter{RESTClientGetter: op.cfg.RESTClientGetter, gate: op.g}
	return nil, nil
}

// failure is a failed action's error: the allow-list's refusal of the render (nothing was
// recorded or written), a render past its deadline, or Helm's error.
func (op *operation) failure(action Action, err error) *OperationError {
	after, _ := lastRevision(op.cfg, op.req.Release.Name)
	var timeout *renderTimeout
	switch {
	case errors.As(err, &timeout):
		op.e.poison(op.ref, op.req.Values)
		op.e.charts.Evict(op.ref)
		return &OperationError{Err: err, Release: op.current}
	case op.g.refusal != nil && sameRevision(after, op.last):
		return &OperationError{Err: op.g.refusal, Release: op.current}
	}
	return &OperationError{Action: action, Err: err, Release: infoOf(after)}
}

// install installs the release (replacing an uninstalled one's history when gone).
func (op *operation) install(gone bool) (*Result, error) {
	req := op.req
	install := action.NewInstall(op.run)
	install.Replace = gone
	install.ReleaseName, install.Namespace = req.Release.Name, req.Release.Namespace
	install.CreateNamespace = req.CreateNamespace
	install.Timeout, install.Wait = op.timeout, req.Wait
	install.Labels = op.labels
	install.PostRenderer = op.g
	started := time.Now()
	rel, err := op.e.run(op.g, op.ref, func() (*release.Release, error) { return install.RunWithContext(op.helmCtx, op.ch, op.values) })
	if err != nil {
		return nil, op.failure(ActionInstall, err)
	}
	op.logger.Info("Installed", "chart", op.ch.Metadata.Name, "version", op.ref.Version, "revision", rel.Version, "took", time.Since(started).Round(time.Millisecond))
	return &Result{Action: ActionInstall, Release: *infoOf(rel)}, nil
}

// upgrade upgrades the release; a failed upgrade is rolled back to the deployed revision.
func (op *operation) upgrade(ctx context.Context) (*Result, error) {
	req := op.req
	deployed := op.last
	if op.last.Info.Status != release.StatusDeployed {
		deployed, _ = op.cfg.Releases.Deployed(req.Release.Name)
	}
	upgrade := action.NewUpgrade(op.run)
	upgrade.Namespace = req.Release.Namespace
	upgrade.Timeout, upgrade.Wait = op.timeout, req.Wait
	upgrade.ResetValues = true
	upgrade.MaxHistory = maxHistory
	upgrade.CleanupOnFail = true
	upgrade.Labels = op.labels
	upgrade.PostRenderer = op.g
	started := time.Now()
	rel, err := op.e.run(op.g, op.ref, func() (*release.Release, error) {
		return upgrade.RunWithContext(op.helmCtx, req.Release.Name, op.ch, op.values)
	})
	if err == nil {
		op.logger.Info("Upgraded", "chart", op.ch.Metadata.Name, "version", op.ref.Version, "revision", rel.Version, "took", time.Since(started).Round(time.Millisecond))
		return &Result{Action: ActionUpgrade, Release: *infoOf(rel)}, nil
	}
	opErr := op.failure(ActionUpgrade, err)
	if opErr.Action == "" {
		return nil, opErr
	}
	if deployed != nil {
		op.rollback(ctx, deployed, err, opErr)
	}
	after, _ := lastRevision(op.cfg, req.Release.Name)
	opErr.Release = infoOf(after)
	return nil, opErr
}

// rollback returns a failed upgrade (failed with err) to the deployed revision, through the
// restricted gate when the release is restricted, and records how it went in opErr.
func (op *operation) rollback(ctx context.Context, deployed *release.Release, err error, opErr *OperationError) {
	req := op.req
	rb := perAction(op.cfg)
	if req.Restriction != "" {
		rb.KubeClient = op.e.restrictedGate(ctx, req.Target, req.Release.Namespace, op.cfg, refuser(op.ch.Metadata.Name, op.ch.Metadata.Version, req.Restriction))
	}
	rollback := action.NewRollback(rb)
	rollback.Version = deployed.Version
	rollback.Timeout, rollback.Wait = op.timeout, req.Wait
	rollback.MaxHistory = maxHistory
	rollback.CleanupOnFail = true
	if rbErr := rollback.Run(req.Release.Name); rbErr != nil {
		opErr.RollbackErr = rbErr
	} else {
		opErr.RolledBack = true
		op.logger.Info("Rolled back a failed upgrade", "toRevision", deployed.Version, "err", err)
	}
}

// sameRevision says whether the release's newest revision is still the one before the action.
func sameRevision(after, before *release.Release) bool {
	if after == nil || before == nil {
		return after == before
	}
	return after.Version == before.Version
}

// Uninstall removes the release (a missing one is no error) and waits for its resources to go.
// A release labelled RestrictedLabel, or any release when restriction is set (who may not, as
// Request.Restriction says it: the caller knows the release is a Team's untrusted one, which a
// release recorded before the label existed does not say), is uninstalled through the
// allow-list: its hooks and deletes are checked.
func (e *Engine) Uninstall(ctx context.Context, target Target, key ReleaseKey, timeout time.Duration, restriction string) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	unlock := e.lock(target.Cluster, key)
	defer unlock()
	cfg, err := e.configuration(ctx, target, key.Namespace)
	if err != nil {
		return err
	}
	run := perAction(cfg)
	// A restricted release's hooks (pre-delete ones run now) and deletes go through the
	// allow-list: one recorded before its hooks were checked may hold any object.
	if last, err := lastRevision(cfg, key.Name); err == nil && last != nil && last.Chart != nil &&
		(restriction != "" || last.Labels[RestrictedLabel] == "true") {
		run.KubeClient = e.restrictedGate(ctx, target, key.Namespace, cfg,
			refuser(last.Chart.Metadata.Name, last.Chart.Metadata.Version, cmp.Or(restriction, "a restricted release")))
	}
	uninstall := action.NewUninstall(run)
	uninstall.IgnoreNotFound = true
	uninstall.Wait = true
	uninstall.Timeout = timeout
	started := time.Now()
	if _, err := uninstall.Run(key.Name); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Uninstalled", "release", key.Namespace+"/"+key.Name, "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// Get returns the release's last revision, or nil when it has none.
func (e *Engine) Get(ctx context.Context, target Target, key ReleaseKey) (*ReleaseInfo, error) {
	unlock := e.lock(target.Cluster, key)
	defer unlock()
	cfg, err := e.configuration(ctx, target, key.Namespace)
	if err != nil {
		return nil, err
	}
	last, err := lastRevision(cfg, key.Name)
	if err != nil {
		return nil, err
	}
	return infoOf(last), nil
}

// Forget drops what the engine keeps for a cluster (its Configurations and clients).
func (e *Engine) Forget(cluster string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.clusters, cluster)
	for k := range e.configs {
		if k.cluster == cluster {
			delete(e.configs, k)
		}
	}
}

// Cached is how many Configurations and clusters the engine holds.
func (e *Engine) Cached() (configurations, clusters int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.configs), len(e.clusters)
}

// configuration returns the cached Configuration of (cluster, namespace), building it when
// missing or when the kubeconfig changed.
func (e *Engine) configuration(ctx context.Context, target Target, namespace string) (*action.Configuration, error) {
	sum := sha256Sum(target.Kubeconfig)
	key := configKey{target.Cluster, namespace}
	e.mu.Lock()
	if entry, ok := e.configs[key]; ok && entry.kubeconfigSum == sum {
		e.mu.Unlock()
		return entry.cfg, nil
	}
	clients, err := e.clientsLocked(target, sum)
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}

	logger := klog.FromContext(ctx).WithValues("cluster", target.Cluster, "namespace", namespace)
	cfg := &action.Configuration{}
	getter := namespacedGetter{clusterClients: clients, namespace: namespace}
	helmLog := func(format string, v ...any) { logger.V(4).Info(fmt.Sprintf(format, v...)) }
	if err := cfg.Init(getter, namespace, "secret", helmLog); err != nil {
		return nil, err
	}
	kc, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		return nil, fmt.Errorf("unexpected Helm kube client %T", cfg.KubeClient)
	}
	kc.Namespace = namespace
	// IsReachable builds the client's clientset, which Helm otherwise builds lazily without a
	// lock: done here once, concurrent actions on this Configuration only read it.
	if err := kc.IsReachable(); err != nil {
		return nil, err
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if entry, ok := e.configs[key]; ok && entry.kubeconfigSum == sum {
		return entry.cfg, nil // built meanwhile by another worker
	}
	e.configs[key] = &configEntry{kubeconfigSum: sum, cfg: cfg}
	return cfg, nil
}

// clientsLocked returns the cluster's shared clients; e.mu is held.
func (e *Engine) clientsLocked(target Target, sum [32]byte) (*clusterClients, error) {
	if c, ok := e.clusters[target.Cluster]; ok && c.kubeconfigSum == sum {
		return c.clients, nil
	}
	// The kubeconfig changed (or is new): every Configuration built on the old one goes.
	for k := range e.configs {
		if k.cluster == target.Cluster {
			delete(e.configs, k)
		}
	}
	clients, err := newClusterClients(target.Kubeconfig)
	if err != nil {
		return nil, err
	}
	e.clusters[target.Cluster] = &clusterEntry{kubeconfigSum: sum, clients: clients}
	return clients, nil
}

func sha256Sum(data []byte) [32]byte { return sha256.Sum256(data) }

// lock serializes work on one release and returns the unlock.
func (e *Engine) lock(cluster string, key ReleaseKey) func() {
	name := cluster + "\x00" + key.Namespace + "\x00" + key.Name
	e.mu.Lock()
	l, ok := e.locks[name]
	if !ok {
		l = &releaseLock{}
		e.locks[name] = l
	}
	l.users++
	e.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		e.mu.Lock()
		if l.users--; l.users == 0 {
			delete(e.locks, name)
		}
		e.mu.Unlock()
	}
}

// recoverPending marks a release left in a pending state as failed once its operation must
// have ended (its timeout passed), so Helm accepts the next operation. A younger pending
// release is still someone's operation in progress.
func (e *Engine) recoverPending(cfg *action.Configuration, last *release.Release, timeout time.Duration) error {
	started := last.Info.LastDeployed.Time
	if started.IsZero() {
		started = last.Info.FirstDeployed.Time
	}
	if age := time.Since(started); age < timeout+time.Minute {
		return fmt.Errorf("release %s has an operation in progress (%s since %s)", last.Name, last.Info.Status, started.Format(time.RFC3339))
	}
	last.Info.Description = fmt.Sprintf("marked failed by butler-apiserver: left %s by an interrupted operation", last.Info.Status)
	last.Info.Status = release.StatusFailed
	return cfg.Releases.Update(last)
}

// perAction returns a copy of cfg for one action: the shared storage and clients, and no
// Capabilities, so Helm reads the cluster's API versions afresh for this action and writes
// them only into the copy.
func perAction(cfg *action.Configuration) *action.Configuration {
	c := *cfg
	c.Capabilities = nil
	return &c
}

// lastRevision returns the newest revision of the release, or nil when it has no history.
func lastRevision(cfg *action.Configuration, name string) (*release.Release, error) {
	history, err := cfg.Releases.History(name)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the history of release %s: %w", name, err)
	}
	if len(history) == 0 {
		return nil, nil
	}
	sort.Slice(history, func(i, j int) bool { return history[i].Version > history[j].Version })
	return history[0], nil
}

func infoOf(r *release.Release) *ReleaseInfo {
	if r == nil {
		return nil
	}
	info := &ReleaseInfo{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, ValuesHash: Hash(r.Config)}
	if r.Info != nil {
		info.Status = r.Info.Status.String()
		info.Description = r.Info.Description
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		info.Chart = r.Chart.Metadata.Name
		info.ChartVersion = r.Chart.Metadata.Version
		info.AppVersion = r.Chart.Metadata.AppVersion
	}
	return info
}
