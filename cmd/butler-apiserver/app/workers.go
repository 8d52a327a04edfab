package app

import (
	"context"

	"fmt"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	// rest_client_* metrics on /metrics: the controllers' requests by method and host, and the time
	// they waited in the client-side rate limiter.
	_ "k8s.io/component-base/metrics/prometheus/restclient"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	butleradmission "github.com/butlerdotdev/butler-apiserver/pkg/admission"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/quotastore"
)

// WorkerOptions configure the background controllers (delegated mode only). The flags
// (--enable-workers, --workers-*) and the Lease butler-apiserver-workers keep the old word for
// them: deployments set the flags, and a renamed Lease would let an old and a new replica lead
// at once during an upgrade.
type WorkerOptions struct {
	// Enabled runs the controllers (under leader election).
	Enabled bool
	// LeaseNamespace and LeaseName name the Lease in the management cluster that elects the
	// replica whose controllers act.
	LeaseNamespace, LeaseName string
	// QPS and Burst pace all the controllers' requests to the management cluster, one budget for
	// their typed, dynamic and metadata clients. kube-apiserver protects itself with API
	// Priority and Fairness: butler-apiserver's ServiceAccount falls under the flow schema
	// service-accounts, priority level workload-low (100 of the default 245 nominal shares,
	// about 245 of a default kube-apiserver's 600 seats), where its requests queue fairly
	// against other service accounts' and are refused with a 429 (which client-go retries)
	// only when that level's queues are full. So the client-side limit is a brake on a
	// runaway loop, not the fleet's pace: at 50/s (each of the three clients) a fleet of 200
	// new TenantClusters waited 78 s on it. 300/s with a burst of 600 is a few seats of
	// workload-low (a write holds one for milliseconds) and lets 200 clusters' objects be
	// written in seconds; client-go's own default (5/s) made one pass over a single cluster's
	// objects take seconds.
	QPS   float32
	Burst int
	// Fetch is the outbound fetch policy of what the controllers fetch for tenants (charts).
	Fetch controllerkit.FetchSettings
}

func (w *WorkerOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&w.Enabled, "enable-workers", w.Enabled,
		"Run the lifecycle controllers (Teams, TenantCluster provisioning, bootstrap data, addons) under leader election. Needs a management cluster; off in --standalone.")
	fs.StringVar(&w.LeaseNamespace, "workers-lease-namespace", w.LeaseNamespace, "Namespace of the lifecycle controllers' leader election Lease.")
	fs.StringVar(&w.LeaseName, "workers-lease-name", w.LeaseName, "Name of the lifecycle controllers' leader election Lease.")
	fs.Float32Var(&w.QPS, "workers-kube-api-qps", w.QPS, "Requests per second the workers may send to the management cluster.")
	fs.IntVar(&w.Burst, "workers-kube-api-burst", w.Burst, "Burst of requests the workers may send to the management cluster.")
	fs.Int64Var(&w.Fetch.MaxBytes, "fetch-max-bytes", w.Fetch.MaxBytes,
		"Largest download (chart repository index, chart archive, OCI blob) the controllers fetch for a tenant.")
	fs.StringSliceVar(&w.Fetch.AllowedInternal, "fetch-allowed-internal", w.Fetch.AllowedInternal,
		"host:port that tenant fetches may reach though loopback, link-local or private (AddonDefinitions' repositories are allowed as well).")
}

// addButlerAdmission registers butler's own admission plugins in the recommended chain, after
// the generic ones, enabled by default, with the quota Ledger as what they read through.
func (o *Options) addButlerAdmission() {
	a := o.Recommended.Admission
	butleradmission.Register(a.Plugins)
	a.RecommendedPluginOrder = append(a.RecommendedPluginOrder, butleradmission.Names...)
	o.Recommended.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		init := butleradmission.Initializer{Ledger: o.ledger, SnapshotDir: o.SnapshotDir,
			Fetch: addons.FetchPolicy{Allowed: addons.AllowHostPorts(o.Workers.Fetch.AllowedInternal)}}
		if c.ClientConfig != nil {
			dyn, err := dynamic.NewForConfig(c.ClientConfig)
			if err != nil {
				return nil, err
			}
			init.DataStores = dataStoreGetter(dyn)
		}
		return []admission.PluginInitializer{init}, nil
	}
}

// dataStoreGetter reads a DataStore live from the management cluster: admission names one
// rarely (a cluster's dataStoreRef set or changed), and must see a new allow-list at once.
func dataStoreGetter(dyn dynamic.Interface) butleradmission.DataStoreGetter {
	return func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
		ds, err := dyn.Resource(external.DataStoreGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return ds, err
	}
}

// applyStandaloneAdmission runs butler's own plugins alone when there is no management
// cluster: they read only butler objects, so multi-tenancy and Team limits hold the same.
func (o *Options) applyStandaloneAdmission(config *genericapiserver.RecommendedConfig) error {
	chain, err := butleradmission.New(o.ledger, config.Authorization.Authorizer, o.SnapshotDir)
	if err != nil {
		return fmt.Errorf("butler admission plugins: %w", err)
	}
	config.AdmissionControl = chain
	return nil
}

// bindLedger points the quota Ledger (and so the admission plugins) at the installed storage.
func (o *Options) bindLedger(resources map[string]rest.Storage) error {
	store, err := quotastore.New(resources)
	if err != nil {
		return err
	}
	o.ledger.Store = store
	return nil
}

// addWorkers starts the background controllers once the server serves: they read butler objects
// through the loopback client and write to the management cluster as butler-apiserver's identity.
// Without a management cluster only the controllers that need none run. They stop when stop is done
// (the server is told to stop), not when the server stops serving after
// --shutdown-delay-duration: the delay is for clients and the Service to let go of this replica,
// and the controllers' Lease is released at once, so a standby replica's controllers take over without
// waiting for it.
func (o *Options) addWorkers(stop context.Context, server *genericapiserver.GenericAPIServer, config *genericapiserver.RecommendedConfig) error {
	if !o.Workers.Enabled {
		klog.InfoS("The lifecycle controllers are off")
		return nil
	}
	var kube kubernetes.Interface
	var dyn dynamic.Interface
	var md metadata.Interface
	var mgmt *restclient.Config
	if config.ClientConfig != nil {
		mgmt = restclient.CopyConfig(config.ClientConfig)
		mgmt.QPS, mgmt.Burst = o.Workers.QPS, o.Workers.Burst
		if mgmt.QPS > 0 {
			mgmt.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(mgmt.QPS, mgmt.Burst)
		}
		var err error
		if kube, err = kubernetes.NewForConfig(mgmt); err != nil {
			return err
		}
		if dyn, err = dynamic.NewForConfig(mgmt); err != nil {
			return err
		}
		if md, err = metadata.NewForConfig(mgmt); err != nil {
			return err
		}
	}
	return server.AddPostStartHook("butler-workers", func(hook genericapiserver.PostStartHookContext) error {
		ctx, cancel := context.WithCancel(hook)
		context.AfterFunc(stop, cancel)
		// Protobuf: the controllers' informers decode every TenantCluster written.
		loopback := restclient.CopyConfig(hook.LoopbackClientConfig)
		loopback.ContentType = runtime.ContentTypeProtobuf
		loopback.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		butler, err := clientset.NewForConfig(loopback)
		if err != nil {
			return err
		}
		if kube == nil {
			klog.InfoS("No management cluster: only the ButlerConfig status worker runs")
			go func() {
				if err := lifecycle.RunStandalone(ctx, butler); err != nil {
					klog.ErrorS(err, "Starting the standalone controllers failed")
				}
			}()
			return nil
		}
		go lifecycle.Run(ctx, lifecycle.Config{
			Butler: butler, Kube: kube, Dynamic: dyn, Metadata: md, Management: mgmt,
			LeaseNamespace: o.Workers.LeaseNamespace, LeaseName: o.Workers.LeaseName,
			Fetch: o.Workers.Fetch,
		})
		return nil
	})
}
