package bootstrapprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

const (
	// Finalizer gives the tenant's tokens one cleanup pass when a config is deleted.
	Finalizer = "bootstrap.butlerlabs.dev/token-cleanup"
	// ConfigUIDLabel on a tenant token Secret names the BootstrapConfig that minted it.
	ConfigUIDLabel = "bootstrap.butlerlabs.dev/config-uid"
	// ConfigNameLabel is informational: the config's name (truncated to a label value).
	ConfigNameLabel = "bootstrap.butlerlabs.dev/config-name"

	// DataSecretType is CAPI's type for bootstrap data and kubeconfig Secrets.
	DataSecretType = clusterv1.ClusterSecretType
	// kubeconfigKey is the key of CAPI's <cluster>-kubeconfig Secret.
	kubeconfigKey = "value"

	defaultTokenTTL = 15 * time.Minute
	// caRetry looks again for a missing or bad CA Secret, which carries no label to watch.
	caRetry = 15 * time.Second
)

var (
	configGVR  = mustGVR(external.BootstrapConfigGVK)
	machineGVR = mustGVR(external.MachineGVK)
	clusterGVR = mustGVR(external.ClusterGVK)
)

func mustGVR(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	gvr, err := external.GVR(gvk)
	if err != nil {
		panic(err)
	}
	return gvr
}

// Controller reconciles BootstrapConfigs.
type Controller struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface

	configs  cache.GenericLister
	machines cache.GenericLister
	clusters cache.GenericLister
	// secrets lists the Secrets of a tenant namespace (controllerkit.TenantSecrets).
	secrets interface {
		Secrets(namespace string) corelisters.SecretNamespaceLister
	}

	plan   steps.Plan[*state]
	queue  *controllerkit.Queue
	synced []cache.InformerSynced

	// tenantClient builds a client of a tenant cluster from its kubeconfig (tests replace it).
	tenantClient func(kubeconfig []byte) (kubernetes.Interface, error)
	tenantsMu    sync.Mutex
	tenants      map[string]cachedTenant
	clock        clock.PassiveClock
	// idle says why the controller does not run (the CRDs are not served).
	idle error
}

type cachedTenant struct {
	resourceVersion string
	client          kubernetes.Interface
}

// New builds the controller on the shared informers: BootstrapConfigs, Machines and Clusters
// through the dynamic factory, and the Secrets of the tenant namespaces.
func New(d *controllerkit.Deps) (*Controller, error) {
	if d.Dynamic == nil || d.DynamicInformers == nil || d.Kube == nil {
		return nil, errors.New("the bootstrap worker needs a management cluster (kube and dynamic clients)")
	}
	// Without the CRDs (artifacts/crds) the informers would never sync: the controller idles and
	// says why, and the other controllers run on.
	for _, gv := range []schema.GroupVersion{configGVR.GroupVersion(), machineGVR.GroupVersion()} {
		if _, err := d.Kube.Discovery().ServerResourcesForGroupVersion(gv.String()); err != nil {
			return &Controller{idle: fmt.Errorf("the management cluster does not serve %s (install artifacts/crds): %w", gv, err)}, nil
		}
	}
	configs := d.DynamicInformers.ForResource(configGVR)
	machines := d.DynamicInformers.ForResource(machineGVR)
	clusters := d.DynamicInformers.ForResource(clusterGVR)
	secrets := d.TenantSecrets()
	c := &Controller{
		kube: d.Kube, dyn: d.Dynamic,
		configs: configs.Lister(), machines: machines.Lister(), clusters: clusters.Lister(),
		secrets:      secrets,
		tenantClient: newTenantClient,
		tenants:      map[string]cachedTenant{},
		clock:        d.Now(),
	}
	c.plan = c.steps()
	c.queue = controllerkit.NewQueue("bootstrapconfig", c.Reconcile)
	for _, h := range []struct {
		inf  cache.SharedIndexInformer
		keys func(any) []string
	}{
		{configs.Informer(), controllerkit.ByKey},
		{machines.Informer(), configOfMachine},
		{clusters.Informer(), c.configsOfCluster},
	} {
		_ = h.inf.SetTransform(controllerkit.DropManagedFields)
		if _, err := h.inf.AddEventHandler(c.queue.Handler(h.keys)); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, h.inf.HasSynced)
	}
	secrets.AddEventHandler(c.queue.Handler(c.configsOfSecret))
	return c, nil
}

// Run reconciles with two goroutines until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	if c.idle != nil {
		klog.FromContext(ctx).Info("The bootstrap worker is idle", "reason", c.idle.Error())
		<-ctx.Done()
		return
	}
	c.queue.Run(ctx, 2, c.synced...)
}

func newTenantClient(kubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 15 * time.Second
	cfg.UserAgent = "butler-apiserver/bootstrap"
	return kubernetes.NewForConfig(cfg)
}

// configOfMachine maps a Machine to the BootstrapConfig its spec.bootstrap.configRef names.
func configOfMachine(obj any) []string {
	m, err := external.FromObject[clusterv1.Machine](obj)
	if err != nil {
		return nil
	}
	ref := m.Spec.Bootstrap.ConfigRef
	if ref.APIGroup != external.BootstrapGroup || ref.Kind != external.BootstrapConfigGVK.Kind || ref.Name == "" {
		return nil
	}
	return []string{m.Namespace + "/" + ref.Name}
}

// configsOfCluster maps a Cluster to the configs of its Machines.
func (c *Controller) configsOfCluster(obj any) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return c.configsOfClusterName(u.GetNamespace(), u.GetName())
}

func (c *Controller) configsOfClusterName(ns, cluster string) []string {
	objs, err := c.machines.ByNamespace(ns).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, o := range objs {
		m, err := external.FromObject[clusterv1.Machine](o)
		if err != nil || m.Spec.ClusterName != cluster {
			continue
		}
		keys = append(keys, configOfMachine(o)...)
	}
	return keys
}

// configsOfSecret maps a data Secret to its config, and a cluster's kubeconfig or CA Secret to
// the configs of that cluster.
func (c *Controller) configsOfSecret(obj any) []string {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil
	}
	if ref := metav1.GetControllerOf(s); ref != nil && ref.Kind == external.BootstrapConfigGVK.Kind {
		return []string{s.Namespace + "/" + ref.Name}
	}
	cluster := s.Labels[clusterv1.ClusterNameLabel]
	if s.Name == cluster+"-kubeconfig" || s.Name == cluster+"-ca" {
		return c.configsOfClusterName(s.Namespace, cluster)
	}
	return nil
}

// Reconcile brings one BootstrapConfig (namespace/name) to its data Secret.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	obj, err := c.configs.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	bc, err := external.FromObject[external.BootstrapConfig](obj)
	if err != nil {
		return fmt.Errorf("decoding external.BootstrapConfig %s: %w", key, err)
	}
	if bc.DeletionTimestamp != nil {
		return c.finalize(ctx, bc)
	}
	s := &state{bc: bc}
	// Every step reports what stops it as a Result: the run returns no error of its own.
	out, err := c.plan.Ensure(ctx, s, bc.Generation)
	if err != nil {
		return err
	}
	if err := c.writeStatus(ctx, bc, statusOf(bc, s, out)); err != nil {
		return fmt.Errorf("writing the status of external.BootstrapConfig %s: %w", key, err)
	}
	return s.next
}

func (c *Controller) patchFinalizers(ctx context.Context, bc *external.BootstrapConfig, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": bc.ResourceVersion}})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(configGVR).Namespace(bc.Namespace).Patch(ctx, bc.Name, types.MergePatchType, patch, external.Workers.PatchOptions())
	return err
}

// finalize runs the plan backwards (the tenant's tokens go, best effort) and then removes the
// finalizer.
func (c *Controller) finalize(ctx context.Context, bc *external.BootstrapConfig) error {
	if !slices.Contains(bc.Finalizers, Finalizer) {
		return nil
	}
	if left, err := c.plan.Cleanup(ctx, &state{bc: bc}); err != nil || left != "" {
		return err
	}
	rest := slices.DeleteFunc(slices.Clone(bc.Finalizers), func(f string) bool { return f == Finalizer })
	if err := c.patchFinalizers(ctx, bc, rest); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// writeStatus patches the status subresource when it changes.
func (c *Controller) writeStatus(ctx context.Context, bc *external.BootstrapConfig, st external.BootstrapConfigStatus) error {
	if apiequality.Semantic.DeepEqual(st, bc.Status) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(configGVR).Namespace(bc.Namespace).Patch(ctx, bc.Name, types.MergePatchType, patch,
		external.Workers.PatchOptions(), "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func labelValue(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}
