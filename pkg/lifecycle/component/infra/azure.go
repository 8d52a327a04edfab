package infra

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// Azure (CAPZ): credentials through an AzureClusterIdentity named after the ProviderConfig's
// Secret, in the Secret's namespace (the identity holds the client id and points at the Secret).
var azure = provider{
	cluster:     external.AzureClusterGVK,
	template:    external.AzureMachineTemplateGVK,
	clusterSpec: azureCluster,
	machineSpec: azureMachine,
}

// azureSizes are the Dsv5 (general purpose, 4 GiB per vCPU) sizes.
var azureSizes = []sized{
	{"Standard_D2s_v5", 2, 8}, {"Standard_D4s_v5", 4, 16}, {"Standard_D8s_v5", 8, 32},
	{"Standard_D16s_v5", 16, 64}, {"Standard_D32s_v5", 32, 128}, {"Standard_D48s_v5", 48, 192},
	{"Standard_D64s_v5", 64, 256}, {"Standard_D96s_v5", 96, 384},
}

func azureConfig(in component.Input) (*v1alpha1.AzureConfig, error) {
	c := in.Provider.Spec.Azure
	switch {
	case c == nil:
		return nil, missing(in, "azure")
	case c.SubscriptionID == "":
		return nil, missing(in, "azure.subscriptionID")
	case c.ResourceGroup == "":
		return nil, missing(in, "azure.resourceGroup")
	case c.Location == "":
		return nil, missing(in, "azure.location")
	}
	return c, nil
}

func azureCluster(in component.Input) (map[string]any, error) {
	c, err := azureConfig(in)
	if err != nil {
		return nil, err
	}
	name, namespace, err := credentials(in)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"subscriptionID": c.SubscriptionID,
		"resourceGroup":  c.ResourceGroup,
		"location":       c.Location,
		"identityRef": map[string]any{
			"apiVersion": external.AzureClusterGVK.GroupVersion().String(),
			"kind":       external.AzureClusterIdentityGVK.Kind,
			"name":       name,
			"namespace":  namespace,
		},
	}
	if c.VnetName != "" {
		network := map[string]any{"vnet": map[string]any{"name": c.VnetName, "resourceGroup": c.ResourceGroup}}
		if c.SubnetName != "" {
			network["subnets"] = []any{map[string]any{"name": c.SubnetName, "role": "node"}}
		}
		spec["networkSpec"] = network
	}
	return spec, nil
}

func azureMachine(in component.Input, mt v1alpha1.MachineTemplate) (map[string]any, error) {
	c, err := azureConfig(in)
	if err != nil {
		return nil, err
	}
	vmSize := c.VMSize
	if vmSize == "" {
		if vmSize, err = smallestFitting(in, azureSizes, mt, "azure.vmSize"); err != nil {
			return nil, err
		}
	}
	spec := map[string]any{
		"vmSize": vmSize,
		"osDisk": map[string]any{
			"osType":      "Linux",
			"diskSizeGB":  gibibytes(mt.DiskSize),
			"managedDisk": map[string]any{"storageAccountType": "Premium_LRS"},
		},
	}
	if mt.OS.ImageRef != "" {
		spec["image"] = map[string]any{"id": mt.OS.ImageRef}
	}
	return spec, nil
}
