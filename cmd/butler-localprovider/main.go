// Command butler-localprovider is the local stand-in for what a real management cluster runs
// for butler's local provider: capi-steward and Steward (tenant control planes, here as
// kube-apiserver, kube-controller-manager and kube-scheduler processes on this machine), and
// the local infrastructure provider's machines. the local plane (cmd/butler-localplane) starts it for `make run` and
// the end-to-end tests. Nothing of it runs in production.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/wakeproxy"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/machines"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/snapshots"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/stewardcontrolplane"
)

func main() {
	// The tenants' datastore is this binary run as etcd (the etcd server this module links, v3.7:
	// etcd v3.6 asks for root on Maintenance.Status, which kube-apiserver calls as the tenant's
	// own user to learn whether watch progress requests are supported).
	if len(os.Args) > 1 && os.Args[1] == controlplane.EtcdCommand {
		etcdmain.Main(append([]string{"etcd"}, os.Args[2:]...))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == kubebuild.BuildCommand {
		buildKube(os.Args[2:])
		return
	}
	o := &options{}
	_ = o.flagSet().Parse(os.Args[1:])
	if err := o.complete(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o.kubeconfig, o.controllers()); err != nil {
		klog.ErrorS(err, "butler-localprovider failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// options are the command's flags, and the controllers' options made of them.
type options struct {
	kubeconfig string
	cp         controlplane.Options
	portRange  string
	snaps      snapshots.Options
	nodes      machines.RealNodesOptions
	nodeCIDR   string
}

// flagSet binds the command's flags (and klog's) to o.
func (o *options) flagSet() *pflag.FlagSet {
	flags := pflag.NewFlagSet("butler-localprovider", pflag.ExitOnError)
	flags.Usage = func() {
		fmt.Fprintf(os.Stderr, `butler-localprovider: the local stand-in for a management cluster's control-plane and
infrastructure providers (capi-steward + Steward: one kube-apiserver, kube-controller-manager and
kube-scheduler process per TenantControlPlane; local machines). For make run and the tests on one
machine; nothing of it runs in production.

Flags:
%s`, flags.FlagUsages())
	}
	flags.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster")
	flags.StringVar(&o.cp.DataStoreName, "datastore-name", "local", "the etcd this provider runs (TLS, client-certificate auth) for its tenants' data, published as a Steward DataStore of this name")
	flags.StringVar(&o.cp.DataStoresDir, "datastores-dir", "", "where the datastore's data, certificates and log are (default: datastores/ next to --state-dir)")
	flags.StringVar(&o.cp.DataStoreSecretNamespace, "datastore-secret-namespace", "kube-system", "namespace of the Secret with the datastore's CA and root client certificate, which the DataStore names")
	flags.IntVar(&o.cp.DataStoreMaxTenants, "datastore-max-tenants", 200, "tenants placed on a DataStore at most, unless its annotation "+datastore.MaxTenantsAnnotation+" says otherwise (0: no bound)")
	flags.DurationVar(&o.cp.CompactionInterval, "datastore-compaction-interval", 5*time.Minute, "how often the datastore's history is compacted (tenants' kube-apiservers do not compact)")
	flags.StringVar(&o.cp.BinDir, "bin-dir", "_output/bin", "where kube-apiserver, kube-controller-manager and kube-scheduler of --kube-version are")
	flags.StringVar(&o.cp.PinnedVersion, "kube-version", "v1.36.3", "the Kubernetes version of the binaries in --bin-dir")
	flags.StringVar(&o.cp.VersionsDir, "kube-versions-dir", "_output/kube-versions", "where other Kubernetes versions are built on first use, one directory each")
	flags.StringVar(&o.cp.StateDir, "state-dir", "_output/local/tenants", "one directory per tenant control plane: certificates, kubeconfigs, logs, pid files")
	flags.StringVar(&o.portRange, "port-range", localports.Tenants.String(), "loopback ports for tenant kube-apiservers (min-max); ports inside the kernel's ephemeral range are not used")
	flags.StringVar(&o.cp.Address, "address", "127.0.0.1", "where tenant kube-apiservers listen and what their endpoints name (make test-cluster gives the one-node cluster's bridge address, which its Pods reach)")
	flags.IntVar(&o.cp.Workers, "workers", 4, "tenant control planes reconciled at once")
	flags.IntVar(&o.cp.SpareControlPlanes, "spare-control-planes", 0, "kube-apiservers of the --kube-version kept started ahead, which a new TenantCluster that sets no network, SANs or extra arguments takes instead of starting its own (each costs an idle tenant's memory and CPU; 0: none)")
	flags.IntVar(&o.cp.ConcurrentStarts, "concurrent-starts", 0, "tenant kube-apiservers starting at once at most (a start is a few CPU-seconds with deadlines of its own; the others wait their turn); 0: one per CPU of this host")
	wl := wakeproxy.DefaultLimits
	flags.IntVar(&o.cp.WakeLimits.MaxWaking, "wake-max-waking", wl.MaxWaking, "clusters waking on request at once at most; a connection past it is closed (0: no bound)")
	flags.IntVar(&o.cp.WakeLimits.MaxAwake, "wake-max-awake", wl.MaxAwake, "clusters awake because of a request at most (not those a user woke with hibernated: false; 0: no bound)")
	flags.IntVar(&o.cp.WakeLimits.MaxAwakePerTeam, "wake-max-awake-per-team", wl.MaxAwakePerTeam, "of those, one Team's (namespace's) clusters at most, so a client reaching one Team's endpoints cannot hold every slot (0: no bound)")
	flags.IntVar(&o.cp.WakeLimits.PerSource, "wake-per-source", wl.PerSource, "connections one client (an IPv4 address, an IPv6 /64) may have open at once, over all wake-on-request endpoints, before their TLS handshake with the tenant completed (0: no bound)")
	flags.StringSliceVar(&o.cp.ExternalNamespaces, "external-control-plane-namespaces", nil, "namespaces whose StewardControlPlanes and TenantControlPlanes a real Steward and its Cluster API provider run (this provider gives their clusters machines only)")
	flags.StringVar(&o.snaps.Dir, "snapshot-dir", "", "the TenantClusterSnapshot store's directory unless ButlerConfig spec.snapshotStore names one (default: snapshots/ next to --state-dir)")
	flags.Int64Var(&o.snaps.PageSize, "snapshot-page-size", 500, "keys one range read of a snapshot returns (the memory a snapshot holds at once)")
	flags.StringVar(&o.nodes.BinDir, "node-bin-dir", "_output/bin", "where the kubelet of real nodes (LocalMachine spec.nodeType real) is: hack/build-kube.sh kubelet kube-proxy")
	flags.StringSliceVar(&o.nodes.Images, "node-images", []string{"_output/node-images/pause.oci.tar", "_output/node-images/echo.oci.tar", "_output/node-images/coredns.oci.tar"}, "OCI archives imported into every real node's containerd, the pause and cluster DNS images among them (hack/build-node-images.sh)")
	flags.StringVar(&o.nodes.Bridge, "node-bridge", "butlern0", "the host's bridge real nodes' network namespaces are plugged into (made with the first node, removed with the last)")
	flags.StringVar(&o.nodeCIDR, "node-bridge-cidr", "10.250.0.0/16", "the bridge's network: the host takes its first address, real nodes the next ones")
	flags.StringVar(&o.nodes.RunDir, "node-run-dir", "/run/butler-nodes", "real nodes' sockets and address leases (a short path: a socket's path is at most 107 bytes)")
	klogFlags := goflag.NewFlagSet("klog", goflag.ExitOnError)
	klog.InitFlags(klogFlags)
	flags.AddGoFlagSet(klogFlags)
	return flags
}

// complete fills in the defaults that depend on other flags and parses what is not a string.
func (o *options) complete() error {
	if o.cp.DataStoresDir == "" {
		o.cp.DataStoresDir = filepath.Join(filepath.Dir(o.cp.StateDir), "datastores")
	}
	if o.snaps.Dir == "" {
		o.snaps.Dir = filepath.Join(filepath.Dir(o.cp.StateDir), "snapshots")
	}
	if o.cp.ConcurrentStarts == 0 {
		o.cp.ConcurrentStarts = runtime.NumCPU()
	}
	var err error
	if o.snaps.Dir, err = filepath.Abs(o.snaps.Dir); err != nil {
		return fmt.Errorf("--snapshot-dir: %w", err)
	}
	if o.nodes.Prefix, err = netip.ParsePrefix(o.nodeCIDR); err != nil {
		return fmt.Errorf("--node-bridge-cidr: %w", err)
	}
	for i, a := range o.nodes.Images {
		if o.nodes.Images[i], err = filepath.Abs(a); err != nil {
			return fmt.Errorf("--node-images: %w", err)
		}
	}
	if o.cp.Ports, err = localports.ParseRange(o.portRange); err != nil {
		return fmt.Errorf("--port-range: %w", err)
	}
	return nil
}

// controllers are the StewardControlPlanes', the control planes', the snapshots' and the
// machines' controllers.
func (o *options) controllers() []controllerkit.Controller {
	var planes *controlplane.Controller
	return []controllerkit.Controller{
		{Name: "stewardcontrolplane", New: controllerkit.As(func(d *controllerkit.Deps) (*stewardcontrolplane.Controller, error) {
			return stewardcontrolplane.New(d, stewardcontrolplane.Options{Workers: o.cp.Workers, ExternalNamespaces: o.cp.ExternalNamespaces})
		})},
		{Name: "controlplane", New: func(d *controllerkit.Deps) (controllerkit.Runner, error) {
			var err error
			planes, err = controlplane.New(d, o.cp)
			return planes, err
		}},
		// Snapshots are taken where the datastores' credentials are; restores run before a
		// tenant's control plane starts.
		{Name: "snapshots", New: func(d *controllerkit.Deps) (controllerkit.Runner, error) {
			s, err := snapshots.New(d, planes, o.snaps)
			if err == nil {
				planes.SetRestorer(s)
			}
			return s, err
		}},
		{Name: "machines", New: func(d *controllerkit.Deps) (controllerkit.Runner, error) {
			// machines/ and kwok/ next to the tenants' state directory.
			return machines.New(d, machines.Options{StateDir: filepath.Dir(o.cp.StateDir), RealNodes: o.nodes,
				ExternalControlPlaneNamespaces: o.cp.ExternalNamespaces})
		}},
	}
}

// run builds every controller over shared clients and informers, runs them until ctx is done,
// and returns once each has stopped (the control planes stop their processes first).
func run(ctx context.Context, kubeconfig string, controllers []controllerkit.Controller) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "butler-localprovider"
	cfg.QPS, cfg.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	butler, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return controllerkit.RunControllers(ctx, controllerkit.NewDeps(butler, kube, dyn, nil), controllers)
}
