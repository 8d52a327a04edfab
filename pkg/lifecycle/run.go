package lifecycle

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions"
)

// Config is what the workers need.
type Config struct {
	// Butler reads and writes butler objects (the server's own loopback client).
	Butler clientset.Interface
	// Kube writes to the management cluster.
	Kube kubernetes.Interface
	// LeaseNamespace/LeaseName is the Lease in the management cluster that elects the one
	// replica whose workers act.
	LeaseNamespace, LeaseName string
	// Identity names this replica in the Lease; hostname plus a random suffix when empty.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod pace the election (15s, 10s, 2s when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Run takes part in the election until ctx is done; while this replica leads, it runs the
// workers. A replica that loses the lease stops its workers and stands again.
func Run(ctx context.Context, cfg Config) {
	logger := klog.FromContext(ctx).WithValues("lease", cfg.LeaseNamespace+"/"+cfg.LeaseName)
	ctx = klog.NewContext(ctx, logger)
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s_%s", host, uuid.NewUUID())
	}
	orDefault := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName},
		Client:     cfg.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   orDefault(cfg.LeaseDuration, 15*time.Second),
			RenewDeadline:   orDefault(cfg.RenewDeadline, 10*time.Second),
			RetryPeriod:     orDefault(cfg.RetryPeriod, 2*time.Second),
			ReleaseOnCancel: true,
			Name:            cfg.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					logger.Info("Leading: starting the workers", "identity", cfg.Identity)
					if err := runWorkers(ctx, cfg); err != nil {
						logger.Error(err, "Starting the workers failed")
					}
				},
				OnStoppedLeading: func() { logger.Info("Stopped leading: the workers stop", "identity", cfg.Identity) },
				OnNewLeader: func(id string) {
					if id != cfg.Identity {
						logger.Info("Another replica leads", "leader", id)
					}
				},
			},
		})
	}
}

// dropManagedFields keeps managedFields out of the informers' caches: no worker reads them, and
// they are a large share of each object.
func dropManagedFields(obj any) (any, error) {
	if o, err := meta.Accessor(obj); err == nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// newButlerInformers returns the workers' informer factory over butler objects.
func newButlerInformers(client clientset.Interface) butlerinformers.SharedInformerFactory {
	return butlerinformers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		butlerinformers.WithTransform(dropManagedFields))
}

// RunStandalone runs the workers that need no management cluster (the ButlerConfig's status)
// until ctx is done: for a server on its own etcd, the only replica there is.
func RunStandalone(ctx context.Context, butlerClient clientset.Interface) error {
	factory := newButlerInformers(butlerClient)
	b := factory.Butler().V1alpha1()
	config, err := NewButlerConfigController(butlerClient, b.ButlerConfigs(), b.Teams(), b.TenantClusters())
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	config.Run(ctx)
	return nil
}

// runWorkers starts fresh informers and every worker, and blocks until ctx is done.
func runWorkers(ctx context.Context, cfg Config) error {
	butlerFactory := newButlerInformers(cfg.Butler)
	// Only what carries the team label: the management cluster may hold many namespaces.
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(cfg.Kube, 10*time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = TeamLabel }),
		informers.WithTransform(dropManagedFields))
	b := butlerFactory.Butler().V1alpha1()
	teams, err := NewTeamController(cfg.Butler, cfg.Kube, b.Teams(), b.TenantClusters(), b.ButlerConfigs(), TeamRBACInformers{
		Namespaces: kubeFactory.Core().V1().Namespaces(), RoleBindings: kubeFactory.Rbac().V1().RoleBindings(),
		ClusterRoles: kubeFactory.Rbac().V1().ClusterRoles(), ClusterRoleBindings: kubeFactory.Rbac().V1().ClusterRoleBindings(),
	})
	if err != nil {
		return err
	}
	config, err := NewButlerConfigController(cfg.Butler, b.ButlerConfigs(), b.Teams(), b.TenantClusters())
	if err != nil {
		return err
	}
	butlerFactory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	defer butlerFactory.Shutdown()
	defer kubeFactory.Shutdown()
	go config.Run(ctx)
	teams.Run(ctx, 2)
	return nil
}
