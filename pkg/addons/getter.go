package addons

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clusterClients is what every Configuration of one tenant cluster shares: its REST config,
// one discovery cache and one REST mapper.
type clusterClients struct {
	raw       *clientcmdapi.Config
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

// newClusterClients reads a kubeconfig (its current context) into clients for Helm.
func newClusterClients(kubeconfig []byte) (*clusterClients, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("tenant kubeconfig: %w", err)
	}
	config, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("tenant kubeconfig: %w", err)
	}
	// Helm applies many objects one request at a time; client-go's default 5 QPS makes a
	// chart of a hundred objects take twenty seconds.
	config.QPS, config.Burst = 50, 100
	config.UserAgent = "butler-apiserver/addons"
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	return &clusterClients{raw: raw, config: config, discovery: cached, mapper: mapper}, nil
}

// namespacedGetter is a genericclioptions.RESTClientGetter over a cluster's shared clients with
// its default namespace set to the release's.
type namespacedGetter struct {
	*clusterClients
	namespace string
}

var _ genericclioptions.RESTClientGetter = namespacedGetter{}

func (g namespacedGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

func (g namespacedGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g namespacedGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g namespacedGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*g.raw, &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}
