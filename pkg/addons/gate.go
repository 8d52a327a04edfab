package addons

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// PrivilegeError is a restricted chart refused by the allow-list (privilege.go): Problems names
// each object.
type PrivilegeError struct {
	Chart, Version, Who string
	Problems            []string
}

func (e *PrivilegeError) Error() string {
	return fmt.Sprintf("chart %s %s grants more than edit, which %s may not: %s",
		e.Chart, e.Version, e.Who, strings.Join(e.Problems, "; "))
}

// errAbandoned answers an action that went on after Ensure gave up waiting for its render.
var errAbandoned = errors.New("the render outlived its deadline; this action was abandoned")

// gate stands between Helm and the tenant for one install or upgrade. As Helm's post-renderer
// it sees every rendered manifest before Helm records or writes anything (install and upgrade,
// whatever the templates' file names); as Helm's kube client it sees every object Helm creates
// or updates, among them the crds/ files and the hooks, which Helm does not post-render. With a
// check (a restricted request) it refuses what the allow-list does not allow; always, it marks
// the end of the render for the render deadline.
type gate struct {
	kube.Interface
	check *privilegeCheck
	// refuse builds the refusal from the problems found.
	refuse func(problems []string) error

	mu sync.Mutex
	// rendered is closed when Helm's render ended (the post-renderer ran).
	rendered  chan struct{}
	isDone    bool
	abandoned bool
	// busy counts calls to the cluster in progress; idleSince is when the last one ended. The
	// deadline runs from there once Helm read the cluster's APIs (armed), which it does just
	// before it renders.
	busy      int
	idleSince time.Time
	armed     bool
	// refusal is the allow-list's refusal, when there was one.
	refusal error
}

var _ postrender.PostRenderer = (*gate)(nil)

func newGate(client kube.Interface, check *privilegeCheck, refuse func([]string) error) *gate {
	return &gate{Interface: client, check: check, refuse: refuse, rendered: make(chan struct{}), idleSince: time.Now()}
}

// Run is Helm's post-renderer: the manifests Helm is about to record and apply, unchanged.
func (g *gate) Run(manifests *bytes.Buffer) (*bytes.Buffer, error) {
	g.mu.Lock()
	if g.abandoned {
		g.mu.Unlock()
		return nil, errAbandoned
	}
	g.isDone = true
	close(g.rendered)
	g.mu.Unlock()
	if err := g.checkManifest(manifests.Bytes()); err != nil {
		return nil, err
	}
	return manifests, nil
}

// abandon gives up on the action unless its render already ended; it reports whether it did.
func (g *gate) abandon() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isDone {
		return false
	}
	g.abandoned = true
	return true
}

// renderingFor is how long the action has been rendering: since its last kube call ended, or
// zero while one is in progress or once the render ended.
func (g *gate) renderingFor() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.armed || g.busy > 0 || g.isDone {
		return 0
	}
	return time.Since(g.idleSince)
}

func (g *gate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
}

func (g *gate) renderEnded() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.isDone
}

func (g *gate) calling() func() {
	g.mu.Lock()
	g.busy++
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.busy--
		g.idleSince = time.Now()
		g.mu.Unlock()
	}
}

func (g *gate) checkManifest(data []byte) error {
	if g.check == nil {
		return nil
	}
	problems, err := g.check.manifest(data)
	if err != nil {
		problems = []string{"decoding the manifests: " + err.Error()}
	}
	if len(problems) == 0 {
		return nil
	}
	refusal := g.refuse(problems)
	g.mu.Lock()
	if g.refusal == nil {
		g.refusal = refusal
	}
	g.mu.Unlock()
	return refusal
}

// checkResources checks objects Helm is about to write, as the JSON it sends. The namespace
// Helm creates for the release (CreateNamespace) is Helm's, not the chart's.
func (g *gate) checkResources(resources kube.ResourceList) error {
	g.mu.Lock()
	abandoned := g.abandoned
	g.mu.Unlock()
	if abandoned {
		return errAbandoned
	}
	if g.check == nil {
		return nil
	}
	var stream bytes.Buffer
	for _, info := range resources {
		if g.releaseNamespace(info.Object) {
			continue
		}
		data, err := json.Marshal(info.Object)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		stream.WriteString("---\n")
		stream.Write(y)
	}
	return g.checkManifest(stream.Bytes())
}

// releaseNamespace says whether obj is the Namespace Helm makes for CreateNamespace: the
// release's, labelled only with its name.
func (g *gate) releaseNamespace(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || obj.GetObjectKind().GroupVersionKind().Kind != "Namespace" {
		return false
	}
	labels := m.GetLabels()
	return m.GetName() == g.check.namespace && len(labels) <= 1 && (len(labels) == 0 || labels["name"] == m.GetName()) &&
		len(m.GetAnnotations()) == 0
}

func (g *gate) Create(resources kube.ResourceList) (*kube.Result, error) {
	defer g.calling()()
	if err := g.checkResources(resources); err != nil {
		return nil, err
	}
	return g.Interface.Create(resources)
}

func (g *gate) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	defer g.calling()()
	if err := g.checkResources(target); err != nil {
		return nil, err
	}
	return g.Interface.Update(original, target, force)
}

func (g *gate) UpdateThreeWayMerge(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	defer g.calling()()
	if err := g.checkResources(target); err != nil {
		return nil, err
	}
	c, ok := g.Interface.(kube.InterfaceThreeWayMerge)
	if !ok {
		return nil, fmt.Errorf("%T cannot merge three ways", g.Interface)
	}
	return c.UpdateThreeWayMerge(original, target, force)
}

func (g *gate) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	defer g.calling()()
	return g.Interface.Build(reader, validate)
}

func (g *gate) Wait(resources kube.ResourceList, timeout time.Duration) error {
	defer g.calling()()
	return g.Interface.Wait(resources, timeout)
}

// The extensions Helm looks for on its kube client, passed on.

func (g *gate) WaitForDelete(resources kube.ResourceList, timeout time.Duration) error {
	c, ok := g.Interface.(kube.InterfaceExt)
	if !ok {
		return nil
	}
	return c.WaitForDelete(resources, timeout)
}

func (g *gate) GetPodList(namespace string, opts metav1.ListOptions) (*v1.PodList, error) {
	c, ok := g.Interface.(kube.InterfaceLogs)
	if !ok {
		return &v1.PodList{}, nil
	}
	return c.GetPodList(namespace, opts)
}

func (g *gate) OutputContainerLogsForPodList(pods *v1.PodList, namespace string, w func(namespace, pod, container string) io.Writer) error {
	c, ok := g.Interface.(kube.InterfaceLogs)
	if !ok {
		return nil
	}
	return c.OutputContainerLogsForPodList(pods, namespace, w)
}

// Delete and DeleteWithPropagationPolicy refuse deleting what a Team's chart may not create:
// a hook's before-hook-creation policy deletes an object of the hook's kind and name first,
// whatever it is (Namespace flux-system).
func (g *gate) Delete(resources kube.ResourceList) (*kube.Result, []error) {
	if err := g.checkDeletes(resources); err != nil {
		return nil, []error{err}
	}
	return g.Interface.Delete(resources)
}

func (g *gate) checkDeletes(resources kube.ResourceList) error {
	if g.check == nil {
		return nil
	}
	var problems []string
	for _, info := range resources {
		m, err := meta.Accessor(info.Object)
		if err != nil {
			return err
		}
		gvk := info.Object.GetObjectKind().GroupVersionKind()
		o := &object{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
		o.Metadata.Name, o.Metadata.Namespace = m.GetName(), m.GetNamespace()
		if p := g.check.placement(o); p != "" {
			problems = append(problems, "deleting "+p)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return g.refuse(problems)
}

// checkHooks checks a release's hooks before Helm records it: Helm does not post-render them,
// and creates a pre-delete or pre-rollback hook only when the release is deleted or rolled
// back, so the chart is refused at install rather than then.
func (g *gate) checkHooks(rel *release.Release) error {
	if g.check == nil {
		return nil
	}
	var stream bytes.Buffer
	for _, h := range rel.Hooks {
		stream.WriteString("\n---\n")
		stream.WriteString(h.Manifest)
	}
	return g.checkManifest(stream.Bytes())
}

// gatedDriver is Helm's release storage for one action: it checks the hooks of a release Helm
// is about to record, which Install and Upgrade do before they create anything of it.
type gatedDriver struct {
	driver.Driver
	gate *gate
}

func (d gatedDriver) Create(key string, rls *release.Release) error {
	if err := d.gate.checkHooks(rls); err != nil {
		return err
	}
	return d.Driver.Create(key, rls)
}

// gatedStorage is s recording through the gate.
func gatedStorage(s *storage.Storage, g *gate) *storage.Storage {
	gated := *s
	gated.Driver = gatedDriver{Driver: s.Driver, gate: g}
	return &gated
}

func (g *gate) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	if err := g.checkDeletes(resources); err != nil {
		return nil, []error{err}
	}
	c, ok := g.Interface.(kube.InterfaceDeletionPropagation)
	if !ok {
		return g.Interface.Delete(resources)
	}
	return c.DeleteWithPropagationPolicy(resources, policy)
}

// DefaultRenderDeadline bounds a chart's render: the time between Helm's reading of the
// cluster's APIs, just before it renders, and the end of the render.
const DefaultRenderDeadline = 30 * time.Second

// maxAbandoned is how many renders past their deadline may still run (Go cannot stop them:
// each holds a core until it ends or butler-apiserver restarts) before restricted charts are
// no longer rendered at all.
const maxAbandoned = 4

// renderTimeout is a render that did not end within the deadline.
type renderTimeout struct {
	chart    ChartRef
	deadline time.Duration
}

func (e *renderTimeout) Error() string {
	return fmt.Sprintf("chart %s: rendering did not end within %s; the chart was dropped from the cache", e.chart, e.deadline)
}

// gateFor returns the gate of one action on req: with the allow-list when req is restricted,
// after checking the chart's crds/ files (Helm installs them as they are, before it renders).
func (e *Engine) gateFor(ctx context.Context, req Request, ch *chart.Chart, cfg *action.Configuration) (*gate, error) {
	refuse := refuser(ch.Metadata.Name, ch.Metadata.Version, req.Restriction)
	if req.Restriction == "" {
		return newGate(cfg.KubeClient, nil, refuse), nil
	}
	if n := e.abandonedRenders(); n >= maxAbandoned {
		return nil, fmt.Errorf("%d renders of restricted charts outlived their deadline and still run; no more are started until butler-apiserver restarts", n)
	}
	protected := e.protectedNamespaces(ctx, req.Target)
	check := newPrivilegeCheck(req.Release.Namespace, protected)
	var problems []string
	for _, crd := range ch.CRDObjects() {
		p, err := check.manifest(crd.File.Data)
		if err != nil {
			p = []string{fmt.Sprintf("%s: %v", crd.Filename, err)}
		}
		problems = append(problems, p...)
	}
	if len(problems) > 0 {
		return nil, refuse(problems)
	}
	return newGate(cfg.KubeClient, check, refuse), nil
}

// refuser builds the allow-list's refusal of a chart.
func refuser(chart, version, who string) func([]string) error {
	return func(problems []string) error {
		return &PrivilegeError{Chart: chart, Version: version, Who: who, Problems: problems}
	}
}

// restrictedGate is the gate of a restricted release's rollback or uninstall: Helm post-renders
// nothing there, so only its kube client checks the hooks it creates and what it deletes.
func (e *Engine) restrictedGate(ctx context.Context, target Target, namespace string, cfg *action.Configuration, refuse func([]string) error) *gate {
	return newGate(cfg.KubeClient, newPrivilegeCheck(namespace, e.protectedNamespaces(ctx, target)), refuse)
}

// protectedNamespaces answers, once per namespace, whether the tenant marks it protected.
func (e *Engine) protectedNamespaces(ctx context.Context, target Target) func(string) (bool, error) {
	seen := map[string]bool{}
	return func(namespace string) (bool, error) {
		if p, ok := seen[namespace]; ok {
			return p, nil
		}
		labels, err := e.namespaceLabels(ctx, target, namespace)
		if err != nil {
			return false, err
		}
		seen[namespace] = labels[external.ProtectedNamespaceLabel] == "true"
		return seen[namespace], nil
	}
}

// tenantNamespaceLabels reads a namespace's labels in the tenant; a missing one has none.
func (e *Engine) tenantNamespaceLabels(ctx context.Context, target Target, namespace string) (map[string]string, error) {
	e.mu.Lock()
	clients, err := e.clientsLocked(target, sha256Sum(target.Kubeconfig))
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(clients.config)
	if err != nil {
		return nil, err
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ns.Labels, nil
}

type actionResult struct {
	rel *release.Release
	err error
}

// run runs a Helm action and waits for it, unless its render outlives the render deadline:
// then the action is abandoned (its gate refuses whatever it does next) and a renderTimeout
// returned. The action's goroutine runs on until the render ends, if ever.
func (e *Engine) run(g *gate, ref ChartRef, act func() (*release.Release, error)) (*release.Release, error) {
	done := make(chan actionResult, 1)
	go func() {
		rel, err := act()
		done <- actionResult{rel, err}
	}()
	tick := time.NewTicker(min(time.Second, e.renderDeadline/4))
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil && !g.renderEnded() {
				e.charts.Evict(ref) // it failed before its render ended: fetched afresh next time
			}
			return r.rel, r.err
		case <-g.rendered:
			r := <-done
			return r.rel, r.err
		case <-tick.C:
			if g.renderingFor() > e.renderDeadline && g.abandon() {
				e.abandoned.Add(1)
				go func() {
					<-done
					e.abandoned.Add(-1)
				}()
				return nil, &renderTimeout{chart: ref, deadline: e.renderDeadline}
			}
		}
	}
}

func (e *Engine) abandonedRenders() int64 { return e.abandoned.Load() }

func poisonKey(ref ChartRef, values Values) string { return ref.String() + "\x00" + Hash(values) }

// poison remembers a chart and values whose render outlived its deadline: they are not rendered
// again by this process.
func (e *Engine) poison(ref ChartRef, values Values) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.poisoned[poisonKey(ref, values)] = true
}

func (e *Engine) isPoisoned(ref ChartRef, values Values) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.poisoned[poisonKey(ref, values)]
}

// gatedGetter is Helm's RESTClientGetter for one action: its discovery calls (Helm reads the
// cluster's version and APIs just before it renders) count as calls to the cluster, so a slow
// tenant is not taken for a render that does not end.
type gatedGetter struct {
	action.RESTClientGetter
	gate *gate
}

func (g gatedGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := g.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return gatedDiscovery{CachedDiscoveryInterface: dc, gate: g.gate}, nil
}

type gatedDiscovery struct {
	discovery.CachedDiscoveryInterface
	gate *gate
}

func (d gatedDiscovery) ServerVersion() (*version.Info, error) {
	defer d.gate.calling()()
	d.gate.arm()
	return d.CachedDiscoveryInterface.ServerVersion()
}

func (d gatedDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	defer d.gate.calling()()
	return d.CachedDiscoveryInterface.ServerGroupsAndResources()
}
