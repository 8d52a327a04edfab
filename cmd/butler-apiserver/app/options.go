// Package app holds the butler-apiserver command: its options, storage and server start.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apiserver"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// etcdPathPrefix is where butler objects live in etcd.
const etcdPathPrefix = "/registry/butler.butlerlabs.dev"

// Options are the flags of butler-apiserver.
type Options struct {
	Recommended *genericoptions.RecommendedOptions

	// Standalone serves without a management cluster: a self-signed CA, an admin
	// client certificate written to DataDir, and that admin authorized for everything.
	Standalone bool
	// DataDir holds the embedded etcd (when no --etcd-servers are given) and, in standalone
	// mode, the certificates and the admin kubeconfig.
	DataDir string

	// ShutdownWatchTerminationGracePeriod bounds how long shutdown waits for open watches.
	// Positive, so watches end when shutdown starts: kube-apiserver's aggregator and
	// kube-controller-manager's garbage collector keep watches on every butler resource open,
	// and with none of this the server would wait out its whole request timeout.
	ShutdownWatchTerminationGracePeriod time.Duration

	// ShutdownDelayDuration keeps serving after a stop is asked for, while a Service stops
	// sending requests to this replica (a rolling update then fails none).
	ShutdownDelayDuration time.Duration

	// IPAMRepair paces the loop that frees reservations no IPAllocation holds.
	IPAMRepair apiserver.IPAMRepair

	// KubeconfigMaxExpiration caps the kubeconfigs tenantclusters/kubeconfig mints.
	KubeconfigMaxExpiration time.Duration

	// SnapshotDir is the directory snapshot store admission reads to check a snapshot's
	// checksum before a restore (when ButlerConfig names none).
	SnapshotDir string

	// Workers configure the background controllers.
	Workers WorkerOptions

	// Memory sets the Go runtime's soft memory limit.
	Memory MemoryOptions

	// Out receives the "how to reach it" banner.
	Out io.Writer

	// ledger admits Team quota; butler's admission plugins read through it.
	ledger *quota.Ledger
}

// NewOptions returns the defaults: delegated authentication and authorization, port 8443,
// data in ./.butler.
func NewOptions() *Options {
	o := &Options{
		Recommended: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		DataDir:                             ".butler",
		ShutdownWatchTerminationGracePeriod: 5 * time.Second,
		IPAMRepair:                          apiserver.DefaultIPAMRepair,
		KubeconfigMaxExpiration:             24 * time.Hour,
		Out:                                 os.Stdout,
		Workers: WorkerOptions{Enabled: true, LeaseNamespace: "butler-system", LeaseName: "butler-apiserver-workers", QPS: 300, Burst: 600,
			Fetch: controllerkit.FetchSettings{MaxBytes: addons.DefaultMaxFetchBytes}},
		Memory: defaultMemoryOptions(),
		ledger: &quota.Ledger{},
	}
	o.addButlerAdmission()
	// Protobuf in etcd, as kube-apiserver stores its own types: smaller values, and decoding a
	// watch event or the object a write starts from costs a fraction of JSON's.
	o.Recommended.Etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	o.Recommended.SecureServing.BindPort = 8443
	o.Recommended.SecureServing.BindAddress = []byte{127, 0, 0, 1}
	return o
}

// applyStorageMediaType sets the storage codec for --storage-media-type (the generic options
// only honour that flag with a per-resource storage factory). Values in any supported media
// type are read, so a change of the flag needs no migration: objects are rewritten in the new
// one as they are next written.
func (o *Options) applyStorageMediaType() error {
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  o.Recommended.Etcd.DefaultStorageMediaType,
		StorageSerializer: apiserver.Codecs,
		StorageVersion:    v1alpha1.SchemeGroupVersion,
		MemoryVersion:     butler.SchemeGroupVersion,
		Config:            o.Recommended.Etcd.StorageConfig,
	})
	if err != nil {
		return fmt.Errorf("--storage-media-type: %w", err)
	}
	o.Recommended.Etcd.StorageConfig.Codec = codec
	o.Recommended.Etcd.StorageConfig.EncodeVersioner = versioner
	return nil
}

// AddFlags adds the server's flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Recommended.AddFlags(fs)
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Serve without a management cluster: self-signed certificates, an admin kubeconfig written to --data-dir, "+
			"and that admin authorized for everything.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory for the embedded etcd (used when --etcd-servers is empty) and the standalone certificates and kubeconfig.")
	o.Workers.addFlags(fs)
	o.Memory.addFlags(fs)
	fs.DurationVar(&o.ShutdownWatchTerminationGracePeriod, "shutdown-watch-termination-grace-period", o.ShutdownWatchTerminationGracePeriod,
		"How long shutdown waits for open watches to end; they are told to end when shutdown starts.")
	fs.DurationVar(&o.ShutdownDelayDuration, "shutdown-delay-duration", o.ShutdownDelayDuration,
		"How long to keep serving (/readyz failing) after a stop is asked for, so load balancers and Services stop sending requests first.")
	fs.DurationVar(&o.IPAMRepair.Interval, "ipam-repair-interval", o.IPAMRepair.Interval,
		"How often to look for address reservations that no IPAllocation holds; 0 turns the repair loop off.")
	fs.DurationVar(&o.IPAMRepair.Grace, "ipam-repair-grace", o.IPAMRepair.Grace,
		"How long a reservation must stay unreferenced before the repair loop frees it.")
	fs.DurationVar(&o.KubeconfigMaxExpiration, "kubeconfig-max-expiration", o.KubeconfigMaxExpiration,
		"The longest validity of a kubeconfig minted by tenantclusters/kubeconfig; longer requests are capped, with a warning.")
	fs.StringVar(&o.SnapshotDir, "snapshot-dir", o.SnapshotDir,
		"The directory snapshot store (when ButlerConfig spec.snapshotStore names none) read to refuse, at admission, a restore from a snapshot whose data does not match its checksum; empty: the provider checks it when it restores.")
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.ShutdownWatchTerminationGracePeriod <= 0 {
		errs = append(errs, errors.New("--shutdown-watch-termination-grace-period must be positive"))
	}
	if o.ShutdownDelayDuration < 0 {
		errs = append(errs, errors.New("--shutdown-delay-duration must not be negative"))
	}
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if err := o.Memory.validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Standalone && o.Recommended.SecureServing.BindPort <= 0 && o.Recommended.SecureServing.Listener == nil {
		errs = append(errs, errors.New("--standalone needs --secure-port > 0"))
	}
	// Storage is validated once the embedded etcd, if any, has given its address.
	recommended := *o.Recommended
	recommended.Etcd = nil
	errs = append(errs, recommended.Validate()...)
	return utilerrors.NewAggregate(errs)
}

// NewCommand returns the butler-apiserver command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "butler-apiserver",
		Short: "Serve the butler.butlerlabs.dev API (tenant clusters as Kubernetes resources)",
		Long: `butler-apiserver serves TenantCluster, Team, ButlerConfig, TenantAddon, AddonDefinition,
NetworkPool, IPAllocation, ProviderConfig and TenantClusterSnapshot as an aggregated Kubernetes API.

With --standalone it needs nothing else: it starts an embedded etcd under --data-dir,
serves TLS with its own CA and writes an admin kubeconfig there.`,
		Version:      Version,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return Run(cmd.Context(), o)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	return cmd
}
