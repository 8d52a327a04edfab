// Package apiserver assembles the butler.butlerlabs.dev API group on a generic API server.
package apiserver

import (
	"time"

	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	scalescheme "k8s.io/client-go/scale/scheme"
	scaleautoscalingv1 "k8s.io/client-go/scale/scheme/autoscalingv1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/install"
	"github.com/butlerdotdev/butler-apiserver/pkg/ipam/store"
	addondefinition "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/addondefinition/storage"
	butlerconfig "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/butlerconfig/storage"
	ipallocation "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/ipallocation/storage"
	managementaddon "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/managementaddon/storage"
	networkpool "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/networkpool/storage"
	providerconfig "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/providerconfig/storage"
	team "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/team/storage"
	tenantaddon "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantaddon/storage"
	tenantcluster "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantcluster/storage"
	tenantclustersnapshot "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantclustersnapshot/storage"
	updaterun "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/updaterun/storage"
	updatestrategy "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/updatestrategy/storage"
)

var (
	// Scheme knows the butler types, internal and v1alpha1.
	Scheme = runtime.NewScheme()
	// Codecs serializes the butler types.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	// The scale subresource speaks autoscaling/v1 Scale. Its handlers convert the Scale to the
	// internal ("hub") version of autoscaling (a strategic merge patch or an apply does), and
	// k8s.io/api has no internal autoscaling types: client-go's scale scheme supplies one, with
	// its conversions to and from autoscaling/v1, as apiextensions-apiserver uses for CR scale.
	// (Registering autoscalingv1.Scale itself as the internal version also works, but then the
	// OpenAPI definition of io.k8s.api.autoscaling.v1.Scale lists an autoscaling/__internal
	// kind, which differs from kube-apiserver's and gets renamed when the specs are aggregated.)
	utilruntime.Must(scaleautoscalingv1.AddToScheme(Scheme))
	utilruntime.Must(scalescheme.AddToScheme(Scheme))

	// The generic server decodes options (ListOptions, DeleteOptions, ...) as v1 of the empty group.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// ManagementCluster is what butler-apiserver reads from the management cluster it is
// aggregated into. The zero value means there is none (standalone mode).
type ManagementCluster struct {
	// Secrets reads the Secrets that hold tenant clusters' kubeconfigs.
	Secrets corev1client.SecretsGetter
	// Events records break-glass kubeconfigs on their TenantClusters.
	Events corev1client.EventsGetter
	// KubeconfigMaxExpiration caps the validity of kubeconfigs tenantclusters/kubeconfig mints.
	KubeconfigMaxExpiration time.Duration
}

// InstallButlerAPI registers every butler resource and subresource on the server, and the
// IPAM repair loop as a post-start hook. It returns the storage of every path it serves
// ("teams", "tenantclusters/scale", ...).
func InstallButlerAPI(server *genericapiserver.GenericAPIServer, optsGetter generic.RESTOptionsGetter, mgmt ManagementCluster, repair IPAMRepair) (map[string]rest.Storage, error) {
	ipamStore, closeIPAM, err := newIPAMStore(optsGetter)
	if err != nil {
		return nil, err
	}
	server.AddPreShutdownHookOrDie("ipam-etcd-client", func() error { closeIPAM(); return nil })
	if repair.Interval > 0 {
		server.AddPostStartHookOrDie("ipam-repair", func(ctx genericapiserver.PostStartHookContext) error {
			go store.NewRepairer(ipamStore, repair.Grace).Run(ctx, repair.Interval)
			return nil
		})
	}
	resources, err := newResources(optsGetter, mgmt, ipamStore)
	if err != nil {
		return nil, err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(butler.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap["v1alpha1"] = resources
	return resources, server.InstallAPIGroup(&group)
}

// endpoints are the served paths of one resource and its subresources.
type endpoints interface {
	Endpoints() map[string]rest.Storage
}

func newResources(optsGetter generic.RESTOptionsGetter, mgmt ManagementCluster, ipamStore *store.Store) (map[string]rest.Storage, error) {
	resources := map[string]rest.Storage{}
	var errs []error
	add := func(storage endpoints, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		maps.Copy(resources, storage.Endpoints())
	}
	add(butlerconfig.NewStorage(Scheme, optsGetter))
	teams, err := team.NewStorage(Scheme, optsGetter)
	add(teams, err)
	if err == nil {
		add(tenantcluster.NewStorage(Scheme, optsGetter, teams.Team.Store, mgmt.Secrets, mgmt.Events, mgmt.KubeconfigMaxExpiration))
		add(providerconfig.NewStorage(Scheme, optsGetter, teams.Team.Store))
	}
	add(tenantaddon.NewStorage(Scheme, optsGetter))
	add(tenantclustersnapshot.NewStorage(Scheme, optsGetter))
	add(updatestrategy.NewStorage(Scheme, optsGetter))
	add(updaterun.NewStorage(Scheme, optsGetter))
	add(addondefinition.NewStorage(Scheme, optsGetter))
	add(managementaddon.NewStorage(Scheme, optsGetter))
	allocations, err := ipallocation.NewStorage(Scheme, optsGetter, ipamStore)
	add(allocations, err)
	if err == nil {
		add(networkpool.NewStorage(Scheme, optsGetter, ipamStore, allocations.IPAllocation))
	}
	return resources, utilerrors.NewAggregate(errs)
}
