package controllerkit

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// TenantSecrets watches Secrets in the tenant namespaces butler made, with one informer per
// namespace. butler-apiserver may read Secrets only in the namespaces it made and its own
// (artifacts/deploy/rbac.yaml binds that per namespace), so a cluster-wide watch is refused;
// the informers follow the tenant namespaces as they come and go. Private keys (data keys
// ending in ".key", such as a tenant CA's) are dropped from the cache: they are read only to
// mint, from the API server. The namespace of a cluster asleep is not watched (Sleep): a watch
// costs kube-apiserver and this process memory for each of thousands of hibernated clusters,
// and nothing waits on their Secrets; readers ask the API server instead (Watching).
type TenantSecrets struct {
	kube     kubernetes.Interface
	mu       sync.Mutex
	byNS     map[string]*namespaceSecrets
	asleep   map[string]bool
	handlers []cache.ResourceEventHandler
	ctx      context.Context // set by Start
}

type namespaceSecrets struct {
	factory informers.SharedInformerFactory
	lister  corelisters.SecretNamespaceLister
	synced  cache.InformerSynced
	cancel  context.CancelFunc
}

// TenantSecrets returns the one TenantSecrets of these Deps, following the tenant namespaces
// (those labelled with their TenantCluster). Nil without a management cluster.
func (d *Deps) TenantSecrets() *TenantSecrets {
	if d.Kube == nil {
		return nil
	}
	if d.tenantSecrets == nil {
		d.tenantSecrets = &TenantSecrets{kube: d.Kube, byNS: map[string]*namespaceSecrets{}, asleep: map[string]bool{}}
		ns := d.KubeInformersFor(external.TenantClusterLabel).Core().V1().Namespaces().Informer()
		_, _ = ns.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if n, ok := obj.(*corev1.Namespace); ok {
					d.tenantSecrets.watch(n.Name)
				}
			},
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if n, ok := obj.(*corev1.Namespace); ok {
					d.tenantSecrets.forget(n.Name)
				}
			},
		})
	}
	return d.tenantSecrets
}

// AddEventHandler adds a handler to every namespace's informer; call it before Start.
func (t *TenantSecrets) AddEventHandler(h cache.ResourceEventHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.handlers = append(t.handlers, h)
}

// Secrets lists the cached Secrets of one namespace; none (NotFound) where none is watched.
func (t *TenantSecrets) Secrets(namespace string) corelisters.SecretNamespaceLister {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.byNS[namespace]; n != nil && n.lister != nil {
		return n.lister
	}
	return corelisters.NewSecretLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})).Secrets(namespace)
}

// Watching says whether the namespace's Secrets are watched and listed: otherwise its
// lister (Secrets) holds none and a reader asks the API server.
func (t *TenantSecrets) Watching(namespace string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.byNS[namespace]
	return n != nil && n.synced()
}

// Sleep stops watching the Secrets of a namespace whose cluster is asleep (or does not start
// to, if the namespace is not seen yet); Wake watches them again. A namespace that goes is
// forgotten, asleep or not.
func (t *TenantSecrets) Sleep(namespace string) {
	t.mu.Lock()
	n := t.byNS[namespace]
	t.asleep[namespace] = true
	t.byNS[namespace] = nil
	t.mu.Unlock()
	if n != nil {
		n.cancel()
	}
}

// Wake watches the Secrets of a namespace again after Sleep.
func (t *TenantSecrets) Wake(namespace string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.asleep[namespace] {
		return
	}
	delete(t.asleep, namespace)
	if t.ctx != nil {
		t.byNS[namespace] = t.start(namespace)
	}
}

// Start starts the informers of the namespaces seen so far and of those seen later.
func (t *TenantSecrets) Start(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ctx = ctx
	for ns, n := range t.byNS {
		if n == nil && !t.asleep[ns] {
			t.byNS[ns] = t.start(ns)
		}
	}
}

// Shutdown waits for the informers' goroutines to end.
func (t *TenantSecrets) Shutdown() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.byNS {
		if n != nil {
			n.factory.Shutdown()
		}
	}
}

func (t *TenantSecrets) watch(namespace string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byNS[namespace]; ok { // watched, to be started, or asleep
		return
	}
	if t.ctx == nil {
		t.byNS[namespace] = nil // started by Start
		return
	}
	t.byNS[namespace] = t.start(namespace)
}

func (t *TenantSecrets) forget(namespace string) {
	t.mu.Lock()
	n := t.byNS[namespace]
	delete(t.byNS, namespace)
	delete(t.asleep, namespace)
	t.mu.Unlock()
	if n != nil {
		n.cancel()
	}
}

// start runs one namespace's informer; t.mu is held.
func (t *TenantSecrets) start(namespace string) *namespaceSecrets {
	ctx, cancel := context.WithCancel(t.ctx)
	f := informers.NewSharedInformerFactoryWithOptions(t.kube, Resync, informers.WithNamespace(namespace),
		informers.WithTransform(dropPrivateKeys))
	secrets := f.Core().V1().Secrets()
	inf := secrets.Informer()
	for _, h := range t.handlers {
		_, _ = inf.AddEventHandler(h)
	}
	f.Start(ctx.Done())
	return &namespaceSecrets{factory: f, lister: secrets.Lister().Secrets(namespace), synced: inf.HasSynced, cancel: cancel}
}

// dropPrivateKeys drops managedFields and every private key from a cached Secret.
func dropPrivateKeys(obj any) (any, error) {
	obj, err := DropManagedFields(obj)
	if s, ok := obj.(*corev1.Secret); ok {
		for k := range s.Data {
			if strings.HasSuffix(k, ".key") {
				delete(s.Data, k)
			}
		}
	}
	return obj, err
}
