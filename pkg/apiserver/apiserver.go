// Package apiserver assembles the butler.butlerlabs.dev API group on a generic API server.
package apiserver

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/install"
	addondefinition "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/addondefinition/storage"
	butlerconfig "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/butlerconfig/storage"
	ipallocation "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/ipallocation/storage"
	networkpool "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/networkpool/storage"
	providerconfig "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/providerconfig/storage"
	team "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/team/storage"
	tenantaddon "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantaddon/storage"
	tenantcluster "github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/tenantcluster/storage"
)

var (
	// Scheme knows the butler types, internal and v1alpha1.
	Scheme = runtime.NewScheme()
	// Codecs serializes the butler types.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	// The scale subresource speaks autoscaling/v1 Scale.
	utilruntime.Must(autoscalingv1.AddToScheme(Scheme))

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

// InstallButlerAPI registers every butler resource and subresource on the server.
func InstallButlerAPI(server *genericapiserver.GenericAPIServer, optsGetter generic.RESTOptionsGetter) error {
	resources, err := newResources(optsGetter)
	if err != nil {
		return err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(butler.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap["v1alpha1"] = resources
	return server.InstallAPIGroup(&group)
}

func newResources(optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	resources := map[string]rest.Storage{}

	bc, err := butlerconfig.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["butlerconfigs"] = bc.ButlerConfig
	resources["butlerconfigs/status"] = bc.Status

	tm, err := team.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["teams"] = tm.Team
	resources["teams/status"] = tm.Status

	tc, err := tenantcluster.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["tenantclusters"] = tc.TenantCluster
	resources["tenantclusters/status"] = tc.Status

	ta, err := tenantaddon.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["tenantaddons"] = ta.TenantAddon
	resources["tenantaddons/status"] = ta.Status

	ad, err := addondefinition.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["addondefinitions"] = ad.AddonDefinition

	np, err := networkpool.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["networkpools"] = np.NetworkPool
	resources["networkpools/status"] = np.Status

	ipa, err := ipallocation.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["ipallocations"] = ipa.IPAllocation
	resources["ipallocations/status"] = ipa.Status

	pc, err := providerconfig.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	resources["providerconfigs"] = pc.ProviderConfig
	resources["providerconfigs/status"] = pc.Status

	return resources, nil
}
