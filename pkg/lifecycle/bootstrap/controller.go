package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapdata "github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/worker"
)

const (
	// FieldManager writes the data Secret (server-side apply).
	FieldManager = "butler-apiserver"
	// Finalizer gives the tenant's tokens one cleanup pass when a config is deleted.
	Finalizer = "bootstrap.butlerlabs.dev/token-cleanup"
	// ConfigUIDLabel on a tenant token Secret names the BootstrapConfig that minted it.
	ConfigUIDLabel = "bootstrap.butlerlabs.dev/config-uid"
	// ConfigNameLabel is informational: the config's name (truncated to a label value).
	ConfigNameLabel = "bootstrap.butlerlabs.dev/config-name"

	clusterNameLabel = clusterv1.ClusterNameLabel
	managedByLabel   = "app.kubernetes.io/managed-by"
	// The TenantCluster labels the data Secret inherits from its config.
	tenantClusterLabel          = "butler.butlerlabs.dev/tenant-cluster"
	tenantClusterNamespaceLabel = "butler.butlerlabs.dev/tenant-cluster-namespace"
	// DataSecretType is CAPI's type for bootstrap data and kubeconfig Secrets.
	DataSecretType corev1.SecretType = "cluster.x-k8s.io/secret"
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
	// secrets lists the Secrets of a tenant namespace (worker.TenantSecrets).
	secrets interface {
		Secrets(namespace string) corelisters.SecretNamespaceLister
	}

	queue  *worker.Queue
	synced []cache.InformerSynced

	// tenantClient builds a client of a tenant cluster from its kubeconfig (tests replace it).
	tenantClient func(kubeconfig []byte) (kubernetes.Interface, error)
	tenantsMu    sync.Mutex
	tenants      map[string]cachedTenant
	now          func() time.Time
	// idle says why the worker does not run (the CRDs are not served).
	idle error
}

type cachedTenant struct {
	resourceVersion string
	client          kubernetes.Interface
}

// New builds the controller on the shared informers: BootstrapConfigs, Machines and Clusters
// through the dynamic factory, and the Secrets of the tenant namespaces.
func New(d *worker.Deps) (*Controller, error) {
	if d.Dynamic == nil || d.DynamicInformers == nil || d.Kube == nil {
		return nil, errors.New("the bootstrap worker needs a management cluster (kube and dynamic clients)")
	}
	// Without the CRDs (artifacts/crds) the informers would never sync: the worker idles and
	// says why, and the other workers run on.
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
		now:          time.Now,
	}
	c.queue = worker.NewQueue("bootstrapconfig", c.Reconcile)
	for _, h := range []struct {
		inf  cache.SharedIndexInformer
		keys func(any) []string
	}{
		{configs.Informer(), worker.ByKey},
		{machines.Informer(), configOfMachine},
		{clusters.Informer(), c.configsOfCluster},
	} {
		_ = h.inf.SetTransform(worker.DropManagedFields)
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
	m, err := toMachine(obj)
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
		m, err := toMachine(o)
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
	cluster := s.Labels[clusterNameLabel]
	if s.Name == cluster+"-kubeconfig" || s.Name == cluster+"-ca" {
		return c.configsOfClusterName(s.Namespace, cluster)
	}
	return nil
}

func toMachine(obj any) (*clusterv1.Machine, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("not unstructured: %T", obj)
	}
	m := &clusterv1.Machine{}
	return m, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, m)
}

func toCluster(obj runtime.Object) (*clusterv1.Cluster, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("not unstructured: %T", obj)
	}
	cl := &clusterv1.Cluster{}
	return cl, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cl)
}

func toConfig(obj runtime.Object) (*BootstrapConfig, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("not unstructured: %T", obj)
	}
	bc := &BootstrapConfig{}
	return bc, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, bc)
}

// outcome is what a reconcile concluded: the status to show and what the queue does next.
type outcome struct {
	phase   string
	status  metav1.ConditionStatus
	reason  string
	message string
	// secretName is set once the data Secret is written.
	secretName string
	// err is returned to the queue: a RequeueAfter, or a failure to retry with backoff.
	err error
}

func waiting(reason, format string, args ...any) outcome {
	return outcome{phase: PhasePending, status: metav1.ConditionFalse, reason: reason, message: fmt.Sprintf(format, args...)}
}

func failed(reason string, err error, retry error) outcome {
	return outcome{phase: PhaseFailed, status: metav1.ConditionFalse, reason: reason, message: err.Error(), err: retry}
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
	bc, err := toConfig(obj)
	if err != nil {
		return fmt.Errorf("decoding BootstrapConfig %s: %w", key, err)
	}
	if bc.DeletionTimestamp != nil {
		return c.finalize(ctx, bc)
	}
	out := c.reconcile(ctx, bc)
	if err := c.writeStatus(ctx, bc, out); err != nil {
		return fmt.Errorf("writing the status of BootstrapConfig %s: %w", key, err)
	}
	return out.err
}

func (c *Controller) reconcile(ctx context.Context, bc *BootstrapConfig) outcome {
	logger := klog.FromContext(ctx)
	os := bootstrapdata.OS(bc.Spec.OS.Type)
	if !isKnownOS(os) {
		return failed(ReasonInvalidSpec, fmt.Errorf("spec.os.type %q is not one of %v", bc.Spec.OS.Type, bootstrapdata.OSes), nil)
	}
	ttl, err := tokenTTL(bc)
	if err != nil {
		return failed(ReasonInvalidSpec, err, nil)
	}

	machine, out, ok := c.ownerMachine(bc)
	if !ok {
		return out
	}
	if err := c.ensureFinalizer(ctx, bc); err != nil {
		return outcome{phase: PhasePending, status: metav1.ConditionFalse, reason: ReasonWaitingForMachine, message: err.Error(), err: err}
	}
	clusterName := machine.Spec.ClusterName
	if clusterName == "" {
		clusterName = machine.Labels[clusterNameLabel]
	}

	// A joined Machine needs its token no more.
	if machine.Status.NodeRef.Name != "" {
		if err := c.removeTokens(ctx, bc, bc.Namespace, clusterName); err != nil {
			logger.Info("Could not remove the bootstrap token of a joined machine; it expires on its own", "machine", machine.Name, "err", err)
		}
		out := outcome{phase: PhaseReady, status: metav1.ConditionTrue, reason: ReasonDataSecretCreated,
			message: fmt.Sprintf("node %s joined", machine.Status.NodeRef.Name)}
		if s := c.dataSecret(ctx, bc); s != nil {
			out.secretName = s.Name
		}
		return out
	}

	clObj, err := c.clusters.ByNamespace(bc.Namespace).Get(clusterName)
	if apierrors.IsNotFound(err) {
		return waiting(ReasonWaitingForCluster, "waiting for Cluster %s/%s", bc.Namespace, clusterName)
	}
	if err != nil {
		return failed(ReasonWaitingForCluster, err, err)
	}
	cluster, err := toCluster(clObj)
	if err != nil {
		return failed(ReasonWaitingForCluster, err, err)
	}
	if init := cluster.Status.Initialization.ControlPlaneInitialized; init == nil || !*init {
		return waiting(ReasonWaitingForControlPlane, "waiting for Cluster %s to report status.initialization.controlPlaneInitialized", clusterName)
	}
	ep := cluster.Spec.ControlPlaneEndpoint
	if ep.Host == "" || ep.Port == 0 {
		return waiting(ReasonWaitingForEndpoint, "Cluster %s has no spec.controlPlaneEndpoint yet", clusterName)
	}
	endpoint := ep.String()

	ca, out, ok := c.clusterCA(ctx, bc.Namespace, clusterName)
	if !ok {
		return out
	}
	tenant, out, ok := c.tenant(ctx, bc.Namespace, clusterName)
	if !ok {
		return out
	}

	version := machine.Spec.Version
	if version == "" {
		return failed(ReasonMachineVersionMissing, fmt.Errorf("Machine %s has no spec.version; the data depends on the Kubernetes version", machine.Name), nil)
	}
	in := bootstrapdata.Input{
		ClusterName:       clusterName,
		Endpoint:          endpoint,
		Token:             placeholderToken,
		CACert:            ca,
		NodeName:          machine.Name,
		KubernetesVersion: version,
		NodeLabels:        bc.Spec.NodeLabels,
		NodeTaints:        bc.Spec.NodeTaints,
		ClusterDNS:        bc.Spec.ClusterDNS,
		ClusterDomain:     bc.Spec.ClusterDomain,
		PodCIDR:           bc.Spec.PodCIDR,
		ServiceCIDR:       bc.Spec.ServiceCIDR,
		ProviderID:        c.providerID(ctx, machine),
	}
	// Render once before minting, so a spec the renderer rejects leaves no token behind.
	if _, err := bootstrapdata.Render(os, in); err != nil {
		return renderFailure(err)
	}
	token, err := c.ensureToken(ctx, bc, tenant, ttl, machine)
	if err != nil {
		return failed(ReasonTenantUnreachable, fmt.Errorf("minting a bootstrap token in tenant cluster %s: %w", clusterName, err), err)
	}
	in.Token = token
	data, err := bootstrapdata.Render(os, in)
	if err != nil {
		return renderFailure(err)
	}
	if err := c.applyDataSecret(ctx, bc, clusterName, os, data); err != nil {
		return failed(ReasonDataSecretWriteFailed, err, err)
	}
	// Come back before the token lapses while the machine has not joined.
	return outcome{phase: PhaseReady, status: metav1.ConditionTrue, reason: ReasonDataSecretCreated,
		message:    fmt.Sprintf("%s data for node %s in Secret %s", os, machine.Name, bc.Name),
		secretName: bc.Name, err: worker.RequeueAfter(ttl / 3)}
}

// placeholderToken stands in for the token in the render that checks the input.
const placeholderToken = "abcdef.0123456789abcdef"

func renderFailure(err error) outcome {
	reason := ReasonRenderFailed
	if errors.Is(err, bootstrapdata.ErrInvalidInput) {
		reason = ReasonInvalidSpec
	}
	return failed(reason, err, nil)
}

func isKnownOS(os bootstrapdata.OS) bool {
	for _, o := range bootstrapdata.OSes {
		if o == os {
			return true
		}
	}
	return false
}

func tokenTTL(bc *BootstrapConfig) (time.Duration, error) {
	if bc.Spec.TokenTTL == "" {
		return defaultTokenTTL, nil
	}
	d, err := time.ParseDuration(bc.Spec.TokenTTL)
	if err != nil {
		return 0, fmt.Errorf("spec.tokenTTL %q: %w", bc.Spec.TokenTTL, err)
	}
	if d < time.Minute {
		return 0, fmt.Errorf("spec.tokenTTL %s is shorter than a minute", d)
	}
	return d, nil
}

// ownerMachine finds the CAPI Machine that owns the config.
func (c *Controller) ownerMachine(bc *BootstrapConfig) (*clusterv1.Machine, outcome, bool) {
	for _, ref := range bc.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != external.CAPIGroup || ref.Kind != external.MachineGVK.Kind {
			continue
		}
		obj, err := c.machines.ByNamespace(bc.Namespace).Get(ref.Name)
		if apierrors.IsNotFound(err) {
			return nil, waiting(ReasonWaitingForMachine, "waiting for Machine %s", ref.Name), false
		}
		if err != nil {
			return nil, failed(ReasonWaitingForMachine, err, err), false
		}
		m, err := toMachine(obj)
		if err != nil {
			return nil, failed(ReasonWaitingForMachine, err, err), false
		}
		return m, outcome{}, true
	}
	return nil, waiting(ReasonWaitingForMachine, "waiting for a Cluster API Machine to own this config"), false
}

func (c *Controller) ensureFinalizer(ctx context.Context, bc *BootstrapConfig) error {
	for _, f := range bc.Finalizers {
		if f == Finalizer {
			return nil
		}
	}
	return c.patchFinalizers(ctx, bc, append(append([]string{}, bc.Finalizers...), Finalizer))
}

func (c *Controller) patchFinalizers(ctx context.Context, bc *BootstrapConfig, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": bc.ResourceVersion}})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(configGVR).Namespace(bc.Namespace).Patch(ctx, bc.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// finalize removes the config's tokens from the tenant (best effort: they expire anyway, and a
// tenant being deleted must not hold the config) and then the finalizer.
func (c *Controller) finalize(ctx context.Context, bc *BootstrapConfig) error {
	idx := -1
	for i, f := range bc.Finalizers {
		if f == Finalizer {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	if cluster := c.clusterOf(bc); cluster != "" {
		if err := c.removeTokens(ctx, bc, bc.Namespace, cluster); err != nil {
			klog.FromContext(ctx).Info("Could not remove the bootstrap tokens of a deleted config; they expire on their own", "err", err)
		}
	}
	rest := append(append([]string{}, bc.Finalizers[:idx]...), bc.Finalizers[idx+1:]...)
	if err := c.patchFinalizers(ctx, bc, rest); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// clusterOf names the config's cluster from its label or its Machine.
func (c *Controller) clusterOf(bc *BootstrapConfig) string {
	if cl := bc.Labels[clusterNameLabel]; cl != "" {
		return cl
	}
	if m, _, ok := c.ownerMachine(bc); ok {
		return m.Spec.ClusterName
	}
	return ""
}

// clusterCA reads the cluster CA certificate from <cluster>-ca.
func (c *Controller) clusterCA(ctx context.Context, ns, cluster string) ([]byte, outcome, bool) {
	name := cluster + "-ca"
	s, err := c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, failed(ReasonCASecretNotFound, fmt.Errorf("the cluster CA Secret %s/%s does not exist", ns, name), worker.RequeueAfter(caRetry)), false
	}
	if err != nil {
		return nil, failed(ReasonCASecretNotFound, fmt.Errorf("reading the cluster CA Secret %s/%s: %w", ns, name, err), err), false
	}
	ca := s.Data[corev1.TLSCertKey]
	if len(ca) == 0 {
		ca = s.Data["ca.crt"]
	}
	if _, err := bootstrapdata.CAPin(ca); err != nil {
		return nil, failed(ReasonInvalidCA, fmt.Errorf("Secret %s/%s holds no CA certificate in tls.crt: %w", ns, name, err), worker.RequeueAfter(caRetry)), false
	}
	return ca, outcome{}, true
}

// tenant returns a client of the tenant cluster from <cluster>-kubeconfig, cached per
// resourceVersion of that Secret.
func (c *Controller) tenant(ctx context.Context, ns, cluster string) (kubernetes.Interface, outcome, bool) {
	name := cluster + "-kubeconfig"
	s, err := c.secrets.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Not in the cache (yet): ask the API server once, then wait for the watch.
		s, err = c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, waiting(ReasonWaitingForKubeconfig, "waiting for the kubeconfig Secret %s/%s", ns, name), false
	}
	if err != nil {
		return nil, failed(ReasonTenantUnreachable, err, err), false
	}
	key := ns + "/" + cluster
	c.tenantsMu.Lock()
	defer c.tenantsMu.Unlock()
	if t, ok := c.tenants[key]; ok && t.resourceVersion == s.ResourceVersion {
		return t.client, outcome{}, true
	}
	cl, err := c.tenantClient(s.Data[kubeconfigKey])
	if err != nil {
		return nil, failed(ReasonTenantUnreachable, fmt.Errorf("kubeconfig Secret %s/%s: %w", ns, name, err), nil), false
	}
	c.tenants[key] = cachedTenant{resourceVersion: s.ResourceVersion, client: cl}
	return cl, outcome{}, true
}

// ensureToken returns the token the data carries when the tenant still has it, pushing its
// expiration out when a third of the TTL is gone, or mints a new one.
func (c *Controller) ensureToken(ctx context.Context, bc *BootstrapConfig, tenant kubernetes.Interface, ttl time.Duration, machine *clusterv1.Machine) (string, error) {
	secrets := tenant.CoreV1().Secrets(bootstrapdata.TokenSecretNamespace)
	now := c.now()
	if token := c.currentToken(ctx, bc); token != "" {
		s, err := secrets.Get(ctx, bootstrapdata.TokenSecretName(token), metav1.GetOptions{})
		switch {
		case err == nil && s.Labels[ConfigUIDLabel] == string(bc.UID):
			_, expires, err := bootstrapdata.TokenFromSecret(s)
			if err == nil && (expires.IsZero() || expires.Sub(now) > ttl*2/3) {
				return token, nil
			}
			if err == nil && expires.After(now) {
				patch, _ := json.Marshal(map[string]any{"data": map[string][]byte{
					"expiration": []byte(now.Add(ttl).UTC().Format(time.RFC3339))}})
				if _, err := secrets.Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
					return "", fmt.Errorf("extending token %s: %w", bootstrapdata.TokenID(token), err)
				}
				return token, nil
			}
			// Expired: replace it.
		case err != nil && !apierrors.IsNotFound(err):
			return "", err
		}
	}
	token, err := bootstrapdata.GenerateToken()
	if err != nil {
		return "", err
	}
	s, err := bootstrapdata.TokenSecret(token, now.Add(ttl),
		fmt.Sprintf("Bootstrap token of Machine %s/%s, minted by butler-apiserver", bc.Namespace, machine.Name),
		map[string]string{ConfigUIDLabel: string(bc.UID), ConfigNameLabel: labelValue(bc.Name), managedByLabel: FieldManager})
	if err != nil {
		return "", err
	}
	if _, err := secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
		return "", err
	}
	klog.FromContext(ctx).V(2).Info("Minted a bootstrap token in the tenant cluster", "tokenID", bootstrapdata.TokenID(token), "ttl", ttl)
	return token, nil
}

// currentToken is the token in the config's existing data Secret, if it is ours and parses.
func (c *Controller) currentToken(ctx context.Context, bc *BootstrapConfig) string {
	s := c.dataSecret(ctx, bc)
	if s == nil {
		return ""
	}
	info, err := bootstrapdata.Parse(bootstrapdata.OS(s.Annotations[bootstrapdata.OSAnnotation]), s.Data[bootstrapdata.DataValueKey])
	if err != nil {
		return ""
	}
	return info.Token
}

// dataSecret is the config's data Secret if it exists and the config controls it. The cache
// can lag our own apply, so a miss is asked of the API server before minting anew.
func (c *Controller) dataSecret(ctx context.Context, bc *BootstrapConfig) *corev1.Secret {
	s, err := c.secrets.Secrets(bc.Namespace).Get(bc.Name)
	if apierrors.IsNotFound(err) {
		s, err = c.kube.CoreV1().Secrets(bc.Namespace).Get(ctx, bc.Name, metav1.GetOptions{})
	}
	if err != nil || !metav1.IsControlledBy(s, bc) || len(s.Data[bootstrapdata.DataValueKey]) == 0 {
		return nil
	}
	return s
}

// removeTokens deletes the tenant token Secrets the config minted.
func (c *Controller) removeTokens(ctx context.Context, bc *BootstrapConfig, ns, cluster string) error {
	if bc.UID == "" {
		return nil
	}
	tenant, out, ok := c.tenant(ctx, ns, cluster)
	if !ok {
		return errors.New(out.message)
	}
	secrets := tenant.CoreV1().Secrets(bootstrapdata.TokenSecretNamespace)
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: ConfigUIDLabel + "=" + string(bc.UID)})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range list.Items {
		if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removed a bootstrap token from the tenant cluster", "secret", s.Name)
	}
	return errors.Join(errs...)
}

// providerID is the Machine's spec.providerID, else its infrastructure machine's, else empty
// (the infrastructure provider sets it on the Node then).
func (c *Controller) providerID(ctx context.Context, m *clusterv1.Machine) string {
	if m.Spec.ProviderID != "" {
		return m.Spec.ProviderID
	}
	ref := m.Spec.InfrastructureRef
	for _, k := range external.Kinds {
		if k.GVK.Group != ref.APIGroup || k.GVK.Kind != ref.Kind || ref.Name == "" {
			continue
		}
		u, err := c.dyn.Resource(k.GVR()).Namespace(m.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		id, _, _ := unstructured.NestedString(u.Object, "spec", "providerID")
		return id
	}
	return ""
}

// applyDataSecret server-side applies the data Secret CAPI reads (Machine.spec.bootstrap.dataSecretName):
// the data and its contract format, which the infrastructure provider delivers it by.
func (c *Controller) applyDataSecret(ctx context.Context, bc *BootstrapConfig, cluster string, os bootstrapdata.OS, data []byte) error {
	lbls := map[string]string{clusterNameLabel: cluster, managedByLabel: FieldManager}
	for k, v := range bc.Labels {
		if k == tenantClusterLabel || k == tenantClusterNamespaceLabel {
			lbls[k] = v
		}
	}
	secret := corev1ac.Secret(bc.Name, bc.Namespace).
		WithType(DataSecretType).
		WithLabels(lbls).
		WithAnnotations(map[string]string{bootstrapdata.OSAnnotation: string(os)}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(external.BootstrapConfigGVK.GroupVersion().String()).
			WithKind(external.BootstrapConfigGVK.Kind).
			WithName(bc.Name).WithUID(bc.UID).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithData(map[string][]byte{bootstrapdata.DataValueKey: data, bootstrapdata.DataFormatKey: []byte(os.DataFormat())})
	_, err := c.kube.CoreV1().Secrets(bc.Namespace).Apply(ctx, secret, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// writeStatus patches the status subresource when it changes; conditions keep their
// lastTransitionTime while their status holds.
func (c *Controller) writeStatus(ctx context.Context, bc *BootstrapConfig, out outcome) error {
	st := *bc.Status.DeepCopy()
	st.Phase = out.phase
	st.ObservedGeneration = bc.Generation
	if out.secretName != "" {
		name, created := out.secretName, true
		st.DataSecretName = &name
		st.Initialization = &Initialization{DataSecretCreated: &created}
	}
	for _, t := range []string{ConditionDataSecretAvailable, ConditionReady} {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: out.status, Reason: out.reason, Message: out.message, ObservedGeneration: bc.Generation,
		})
	}
	if apiequality.Semantic.DeepEqual(st, bc.Status) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(configGVR).Namespace(bc.Namespace).Patch(ctx, bc.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "status")
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

// DeepCopy copies the status (conditions included).
func (s *BootstrapConfigStatus) DeepCopy() *BootstrapConfigStatus {
	out := *s
	if s.Initialization != nil {
		i := *s.Initialization
		if i.DataSecretCreated != nil {
			v := *i.DataSecretCreated
			i.DataSecretCreated = &v
		}
		out.Initialization = &i
	}
	if s.DataSecretName != nil {
		v := *s.DataSecretName
		out.DataSecretName = &v
	}
	out.Conditions = append([]metav1.Condition(nil), s.Conditions...)
	return &out
}
