package machines

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	kwokclient "sigs.k8s.io/kwok/pkg/utils/client"
)

// Kwoks runs one kwok controller per tenant cluster inside this process: it keeps the Nodes
// annotated kwok.x-k8s.io/node=fake Ready (node leases and status heartbeats) and moves the
// pods scheduled to them to Running, with kwok's default stages.
type Kwoks struct {
	dir    string
	stages map[internalversion.StageResourceRef][]*internalversion.Stage

	mu      sync.Mutex
	base    context.Context
	running map[string]*kwokRun
}

type kwokRun struct {
	cancel     context.CancelFunc
	kubeconfig [sha256.Size]byte
}

// kwokLeaseSeconds is how long a node lease kwok renews lasts (kwokctl's default): the tenant's
// node lifecycle controller reads leases, and status heartbeats then come every 10 minutes.
const kwokLeaseSeconds = 40

// NewKwoks returns a runner that keeps each tenant's admin kubeconfig under dir.
func NewKwoks(dir string) (*Kwoks, error) {
	stages := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, raw := range []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete} {
		s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return nil, fmt.Errorf("kwok's default stages: %w", err)
		}
		stages[s.Spec.ResourceRef] = append(stages[s.Spec.ResourceRef], s)
	}
	return &Kwoks{dir: dir, stages: stages, base: context.Background(), running: map[string]*kwokRun{}}, nil
}

// setBase sets the context every kwok runs under (ended when the provider stops).
func (k *Kwoks) setBase(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.base = ctx
}

// Ensure runs kwok for the tenant cluster key (namespace/name) against kubeconfig (its admin
// kubeconfig), restarting it when the kubeconfig changed.
func (k *Kwoks) Ensure(key string, kubeconfig []byte) error {
	sum := sha256.Sum256(kubeconfig)
	k.mu.Lock()
	defer k.mu.Unlock()
	if r, ok := k.running[key]; ok {
		if r.kubeconfig == sum {
			return nil
		}
		r.cancel()
		delete(k.running, key)
	}
	path := filepath.Join(k.dir, filepath.FromSlash(key), "admin.kubeconfig")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(k.base)
	logger := klog.FromContext(ctx).WithValues("kwok", key)
	// kwok logs through its own slog logger: warnings and errors only.
	ctx = kwoklog.NewContext(klog.NewContext(ctx, logger), kwoklog.NewLogger(os.Stderr, kwoklog.LevelWarn))
	ctr, err := newKwokController(path, k.stages)
	if err == nil {
		err = ctr.Start(ctx)
	}
	if err != nil {
		cancel()
		return fmt.Errorf("starting kwok for %s: %w", key, err)
	}
	k.running[key] = &kwokRun{cancel: cancel, kubeconfig: sum}
	logger.Info("kwok started")
	return nil
}

// Stop ends the tenant cluster's kwok and removes its kubeconfig.
func (k *Kwoks) Stop(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r, ok := k.running[key]; ok {
		r.cancel()
		delete(k.running, key)
		klog.FromContext(k.base).Info("kwok stopped", "kwok", key)
	}
	_ = os.RemoveAll(filepath.Join(k.dir, filepath.FromSlash(key)))
}

// Running reports whether kwok runs for key.
func (k *Kwoks) Running(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.running[key]
	return ok
}

// newKwokController builds kwok's controller as its own command does (pkg/kwok/cmd), from a
// kubeconfig file, managing the Nodes annotated kwok.x-k8s.io/node=fake.
func newKwokController(kubeconfigPath string, stages map[internalversion.StageResourceRef][]*internalversion.Stage) (*controllers.Controller, error) {
	clientset, err := kwokclient.NewClientset("", kubeconfigPath)
	if err != nil {
		return nil, err
	}
	restConfig, err := clientset.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dynamicClient, err := clientset.ToDynamicClient()
	if err != nil {
		return nil, err
	}
	restMapper, err := clientset.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	restClient, err := rest.RESTClientFor(restConfig)
	if err != nil {
		return nil, err
	}
	typedClient, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	typedKwokClient, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	return controllers.NewController(controllers.Config{
		Clock:                             clock.RealClock{},
		DynamicClient:                     dynamicClient,
		RESTClient:                        restClient,
		RESTMapper:                        restMapper,
		ImpersonatingDynamicClient:        clientset.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:          clientset.ToImpersonatingTypedClient(),
		TypedClient:                       typedClient,
		TypedKwokClient:                   typedKwokClient,
		ManageNodesWithAnnotationSelector: KwokNodeAnnotation + "=" + KwokNodeValue,
		CIDR:                              "10.0.0.0/24", // kwok's default pod range
		NodeIP:                            NodeIP,
		LocalStages:                       stages,
		NodeLeaseDurationSeconds:          kwokLeaseSeconds,
		NodeLeaseParallelism:              4,
		NodePlayStageParallelism:          4,
		PodPlayStageParallelism:           4,
		PodsOnNodeSyncParallelism:         1,
		ID:                                "butler-localprovider",
	})
}
