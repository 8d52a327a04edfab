package infra

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// GCP (CAPG): credentials from the ProviderConfig's Secret (credentialsRef).
var gcp = provider{
	cluster:     external.GCPClusterGVK,
	template:    external.GCPMachineTemplateGVK,
	clusterSpec: gcpCluster,
	machineSpec: gcpMachine,
}

// gcpSizes are the n2-standard (4 GB per vCPU) sizes.
var gcpSizes = []sized{
	{"n2-standard-2", 2, 8}, {"n2-standard-4", 4, 16}, {"n2-standard-8", 8, 32}, {"n2-standard-16", 16, 64},
	{"n2-standard-32", 32, 128}, {"n2-standard-48", 48, 192}, {"n2-standard-64", 64, 256},
	{"n2-standard-80", 80, 320}, {"n2-standard-96", 96, 384}, {"n2-standard-128", 128, 512},
}

func gcpConfig(in component.Input) (*v1alpha1.GCPConfig, error) {
	c := in.Provider.Spec.GCP
	switch {
	case c == nil:
		return nil, missing(in, "gcp")
	case c.ProjectID == "":
		return nil, missing(in, "gcp.projectID")
	case c.Region == "":
		return nil, missing(in, "gcp.region")
	}
	return c, nil
}

func gcpCluster(in component.Input) (map[string]any, error) {
	c, err := gcpConfig(in)
	if err != nil {
		return nil, err
	}
	name, namespace, err := credentials(in)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"project":        c.ProjectID,
		"region":         c.Region,
		"credentialsRef": map[string]any{"name": name, "namespace": namespace},
	}
	if c.Network != "" {
		network := map[string]any{"name": c.Network}
		if c.Subnetwork != "" {
			network["subnets"] = []any{map[string]any{"name": c.Subnetwork, "region": c.Region}}
		}
		spec["network"] = network
	}
	return spec, nil
}

func gcpMachine(in component.Input, mt v1alpha1.MachineTemplate) (map[string]any, error) {
	c, err := gcpConfig(in)
	if err != nil {
		return nil, err
	}
	instanceType := c.MachineType
	if instanceType == "" {
		if instanceType, err = smallestFitting(in, gcpSizes, mt, "gcp.machineType"); err != nil {
			return nil, err
		}
	}
	spec := map[string]any{
		"instanceType":   instanceType,
		"rootDeviceSize": gibibytes(mt.DiskSize),
	}
	if mt.OS.ImageRef != "" {
		spec["image"] = mt.OS.ImageRef
	}
	if c.Subnetwork != "" {
		spec["subnet"] = c.Subnetwork
	}
	return spec, nil
}
