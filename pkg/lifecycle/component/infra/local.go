package infra

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// Local: butler's own provider, machines simulated on this host. The control plane provider
// sets LocalCluster spec.controlPlaneEndpoint, and a LocalMachine's spec.providerID is set by
// its controller; machines take no size. The one setting is the ProviderConfig's
// spec.local.nodeType, which every machine of the template boots as (kwok when unset).
var local = provider{
	cluster:     external.LocalClusterGVK,
	template:    external.LocalMachineTemplateGVK,
	clusterSpec: func(component.Input) (map[string]any, error) { return nil, nil },
	machineSpec: func(in component.Input, _ v1alpha1.MachineTemplate) (map[string]any, error) {
		if l := in.Provider.Spec.Local; l != nil && l.NodeType != "" {
			return map[string]any{"nodeType": string(l.NodeType)}, nil
		}
		return map[string]any{}, nil
	},
}
