package infra

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// Local: butler's own provider, machines simulated on this host. Nothing to configure: the
// control plane provider sets LocalCluster spec.controlPlaneEndpoint, and a LocalMachine's
// spec.providerID is set by its controller; machines take no size.
var local = provider{
	cluster:     external.LocalClusterGVK,
	template:    external.LocalMachineTemplateGVK,
	clusterSpec: func(component.Input) (map[string]any, error) { return nil, nil },
	machineSpec: func(component.Input, v1alpha1.MachineTemplate) (map[string]any, error) { return map[string]any{}, nil },
}
