package machines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// Options configure the controller.
type Options struct {
	// StateDir keeps each machine's credentials (machines/<namespace>/<name>) and each tenant
	// kwok's kubeconfig (kwok/<namespace>/<cluster>).
	StateDir string
	// Workers is how many machines join at once.
	Workers int
	// RetryAfter is how soon a failed join is first tried again (a kubelet retries too); it
	// doubles with each failure of the same machine up to MaxRetryAfter.
	RetryAfter    time.Duration
	MaxRetryAfter time.Duration
	// RealNodes configure the machines of spec.nodeType real.
	RealNodes RealNodesOptions
	// ExternalControlPlaneNamespaces are those whose control planes a real Steward and its
	// Cluster API provider run (butler-localprovider --external-control-plane-namespaces).
	ExternalControlPlaneNamespaces []string
}

// Controller reconciles LocalClusters and LocalMachines.
type Controller struct {
	// dnsMu serializes the cluster DNS's applies: two nodes' first applies would both create
	// the kube-dns Service, and the second create fails on its ClusterIP.
	dnsMu    sync.Mutex
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	opts     Options
	joiner   *Joiner
	kwoks    *Kwoks
	nodes    *RealNodes
	clusters cache.GenericLister
	// capiClusters are Cluster API's Clusters: a paused one (a hibernated tenant cluster) has
	// no kwok.
	capiClusters cache.GenericLister
	machines     cache.GenericLister
	capi         cache.SharedIndexInformer
	secrets      corelisters.SecretLister

	machineQueue *controllerkit.Queue
	clusterQueue *controllerkit.Queue
	failures     sync.Map // machine key -> backoff: its consecutive failed joins and the next try's time
	// joined holds the machines whose join this process finished, until the informer shows
	// them provisioned: an event in between must not join again.
	joined sync.Map // machine key -> UID
	synced []cache.InformerSynced
}

// byDataSecret indexes Machines by namespace/bootstrap data Secret name.
const byDataSecret = "dataSecret"

// New builds the controller on d's informers. d.Dynamic and d.Kube are the management
// cluster's clients.
func New(d *controllerkit.Deps, opts Options) (*Controller, error) {
	if opts.StateDir == "" {
		return nil, errors.New("machines: a state directory is needed")
	}
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.RetryAfter <= 0 {
		// Short: the first attempt can race the control plane's signer of cluster-info for a
		// token minted a moment ago.
		opts.RetryAfter = 500 * time.Millisecond
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = 30 * time.Second
	}
	kwoks, err := NewKwoks(filepath.Join(opts.StateDir, "kwok"))
	if err != nil {
		return nil, err
	}
	c := &Controller{kube: d.Kube, dyn: d.Dynamic, opts: opts, joiner: NewJoiner(), kwoks: kwoks}
	c.machineQueue = controllerkit.NewQueue("localmachine", c.reconcileMachine)
	if opts.RealNodes.RunDir == "" {
		opts.RealNodes.RunDir = "/run/butler-nodes"
	}
	// A node whose process exits is looked at again: its condition says so.
	c.nodes = NewRealNodes(opts.RealNodes, opts.StateDir, c.machineQueue.Add)
	c.clusterQueue = controllerkit.NewQueue("localcluster", c.reconcileCluster)

	lm := d.DynamicInformers.ForResource(LocalMachinesResource)
	lc := d.DynamicInformers.ForResource(LocalClustersResource)
	m := d.DynamicInformers.ForResource(MachinesResource)
	cl := d.DynamicInformers.ForResource(ClustersResource)
	secrets := d.KubeInformersFor(clusterv1.ClusterNameLabel).Core().V1().Secrets()
	c.machines, c.clusters, c.capi, c.secrets = lm.Lister(), lc.Lister(), m.Informer(), secrets.Lister()
	c.capiClusters = cl.Lister()

	if err := c.capi.AddIndexers(cache.Indexers{byDataSecret: indexByDataSecret}); err != nil {
		return nil, err
	}
	if _, err := lm.Informer().AddEventHandler(c.machineQueue.Handler(controllerkit.ByKey)); err != nil {
		return nil, err
	}
	if _, err := lc.Informer().AddEventHandler(c.clusterQueue.Handler(controllerkit.ByKey)); err != nil {
		return nil, err
	}
	if _, err := c.capi.AddEventHandler(c.machineQueue.Handler(localMachineOf)); err != nil {
		return nil, err
	}
	if _, err := cl.Informer().AddEventHandler(c.clusterQueue.Handler(localClusterOf)); err != nil {
		return nil, err
	}
	if _, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.secretChanged,
		UpdateFunc: func(_, obj any) { c.secretChanged(obj) },
		DeleteFunc: c.secretChanged,
	}); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{lm.Informer().HasSynced, lc.Informer().HasSynced,
		c.capi.HasSynced, cl.Informer().HasSynced, secrets.Informer().HasSynced}
	return c, nil
}

// Run runs both queues until ctx is done, then stops every kwok and every real node.
func (c *Controller) Run(ctx context.Context) {
	c.kwoks.setBase(ctx)
	c.nodes.setBase(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.clusterQueue.Run(ctx, 2, c.synced...)
	}()
	c.machineQueue.Run(ctx, c.opts.Workers, c.synced...)
	<-done
	c.nodes.StopAll(klog.NewContext(context.Background(), klog.FromContext(ctx)))
}

// indexByDataSecret is the Machine index namespace/spec.bootstrap.dataSecretName.
func indexByDataSecret(obj any) ([]string, error) {
	m, err := external.FromObject[clusterv1.Machine](obj)
	if err != nil || m.Spec.Bootstrap.DataSecretName == nil {
		return nil, nil
	}
	return []string{m.Namespace + "/" + *m.Spec.Bootstrap.DataSecretName}, nil
}

// localMachineOf maps a Machine to the LocalMachine its infrastructureRef names.
func localMachineOf(obj any) []string {
	m, err := external.FromObject[clusterv1.Machine](obj)
	if err != nil {
		return nil
	}
	ref := m.Spec.InfrastructureRef
	if ref.Kind != LocalMachineKind || ref.APIGroup != GroupVersion.Group || ref.Name == "" {
		return nil
	}
	return []string{m.Namespace + "/" + ref.Name}
}

// secretChanged queues what a Secret of a cluster feeds: the LocalCluster (its kwok) for the
// cluster's kubeconfig, the LocalMachines whose Machines name it as bootstrap data.
func (c *Controller) secretChanged(obj any) {
	s, ok := controllerkit.Unwrap(obj).(*corev1.Secret)
	if !ok {
		return
	}
	cluster := s.Labels[clusterv1.ClusterNameLabel]
	if cluster != "" && s.Name == cluster+"-kubeconfig" {
		c.clusterQueue.Add(s.Namespace + "/" + localClusterNameFor(cluster))
	}
	if cluster != "" && (s.Name == cluster+"-ca" || s.Name == cluster+"-kubeconfig") {
		// A new cluster CA, or CAs to trust: every machine of the cluster renews its
		// certificate, or trusts them.
		selector := labels.SelectorFromSet(labels.Set{clusterv1.ClusterNameLabel: cluster})
		machines, _ := c.machines.ByNamespace(s.Namespace).List(selector)
		for _, m := range machines {
			if acc, err := meta.Accessor(m); err == nil {
				c.machineQueue.Add(s.Namespace + "/" + acc.GetName())
			}
		}
		return
	}
	machines, err := c.capi.GetIndexer().ByIndex(byDataSecret, s.Namespace+"/"+s.Name)
	if err != nil {
		return
	}
	for _, m := range machines {
		for _, k := range localMachineOf(m) {
			c.machineQueue.Add(k)
		}
	}
}

// localClusterOf maps a Cluster to its LocalCluster's key.
func localClusterOf(obj any) []string {
	m, err := meta.Accessor(controllerkit.Unwrap(obj))
	if err != nil {
		return nil
	}
	return []string{m.GetNamespace() + "/" + localClusterNameFor(m.GetName())}
}

// localClusterNameFor is the LocalCluster of a Cluster: the same name (the TenantCluster
// controller names both after the tenant cluster).
func localClusterNameFor(cluster string) string { return cluster }

func splitKey(key string) (string, string, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err == nil && ns == "" {
		err = fmt.Errorf("key %q has no namespace", key)
	}
	return ns, name, err
}

// --- LocalCluster ---------------------------------------------------------------------------

func (c *Controller) reconcileCluster(ctx context.Context, key string) error {
	ns, name, err := splitKey(key)
	if err != nil {
		return nil
	}
	obj, err := c.clusters.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.kwoks.Stop(key)
		return nil
	}
	if err != nil {
		return err
	}
	lc, err := external.FromObject[external.LocalCluster](obj)
	if err != nil {
		return err
	}
	if lc.DeletionTimestamp != nil {
		c.kwoks.Stop(key)
		return nil
	}
	cluster := clusterOf(lc.OwnerReferences, lc.Labels, lc.Name)
	if c.paused(lc, cluster) {
		// A paused cluster (a hibernated one) is left alone, as Cluster API's contract asks of
		// an infrastructure provider: its kwok would only dial a stopped kube-apiserver. Its
		// real nodes stop and clean up; they boot again on the wake.
		c.kwoks.Stop(key)
		c.nodes.StopCluster(ctx, key)
		return nil
	}
	secret, err := c.secrets.Secrets(ns).Get(cluster + "-kubeconfig")
	if apierrors.IsNotFound(err) {
		secret = nil // the Secret's event brings us back
	} else if err != nil {
		return err
	}
	c.wakeRealNodes(ns, cluster)
	externalCP := external.MadeForNamespaces(lc, c.opts.ExternalControlPlaneNamespaces)
	provisioned, cond := clusterReadiness(lc, cluster, secret != nil, externalCP)
	if err := c.applyClusterStatus(ctx, lc, provisioned, cond); err != nil {
		return err
	}
	if !provisioned || secret == nil {
		return nil
	}
	// One kwok per tenant cluster, from the moment its admin kubeconfig exists, so the first
	// Node is kept the moment it registers.
	return c.kwoks.Ensure(key, secret.Data["value"])
}

// paused says whether Cluster API pauses lc: its Cluster's spec.paused, or the annotation
// cluster.x-k8s.io/paused on lc.
func (c *Controller) paused(lc *external.LocalCluster, cluster string) bool {
	obj, err := c.capiClusters.ByNamespace(lc.Namespace).Get(cluster)
	if err != nil {
		obj = nil
	}
	return isPaused(obj, lc.Annotations)
}

func isPaused(cluster runtime.Object, annotations map[string]string) bool {
	if _, ok := annotations[clusterv1.PausedAnnotation]; ok {
		return true
	}
	c, err := external.FromObject[clusterv1.Cluster](cluster)
	return err == nil && c.Spec.Paused != nil && *c.Spec.Paused
}

// clusterReadiness is whether a LocalCluster is provisioned, and its Ready condition: once the
// control plane provider has set spec.controlPlaneEndpoint and written the cluster's
// <cluster>-kubeconfig Secret. Cluster API's ClusterCache connects to a cluster the moment its
// infrastructure is provisioned and, when the kubeconfig Secret is not there yet, tries again
// only 30 s later (ConnectionCreationRetryInterval, no flag): until it connects no Machine gets
// its nodeRef. A LocalCluster provisioned once stays so when the Secret goes (status.initialization
// is set once, by contract). An external control plane (the real Steward provider) gets no such
// wait: it writes the Secret only once the infrastructure is provisioned.
func clusterReadiness(lc *external.LocalCluster, cluster string, kubeconfig, externalControlPlane bool) (bool, metav1.Condition) {
	ep := lc.Spec.ControlPlaneEndpoint
	was := lc.Status.Initialization != nil && lc.Status.Initialization.Provisioned != nil && *lc.Status.Initialization.Provisioned
	switch {
	case ep.Host == "" || ep.Port == 0:
		return false, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse,
			Reason:  ReasonWaitingForControlPlaneEndpoint,
			Message: "waiting for the control plane provider to set spec.controlPlaneEndpoint"}
	case !kubeconfig && !was && !externalControlPlane:
		return false, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse,
			Reason:  ReasonWaitingForKubeconfig,
			Message: fmt.Sprintf("waiting for the control plane provider to write the Secret %s-kubeconfig", cluster)}
	}
	return true, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonProvisioned,
		Message: fmt.Sprintf("the control plane serves at %s:%d; machines run on this host", ep.Host, ep.Port)}
}

// clusterOf is the Cluster API Cluster an infrastructure object belongs to: its Cluster
// owner, its cluster-name label, or else def.
func clusterOf(owners []metav1.OwnerReference, labels map[string]string, def string) string {
	for _, o := range owners {
		if o.Kind == "Cluster" && strings.HasPrefix(o.APIVersion, clusterv1.GroupVersion.Group+"/") {
			return o.Name
		}
	}
	if n := labels[clusterv1.ClusterNameLabel]; n != "" {
		return n
	}
	return def
}

func (c *Controller) applyClusterStatus(ctx context.Context, lc *external.LocalCluster, provisioned bool, cond metav1.Condition) error {
	conds := append([]metav1.Condition(nil), lc.Status.Conditions...)
	cond.ObservedGeneration = lc.Generation
	changed := meta.SetStatusCondition(&conds, cond)
	was := lc.Status.Initialization != nil && lc.Status.Initialization.Provisioned != nil && *lc.Status.Initialization.Provisioned
	if !changed && was == provisioned {
		return nil
	}
	status := map[string]any{"conditions": []any{conditionMap(*meta.FindStatusCondition(conds, cond.Type))}}
	if provisioned {
		status["initialization"] = map[string]any{"provisioned": true}
	}
	return c.applyStatus(ctx, LocalClustersResource, lc.Namespace, lc.Name, LocalClusterKind, status)
}

// --- LocalMachine ---------------------------------------------------------------------------

// reconcileMachine joins a LocalMachine's node to its tenant (and boots it, for a real node),
// keeps a joined one's credentials and certificates current, or removes it when deleted.
func (c *Controller) reconcileMachine(ctx context.Context, key string) error {
	ns, name, err := splitKey(key)
	if err != nil {
		return nil
	}
	obj, err := c.machines.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.failures.Delete(key)
		c.joined.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	lm, err := external.FromObject[external.LocalMachine](obj)
	if err != nil {
		return err
	}
	real := nodeTypeOf(obj) == NodeTypeReal
	if lm.DeletionTimestamp != nil {
		return c.deleteMachine(ctx, lm, real)
	}
	if m := c.ownerMachine(lm); m != nil && m.DeletionTimestamp != nil && !lm.Status.Provisioned() {
		// A machine Cluster API is deleting never joins (nor, from a stale copy, comes back):
		// its token is gone, and the connection would count as a use of the tenant (it wakes
		// a hibernating one).
		return nil
	}
	if !hasFinalizer(lm) {
		// Before anything joins: whatever this machine registers is removed with it.
		if err := c.applyMachine(ctx, lm, lm.Spec.ProviderID, true); err != nil {
			return err
		}
	}
	if lm.Status.Provisioned() {
		c.joined.Delete(key)
		return c.keepJoined(ctx, key, lm, real)
	}
	if uid, ok := c.joined.Load(key); ok && uid == lm.UID {
		return nil // provisioned a moment ago; the informer has not seen it yet
	}
	return c.joinMachine(ctx, key, lm, real)
}

// keepJoined keeps a joined machine's node running (a real one), its certificate renewed (a
// real node restarts on new credentials) and its kubelet's serving certificate approved.
func (c *Controller) keepJoined(ctx context.Context, key string, lm *external.LocalMachine, real bool) error {
	if real {
		if err := c.keepRealNode(ctx, key, lm); err != nil {
			return err
		}
	}
	changed, err := c.renewCertificate(ctx, key, lm)
	if err != nil || !real {
		return err
	}
	if changed {
		if err := c.restartRealNode(ctx, key, lm); err != nil {
			return err
		}
	}
	if booted, down := c.nodes.Status(key); booted && down == "" {
		return c.approveServing(ctx, key, lm)
	}
	return nil
}

// restartRealNode starts the node's kubelet and kube-proxy again on the machine's new
// credentials; what keeps them from starting is the machine's condition at once.
func (c *Controller) restartRealNode(ctx context.Context, key string, lm *external.LocalMachine) error {
	if err := c.nodes.Restart(ctx, key, c.machineDir(lm)); err != nil {
		return c.machineFailed(ctx, key, lm, &JoinError{Reason: ReasonNodeBootFailed, Err: err})
	}
	return nil
}

// joinMachine joins the machine with its bootstrap data, as a kwok node or a real one (checked,
// given an address, then booted once joined), and records it provisioned.
func (c *Controller) joinMachine(ctx context.Context, key string, lm *external.LocalMachine, real bool) error {
	info, waiting := c.bootstrapData(lm)
	if waiting != nil {
		phase := PhasePending
		if waiting.Reason == ReasonBootstrapDataInvalid {
			phase = PhaseFailed
		}
		return c.setMachineCondition(ctx, lm, phase, *waiting)
	}
	if wait := c.backingOff(key); wait > 0 {
		return controllerkit.RequeueAfter(wait)
	}
	providerID := info.ProviderID
	if providerID == "" {
		providerID = ProviderIDPrefix + lm.Namespace + "/" + lm.Name
	}
	if real {
		// What it lacks (images, binaries, space) it says before it joins: no Node, no address.
		if err := c.nodes.Preflight(key, c.machineDir(lm)); err != nil {
			return c.machineFailed(ctx, key, lm, &JoinError{Reason: ReasonNodeBootFailed, Err: err})
		}
	}
	joined, reg, err := c.join(ctx, key, lm, info, providerID, real)
	if err != nil {
		var je *JoinError
		if isNoSpace(err) {
			je = &JoinError{Reason: ReasonNodeOutOfSpace, Err: err}
		} else if !errors.As(err, &je) {
			return err
		}
		if real {
			c.nodes.Release(ctx, key)
		}
		return c.machineFailed(ctx, key, lm, je)
	}
	if real {
		if err := c.bootRealNode(ctx, key, lm, info, joined, providerID); err != nil {
			c.nodes.Release(ctx, key)
			return c.machineFailed(ctx, key, lm, &JoinError{Reason: ReasonNodeBootFailed, Err: err})
		}
	}
	c.failures.Delete(key)
	return c.recordJoined(ctx, key, lm, info, joined, reg, providerID)
}

// join records the Node the machine is about to register, then joins: a real node that joined
// but never booted is not provisioned, so its status names no Node, and deleting the machine
// must find it. A real node's address is leased once it holds its credentials.
func (c *Controller) join(ctx context.Context, key string, lm *external.LocalMachine, info *bootstrap.JoinInfo, providerID string, real bool) (*Joined, Registration, error) {
	if err := writeRegistration(c.machineDir(lm), registration{NodeName: info.NodeName, ProviderID: providerID}); err != nil {
		return nil, Registration{}, err
	}
	reg := KwokNode(providerID)
	joined, err := c.joiner.JoinAs(ctx, *info, c.machineDir(lm), func() (Registration, error) {
		if !real {
			return reg, nil
		}
		ip, err := c.nodes.Address(key)
		if err != nil {
			return Registration{}, &JoinError{Reason: ReasonNodeBootFailed, Err: err}
		}
		reg = Registration{ProviderID: providerID, Address: ip.String()}
		return reg, nil
	})
	return joined, reg, err
}

// bootRealNode gives a joined real node its proxy binding, cluster DNS and API endpoint in the
// tenant, and boots its kubelet and kube-proxy.
func (c *Controller) bootRealNode(ctx context.Context, key string, lm *external.LocalMachine, info *bootstrap.JoinInfo, joined *Joined, providerID string) error {
	if err := c.bindProxy(ctx, lm); err != nil {
		return err
	}
	if err := c.applyClusterDNS(ctx, lm, info); err != nil {
		return err
	}
	if err := c.applyAPIEndpoint(ctx, lm, info); err != nil {
		return err
	}
	spec := BootSpec{Cluster: lm.Namespace + "/" + clusterOf(nil, lm.Labels, ""), MachineDir: c.machineDir(lm), Endpoint: info.Endpoint, NodeName: joined.Node.Name,
		ProviderID: providerID, ClusterDNS: info.ClusterDNS, ClusterDomain: info.ClusterDomain}
	return c.nodes.Boot(ctx, key, spec)
}

// recordJoined writes the machine provisioned, Running, with its node's name and addresses.
func (c *Controller) recordJoined(ctx context.Context, key string, lm *external.LocalMachine, info *bootstrap.JoinInfo, joined *Joined, reg Registration, providerID string) error {
	if err := c.applyMachine(ctx, lm, providerID, true); err != nil {
		return err
	}
	addresses := []any{
		map[string]any{"type": string(clusterv1.MachineHostName), "address": joined.Node.Name},
		map[string]any{"type": string(clusterv1.MachineInternalIP), "address": reg.Address},
	}
	cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonJoined,
		Message: fmt.Sprintf("joined as Node %s with its %s bootstrap data", joined.Node.Name, info.Format)}
	if err := c.applyMachineStatus(ctx, lm, cond, map[string]any{
		"initialization": map[string]any{"provisioned": true},
		"addresses":      addresses,
		"nodeName":       joined.Node.Name,
		"phase":          PhaseRunning,
	}); err != nil {
		return err
	}
	c.joined.Store(key, lm.UID)
	return nil
}

// machineFailed records a failed join or boot in the machine's condition and tries again
// later, as a kubelet (or a machine's first boot) retries.
func (c *Controller) machineFailed(ctx context.Context, key string, lm *external.LocalMachine, je *JoinError) error {
	if isNoSpace(je.Err) {
		je = &JoinError{Reason: ReasonNodeOutOfSpace, Err: je.Err}
	} else if errors.Is(je.Err, ErrPortTaken) {
		je = &JoinError{Reason: ReasonNodePortTaken, Err: je.Err}
	}
	if err := c.setMachineCondition(ctx, lm, PhaseFailed, metav1.Condition{Type: ConditionReady,
		Status: metav1.ConditionFalse, Reason: je.Reason, Message: je.Error()}); err != nil {
		return err
	}
	after := c.retryAfter(key)
	klog.FromContext(ctx).Info("Join failed; trying again later", "reason", je.Reason, "err", je.Err, "after", after)
	return controllerkit.RequeueAfter(after)
}

// renewCertificate renews a joined machine's node client certificate when the cluster's CA
// (Secret <cluster>-ca, the one Cluster API names) did not sign it, as the machine's kubelet
// would once its provider hands it the new CA: during a rotation's first phase. Then the
// machine trusts the CAs the cluster's kubeconfig (Secret <cluster>-kubeconfig) names: both
// while a rotation is prepared, the new one only once it completed. changed says whether its
// credentials changed.
func (c *Controller) renewCertificate(ctx context.Context, key string, lm *external.LocalMachine) (changed bool, err error) {
	cluster := clusterOf(nil, lm.Labels, "")
	if cluster == "" {
		return false, nil
	}
	secret, err := c.secrets.Secrets(lm.Namespace).Get(cluster + "-ca")
	if err != nil {
		return false, nil // no CA to compare with; the Secret's event brings the machine back
	}
	ca := secret.Data[corev1.TLSCertKey]
	if len(ca) == 0 {
		ca = secret.Data["ca.crt"]
	}
	renewed, err := c.joiner.Renew(ctx, c.machineDir(lm), ca)
	if err != nil {
		after := c.retryAfter(key)
		klog.FromContext(ctx).Info("Renewing the node client certificate failed; trying again later", "err", err, "after", after)
		return false, controllerkit.RequeueAfter(after)
	}
	c.failures.Delete(key)
	if renewed {
		klog.FromContext(ctx).Info("Node client certificate renewed from the cluster's new CA", "node", lm.Status.NodeName)
	}
	trusted, err := c.followTrust(ctx, lm, cluster, ca)
	return renewed || trusted, err
}

// followTrust makes the machine trust the CAs of the cluster's kubeconfig when they include the
// cluster's CA ca (a kubeconfig for an endpoint of another CA says nothing of the tenant's);
// changed says whether they changed.
func (c *Controller) followTrust(ctx context.Context, lm *external.LocalMachine, cluster string, ca []byte) (changed bool, err error) {
	secret, err := c.secrets.Secrets(lm.Namespace).Get(cluster + "-kubeconfig")
	if err != nil {
		return false, nil // the Secret's event brings the machine back
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["value"])
	if err != nil {
		return false, nil
	}
	trust, err1 := certSet(config.CAData)
	clusterCA, err2 := certSet(ca)
	if err1 != nil || err2 != nil || !trust.IsSuperset(clusterCA) {
		return false, nil
	}
	changed, err = c.joiner.Trust(c.machineDir(lm), config.CAData)
	if err != nil {
		return false, fmt.Errorf("the CAs the machine trusts: %w", err)
	}
	if changed {
		klog.FromContext(ctx).Info("Machine trusts the CAs of the cluster's kubeconfig now", "node", lm.Status.NodeName)
	}
	return changed, nil
}

// backoff is a machine's run of failed joins: how many, and when the next may start.
type backoff struct {
	failed int
	next   time.Time
}

// retryAfter is the wait before the next join of key: RetryAfter doubled per earlier failure,
// at most MaxRetryAfter.
func (c *Controller) retryAfter(key string) time.Duration {
	var b backoff
	if v, ok := c.failures.Load(key); ok {
		b = v.(backoff)
	}
	d := c.opts.RetryAfter
	for range b.failed {
		if d *= 2; d >= c.opts.MaxRetryAfter {
			d = c.opts.MaxRetryAfter
			break
		}
	}
	c.failures.Store(key, backoff{failed: b.failed + 1, next: time.Now().Add(d)})
	return d
}

// backingOff is how long key's next join still waits. Any event brings a machine back (its own
// status write, its Machine's, a Secret's), and without this a failing node would boot again at
// each one, past its backoff, with no pause between tries for what a try left to be seen gone.
func (c *Controller) backingOff(key string) time.Duration {
	if v, ok := c.failures.Load(key); ok {
		return time.Until(v.(backoff).next)
	}
	return 0
}

// bootstrapData reads the machine's bootstrap data: the data Secret its Machine names. The
// machine is an image of the OS the Secret's annotation names, and takes the data as a
// provider hands it over: by the contract's data.format (cloud-config when unset), which must
// be what that OS's first-boot agent reads. Until there is data to join with it returns the
// condition that says what is missing.
func (c *Controller) bootstrapData(lm *external.LocalMachine) (*bootstrap.JoinInfo, *metav1.Condition) {
	waiting := func(reason, format string, args ...any) (*bootstrap.JoinInfo, *metav1.Condition) {
		return nil, &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse,
			Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	machine := c.ownerMachine(lm)
	if machine == nil {
		return waiting(ReasonWaitingForMachine, "waiting for Cluster API to make a Machine the owner")
	}
	if machine.Spec.Bootstrap.DataSecretName == nil || *machine.Spec.Bootstrap.DataSecretName == "" {
		return waiting(ReasonWaitingForBootstrapData, "waiting for Machine %s's bootstrap data (spec.bootstrap.dataSecretName)", machine.Name)
	}
	secretName := *machine.Spec.Bootstrap.DataSecretName
	secret, err := c.secrets.Secrets(lm.Namespace).Get(secretName)
	if err != nil {
		return waiting(ReasonWaitingForBootstrapData, "waiting for the bootstrap data Secret %s (labelled %s)", secretName, clusterv1.ClusterNameLabel)
	}
	os := bootstrap.OS(secret.Annotations[bootstrap.OSAnnotation])
	if os == "" {
		return waiting(ReasonBootstrapDataInvalid, "the bootstrap data Secret %s has no %s annotation naming the machine's OS", secretName, bootstrap.OSAnnotation)
	}
	if got, want := bootstrap.SecretDataFormat(secret), os.DataFormat(); got != want {
		return waiting(ReasonBootstrapDataInvalid, "the bootstrap data Secret %s is delivered as %s (data.format %q; unset means cloud-config), but a %s machine's first-boot agent reads only %s",
			secretName, got, secret.Data[bootstrap.DataFormatKey], os, want)
	}
	info, err := bootstrap.Parse(os, secret.Data[bootstrap.DataValueKey])
	if err != nil {
		return waiting(ReasonBootstrapDataInvalid, "the bootstrap data Secret %s: %v", secretName, err)
	}
	// The machine's image is of the Machine's version, as a real provider picks it: its kubelet
	// reports that version, and its kubeadm must read the JoinConfiguration it is given.
	if info.KubernetesVersion == "" {
		info.KubernetesVersion = machine.Spec.Version
	}
	if info.KubeadmAPIVersion != "" && info.KubernetesVersion != "" {
		if err := bootstrap.KubeadmReads(info.KubernetesVersion, info.KubeadmAPIVersion); err != nil {
			return waiting(ReasonBootstrapDataInvalid, "the bootstrap data Secret %s cannot be joined with by Machine %s's image: %v", secretName, machine.Name, err)
		}
	}
	return &info, nil
}

// ownerMachine is the Machine that owns lm, from the informer's cache.
func (c *Controller) ownerMachine(lm *external.LocalMachine) *clusterv1.Machine {
	for _, o := range lm.OwnerReferences {
		if o.Kind != "Machine" || !strings.HasPrefix(o.APIVersion, clusterv1.GroupVersion.Group+"/") {
			continue
		}
		obj, exists, err := c.capi.GetIndexer().GetByKey(lm.Namespace + "/" + o.Name)
		if err != nil || !exists {
			return nil
		}
		m, err := external.FromObject[clusterv1.Machine](obj)
		if err != nil {
			return nil
		}
		return m
	}
	return nil
}

func (c *Controller) machineDir(lm *external.LocalMachine) string {
	return filepath.Join(c.opts.StateDir, "machines", lm.Namespace, lm.Name)
}

func hasFinalizer(lm *external.LocalMachine) bool {
	for _, f := range lm.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

// deleteMachine removes the machine's Node from its tenant cluster, then its state, then the
// finalizer.
func (c *Controller) deleteMachine(ctx context.Context, lm *external.LocalMachine, real bool) error {
	if !hasFinalizer(lm) {
		return nil
	}
	if real {
		// First, so its kubelet does not update the Node deleted next; also when this process
		// did not boot it (a provider killed midway left it).
		c.nodes.Stop(ctx, lm.Namespace+"/"+lm.Name, c.machineDir(lm))
	}
	if err := c.deleteNode(ctx, lm); err != nil {
		return err
	}
	if err := os.RemoveAll(c.machineDir(lm)); err != nil {
		return err
	}
	return c.applyMachine(ctx, lm, lm.Spec.ProviderID, false)
}

// deleteNode deletes the Node this machine registered, with the cluster's admin kubeconfig (as
// Cluster API itself deletes a Machine's Node) or else the node's own credentials. When the
// tenant cluster is going away as well, a control plane that no longer answers ends the
// attempt: there is no Node left to delete.
func (c *Controller) deleteNode(ctx context.Context, lm *external.LocalMachine) error {
	nodeName, providerID := c.registeredNode(lm)
	if nodeName == "" {
		return nil // it never registered
	}
	cluster := clusterOf(nil, lm.Labels, "")
	client, err := c.tenantClient(lm, cluster)
	if err != nil || client == nil {
		klog.FromContext(ctx).Info("No credentials left for the tenant cluster; its Node goes with it", "node", nodeName, "err", err)
		return nil
	}
	err = deleteNodeOf(ctx, client, nodeName, providerID)
	if err == nil || apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Info("Node deleted", "node", nodeName)
		return nil
	}
	if c.clusterGoing(lm.Namespace, cluster) {
		klog.FromContext(ctx).Info("The tenant cluster is being deleted and its Node could not be; leaving it to the cluster", "node", nodeName, "err", err)
		return nil
	}
	return fmt.Errorf("deleting Node %s: %w", nodeName, err)
}

// tenantClient is a client of lm's tenant cluster: the admin kubeconfig in
// <cluster>-kubeconfig, or else the kubeconfig the machine keeps. Nil when neither is there.
func (c *Controller) tenantClient(lm *external.LocalMachine, cluster string) (kubernetes.Interface, error) {
	var kubeconfig []byte
	if cluster != "" {
		if s, err := c.secrets.Secrets(lm.Namespace).Get(cluster + "-kubeconfig"); err == nil {
			kubeconfig = s.Data["value"]
		}
	}
	if kubeconfig == nil {
		data, err := os.ReadFile(filepath.Join(c.machineDir(lm), kubeconfigFile))
		if err != nil {
			return nil, nil
		}
		kubeconfig = data
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	config.Timeout = 15 * time.Second
	return c.joiner.NewClient(config)
}

// clusterGoing says whether the tenant cluster is gone or being deleted.
func (c *Controller) clusterGoing(ns, cluster string) bool {
	if cluster == "" {
		return true
	}
	obj, err := c.clusters.ByNamespace(ns).Get(localClusterNameFor(cluster))
	if err != nil {
		return apierrors.IsNotFound(err)
	}
	m, err := meta.Accessor(obj)
	return err == nil && m.GetDeletionTimestamp() != nil
}

// --- writes ---------------------------------------------------------------------------------

// applyMachine applies what this provider owns in a LocalMachine's spec and metadata: the
// provider ID (when known) and the finalizer (unless released).
func (c *Controller) applyMachine(ctx context.Context, lm *external.LocalMachine, providerID string, finalizer bool) error {
	u := applyObject(LocalMachineKind, lm.Namespace, lm.Name)
	if finalizer {
		_ = unstructured.SetNestedStringSlice(u.Object, []string{Finalizer}, "metadata", "finalizers")
	}
	if providerID != "" {
		_ = unstructured.SetNestedField(u.Object, providerID, "spec", "providerID")
	}
	_, err := external.LocalProvider.Apply(ctx, c.dyn.Resource(LocalMachinesResource).Namespace(lm.Namespace), u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// setMachineCondition records why the machine has not joined (yet).
func (c *Controller) setMachineCondition(ctx context.Context, lm *external.LocalMachine, phase string, cond metav1.Condition) error {
	conds := append([]metav1.Condition(nil), lm.Status.Conditions...)
	cond.ObservedGeneration = lm.Generation
	if !meta.SetStatusCondition(&conds, cond) && lm.Status.Phase == phase {
		return nil
	}
	return c.applyMachineStatus(ctx, lm, cond, keptStatus(lm, phase))
}

// keptStatus is the status of a condition's apply: the phase, and what a joined machine keeps.
// An apply owns only the fields it sends, so one without initialization.provisioned took it
// away: a real node going NodeDown made its machine unjoined, joined it again, and went down
// again, in a loop.
func keptStatus(lm *external.LocalMachine, phase string) map[string]any {
	status := map[string]any{"phase": phase}
	if !lm.Status.Provisioned() {
		return status
	}
	status["initialization"] = map[string]any{"provisioned": true}
	if lm.Status.NodeName != "" {
		status["nodeName"] = lm.Status.NodeName
	}
	var addresses []any
	for _, a := range lm.Status.Addresses {
		addresses = append(addresses, map[string]any{"type": a.Type, "address": a.Address})
	}
	if len(addresses) > 0 {
		status["addresses"] = addresses
	}
	return status
}

// applyMachineStatus applies status (this provider owns all of it) with cond among the
// conditions.
func (c *Controller) applyMachineStatus(ctx context.Context, lm *external.LocalMachine, cond metav1.Condition, status map[string]any) error {
	conds := append([]metav1.Condition(nil), lm.Status.Conditions...)
	cond.ObservedGeneration = lm.Generation
	meta.SetStatusCondition(&conds, cond)
	status["conditions"] = []any{conditionMap(*meta.FindStatusCondition(conds, cond.Type))}
	return c.applyStatus(ctx, LocalMachinesResource, lm.Namespace, lm.Name, LocalMachineKind, status)
}

func (c *Controller) applyStatus(ctx context.Context, gvr schema.GroupVersionResource, ns, name, kind string, status map[string]any) error {
	u := applyObject(kind, ns, name)
	u.Object["status"] = status
	_, err := external.LocalProvider.ApplyStatus(ctx, c.dyn.Resource(gvr).Namespace(ns), u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// applyObject is the skeleton of an apply configuration for one of this provider's objects.
func applyObject(kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(GroupVersion.String())
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// conditionMap is a condition as an apply configuration.
func conditionMap(c metav1.Condition) map[string]any {
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	return m
}

// --- real nodes -----------------------------------------------------------------------------

// nodeTypeOf is a LocalMachine's spec.nodeType (kwok when unset).
func nodeTypeOf(obj runtime.Object) string {
	lm, err := external.FromObject[external.LocalMachine](obj)
	if err != nil || lm.Spec.NodeType == "" {
		return NodeTypeKwok
	}
	return lm.Spec.NodeType
}

// keepRealNode boots a joined real machine's node again when this process has not (the
// provider restarted), from what its first boot recorded; a node whose process exited since is
// the condition NodeDown, not restarted: as a machine whose kubelet died, it stays NotReady
// until it is replaced.
func (c *Controller) keepRealNode(ctx context.Context, key string, lm *external.LocalMachine) error {
	if cluster := clusterOf(nil, lm.Labels, ""); cluster != "" && c.clusterPaused(lm.Namespace, cluster) {
		return nil // asleep: its node boots again on the wake
	}
	booted, down := c.nodes.Status(key)
	if booted && down == "" {
		if err := c.resumeRealNode(ctx, key, lm); err != nil {
			return err
		}
		return c.routePods(ctx, key, lm, lm.Status.NodeName)
	}
	if down != "" {
		return c.setMachineCondition(ctx, lm, PhaseFailed, metav1.Condition{Type: ConditionReady,
			Status: metav1.ConditionFalse, Reason: ReasonNodeDown, Message: down})
	}
	if err := c.nodes.Reboot(ctx, key, c.machineDir(lm)); err != nil {
		return c.machineFailed(ctx, key, lm, &JoinError{Reason: ReasonNodeBootFailed, Err: err})
	}
	if err := c.routePods(ctx, key, lm, lm.Status.NodeName); err != nil {
		return err
	}
	return c.setMachineCondition(ctx, lm, PhaseRunning, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue,
		Reason: ReasonJoined, Message: fmt.Sprintf("booted again as Node %s", lm.Status.NodeName)})
}

// resumeRealNode starts what a restart of the machine's node could not (a port another socket
// took: NodePortTaken, tried again with the joins' backoff until it is free), and then says the
// node runs; so does a running node whose last restart's failure is the condition still.
func (c *Controller) resumeRealNode(ctx context.Context, key string, lm *external.LocalMachine) error {
	resumed, err := c.nodes.Resume(ctx, key, c.machineDir(lm))
	if err != nil {
		return c.machineFailed(ctx, key, lm, &JoinError{Reason: ReasonNodeBootFailed, Err: err})
	}
	if !resumed && meta.IsStatusConditionTrue(lm.Status.Conditions, ConditionReady) {
		return nil
	}
	c.failures.Delete(key)
	return c.setMachineCondition(ctx, lm, PhaseRunning, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue,
		Reason: ReasonJoined, Message: fmt.Sprintf("Node %s runs; its kubelet and kube-proxy started again", lm.Status.NodeName)})
}

// routePods reads the pod CIDR the tenant's kube-controller-manager allocated to the node's Node
// and routes it between the cluster's real nodes. Until it is allocated the machine is looked at
// again shortly.
func (c *Controller) routePods(ctx context.Context, key string, lm *external.LocalMachine, nodeName string) error {
	cluster := clusterOf(nil, lm.Labels, "")
	client, err := c.tenantClient(lm, cluster)
	if err != nil || client == nil {
		return controllerkit.RequeueAfter(2 * time.Second)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil || node.Spec.PodCIDR == "" {
		return controllerkit.RequeueAfter(time.Second)
	}
	return c.nodes.SetPodCIDR(ctx, key, node.Spec.PodCIDR)
}

// ProxyBinding is the tenant's ClusterRoleBinding that lets real nodes' kube-proxies, which run
// with their node's credentials, read Services and EndpointSlices (kubeadm gives kube-proxy a
// ServiceAccount of its own instead; a node may read Services already).
const ProxyBinding = "butler:nodes:node-proxier"

// bindProxy applies ProxyBinding in the machine's tenant cluster with its admin kubeconfig.
func (c *Controller) bindProxy(ctx context.Context, lm *external.LocalMachine) error {
	client, err := c.tenantClient(lm, clusterOf(nil, lm.Labels, ""))
	if err != nil || client == nil {
		return fmt.Errorf("no credentials of the tenant cluster to bind kube-proxy's role: %v", err)
	}
	binding := rbacv1ac.ClusterRoleBinding(ProxyBinding).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("system:node-proxier")).
		WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.GroupKind).WithName("system:nodes"))
	_, err = client.RbacV1().ClusterRoleBindings().Apply(ctx, binding, metav1.ApplyOptions{FieldManager: string(external.LocalProvider), Force: true})
	if err != nil {
		return fmt.Errorf("binding system:node-proxier to the nodes: %w", err)
	}
	return nil
}

// applyClusterDNS runs the tenant's cluster DNS (clusterDNS) where the machine's kubelet is told
// to find it; bootstrap data naming no cluster DNS gets none.
func (c *Controller) applyClusterDNS(ctx context.Context, lm *external.LocalMachine, info *bootstrap.JoinInfo) error {
	if len(info.ClusterDNS) == 0 {
		return nil
	}
	client, err := c.tenantClient(lm, clusterOf(nil, lm.Labels, ""))
	if err != nil || client == nil {
		return fmt.Errorf("no credentials of the tenant cluster to run its DNS: %v", err)
	}
	domain := info.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	c.dnsMu.Lock()
	defer c.dnsMu.Unlock()
	return clusterDNS{address: info.ClusterDNS[0], domain: domain, endpoint: info.Endpoint}.apply(ctx, client)
}

// clusterPaused says whether Cluster API pauses the cluster (a hibernated tenant cluster).
func (c *Controller) clusterPaused(ns, cluster string) bool {
	obj, err := c.capiClusters.ByNamespace(ns).Get(cluster)
	return err == nil && isPaused(obj, nil)
}

// wakeRealNodes looks again at the real machines of a running cluster: those whose nodes
// stopped while it slept boot again.
func (c *Controller) wakeRealNodes(ns, cluster string) {
	selector := labels.SelectorFromSet(labels.Set{clusterv1.ClusterNameLabel: cluster})
	machines, _ := c.machines.ByNamespace(ns).List(selector)
	for _, m := range machines {
		if nodeTypeOf(m) != NodeTypeReal {
			continue
		}
		if acc, err := meta.Accessor(m); err == nil {
			if booted, _ := c.nodes.Status(ns + "/" + acc.GetName()); !booted {
				c.machineQueue.Add(ns + "/" + acc.GetName())
			}
		}
	}
}
