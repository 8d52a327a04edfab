package lifecycle

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/bootstrapprovider"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/butlerconfig"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/maintenance"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/managementaddon"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/providerconfig"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/snapshotschedule"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/team"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/tenantaddon"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/tenantcluster"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/updaterun"
)

// Config is what the controllers need.
type Config struct {
	// Butler reads and writes butler objects (the server's own loopback client).
	Butler clientset.Interface
	// Kube writes to the management cluster.
	Kube kubernetes.Interface
	// Dynamic writes the external kinds (Cluster API, Steward, providers) to the management cluster.
	Dynamic dynamic.Interface
	// Metadata watches objects whose existence is all the controllers need to know.
	Metadata metadata.Interface
	// Management is the clients' configuration of the management cluster (ManagementAddons are
	// installed through it, impersonating their accounts).
	Management *rest.Config
	// LeaseNamespace/LeaseName is the Lease in the management cluster that elects the one
	// replica whose controllers act.
	LeaseNamespace, LeaseName string
	// Identity names this replica in the Lease; hostname plus a random suffix when empty.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod pace the election (15s, 10s, 2s when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Fetch is the outbound fetch policy's settings.
	Fetch controllerkit.FetchSettings
}

// Run takes part in the election until ctx is done; while this replica leads, it runs the
// controllers. A replica that loses the lease stops its controllers and stands again.
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
					if err := runControllers(ctx, cfg); err != nil {
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

// controllers are the ones the leader runs, in the order they are built.
var controllers = []controllerkit.Controller{
	{Name: "team", New: controllerkit.As(team.New)},
	{Name: "butlerconfig", New: controllerkit.As(butlerconfig.New)},
	{Name: "providerconfig", New: controllerkit.As(providerconfig.New)},
	{Name: "tenantcluster", New: controllerkit.As(tenantcluster.New)},
	{Name: "tenantaddon", New: controllerkit.As(tenantaddon.New)},
	{Name: "bootstrap", New: controllerkit.As(bootstrapprovider.New)},
	{Name: "snapshotschedule", New: controllerkit.As(snapshotschedule.New)},
	{Name: "maintenance", New: controllerkit.As(maintenance.New)},
	{Name: "updaterun", New: controllerkit.As(updaterun.New)},
	{Name: "managementaddon", New: controllerkit.As(managementaddon.New)},
}

// RunStandalone runs the controllers that need no management cluster (the ButlerConfig's status)
// until ctx is done: for a server on its own etcd, the only replica there is.
func RunStandalone(ctx context.Context, butlerClient clientset.Interface) error {
	return controllerkit.RunControllers(ctx, controllerkit.NewDeps(butlerClient, nil, nil, nil), controllers[1:2])
}

// runControllers starts fresh informers and every controller, and blocks until ctx is done.
func runControllers(ctx context.Context, cfg Config) error {
	d := controllerkit.NewDeps(cfg.Butler, cfg.Kube, cfg.Dynamic, cfg.Metadata)
	d.Fetch = cfg.Fetch
	d.Management = cfg.Management
	return controllerkit.RunControllers(ctx, d, controllers)
}
