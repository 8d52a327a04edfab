package apiserver

import (
	"fmt"
	"path"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam/store"
)

// IPAMRepair configures the loop that frees reservations no IPAllocation holds.
type IPAMRepair struct {
	// Interval between passes; zero turns the loop off.
	Interval time.Duration
	// Grace is how long a reservation must stay unreferenced before it is freed.
	Grace time.Duration
}

// DefaultIPAMRepair passes every 30 seconds and frees after two minutes.
var DefaultIPAMRepair = IPAMRepair{Interval: 30 * time.Second, Grace: 2 * time.Minute}

// newIPAMStore connects to the etcd the butler resources are stored in, with the codecs of
// networkpools and ipallocations, so that what it writes reads back like the generic store's.
func newIPAMStore(optsGetter generic.RESTOptionsGetter) (*store.Store, func(), error) {
	codec := func(resource string, example runtime.Object) (store.Codec, generic.RESTOptions, error) {
		opts, err := optsGetter.GetRESTOptions(butler.Resource(resource), example)
		if err != nil {
			return store.Codec{}, opts, err
		}
		transformer := opts.StorageConfig.Transformer
		if transformer == nil { // what the etcd3 storage uses without encryption at rest
			transformer = identity.NewEncryptCheckTransformer()
		}
		return store.Codec{
			Codec:       opts.StorageConfig.Codec,
			Transformer: transformer,
			Prefix:      path.Join("/", opts.StorageConfig.Prefix, opts.ResourcePrefix) + "/",
		}, opts, nil
	}
	pools, opts, err := codec("networkpools", &butler.NetworkPool{})
	if err != nil {
		return nil, nil, err
	}
	allocations, _, err := codec("ipallocations", &butler.IPAllocation{})
	if err != nil {
		return nil, nil, err
	}
	t := opts.StorageConfig.Transport
	cfg := clientv3.Config{Endpoints: t.ServerList, DialTimeout: 20 * time.Second}
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		tlsInfo := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
		if cfg.TLS, err = tlsInfo.ClientConfig(); err != nil {
			return nil, nil, fmt.Errorf("etcd TLS for IPAM: %w", err)
		}
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to etcd for IPAM: %w", err)
	}
	return store.New(client, opts.StorageConfig.Prefix, pools, allocations), func() { _ = client.Close() }, nil
}
