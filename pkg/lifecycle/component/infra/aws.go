package infra

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// AWS (CAPA v2): credentials through an AWSClusterStaticIdentity named after the ProviderConfig's
// Secret (the identity points at the Secret, as clusterawsadm sets it up).
var aws = provider{
	cluster:     external.AWSClusterGVK,
	template:    external.AWSMachineTemplateGVK,
	clusterSpec: awsCluster,
	machineSpec: awsMachine,
}

// awsNodesInstanceProfile is the worker instance profile clusterawsadm creates.
const awsNodesInstanceProfile = "nodes.cluster-api-provider-aws.sigs.k8s.io"

// awsSizes are the m6i (general purpose, 4 GiB per vCPU) sizes.
var awsSizes = []sized{
	{"m6i.large", 2, 8}, {"m6i.xlarge", 4, 16}, {"m6i.2xlarge", 8, 32}, {"m6i.4xlarge", 16, 64},
	{"m6i.8xlarge", 32, 128}, {"m6i.12xlarge", 48, 192}, {"m6i.16xlarge", 64, 256},
	{"m6i.24xlarge", 96, 384}, {"m6i.32xlarge", 128, 512},
}

func awsConfig(in component.Input) (*v1alpha1.AWSConfig, error) {
	c := in.Provider.Spec.AWS
	switch {
	case c == nil:
		return nil, missing(in, "aws")
	case c.Region == "":
		return nil, missing(in, "aws.region")
	}
	return c, nil
}

func awsCluster(in component.Input) (map[string]any, error) {
	c, err := awsConfig(in)
	if err != nil {
		return nil, err
	}
	name, _, err := credentials(in)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"region":      c.Region,
		"identityRef": map[string]any{"kind": external.AWSClusterStaticIdentityGVK.Kind, "name": name},
		// The API server is hosted (Steward/Kamaji) or fronted by the control plane provider:
		// CAPA makes no load balancer for it.
		"controlPlaneLoadBalancer": map[string]any{"loadBalancerType": "disabled"},
	}
	if c.VPCID != "" {
		network := map[string]any{"vpc": map[string]any{"id": c.VPCID}}
		if len(c.SubnetIDs) > 0 {
			subnets := make([]any, 0, len(c.SubnetIDs))
			for _, id := range c.SubnetIDs {
				subnets = append(subnets, map[string]any{"id": id})
			}
			network["subnets"] = subnets
		}
		spec["network"] = network
	}
	return spec, nil
}

func awsMachine(in component.Input, mt v1alpha1.MachineTemplate) (map[string]any, error) {
	c, err := awsConfig(in)
	if err != nil {
		return nil, err
	}
	instanceType, err := smallestFitting(in, awsSizes, mt, "workers.machineTemplate (cpu, memory)")
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"instanceType":       instanceType,
		"iamInstanceProfile": awsNodesInstanceProfile,
		"rootVolume":         map[string]any{"size": gibibytes(mt.DiskSize)},
	}
	if mt.OS.ImageRef != "" {
		spec["ami"] = map[string]any{"id": mt.OS.ImageRef}
	}
	if len(c.SubnetIDs) > 0 {
		spec["subnet"] = map[string]any{"id": c.SubnetIDs[0]}
	}
	for k, v := range awsUserData(mt.OS.Type) {
		spec[k] = v
	}
	if len(c.SecurityGroupIDs) > 0 {
		groups := make([]any, 0, len(c.SecurityGroupIDs))
		for _, id := range c.SecurityGroupIDs {
			groups = append(groups, map[string]any{"id": id})
		}
		spec["additionalSecurityGroups"] = groups
	}
	return spec, nil
}

// awsUserData are the fields that make CAPA hand each OS its data in a way the OS reads
// (awsmachine_controller.go resolveUserData). CAPA's default for cloud-config data is AWS
// Secrets Manager: the user data becomes a cloud-init boothook that fetches the real data with
// the AWS CLI, which only an image with cloud-init and the CLI can run (rocky, from
// image-builder). Talos' machined, Bottlerocket and Kairos' agent read the user data itself, so
// for them it goes in plain. Flatcar's data.format is ignition: CAPA needs spec.ignition (and
// its BootstrapFormatIgnition feature gate) and forbids cloudInit beside it; the data goes in the
// user data (UnencryptedUserData), as the ClusterObjectStore choice needs an S3 bucket on the
// AWSCluster that a ProviderConfig does not name. In every plain case the bootstrap token is
// readable by whoever may read the instance's user data until it expires (the BootstrapConfig's
// tokenTTL) or the node has joined, when it is deleted.
func awsUserData(os v1alpha1.OSType) map[string]any {
	switch os {
	case v1alpha1.OSFlatcar:
		return map[string]any{"ignition": map[string]any{"version": bootstrap.IgnitionVersion(), "storageType": "UnencryptedUserData"}}
	case v1alpha1.OSTalos, v1alpha1.OSBottlerocket, v1alpha1.OSKairos:
		return map[string]any{"cloudInit": map[string]any{"insecureSkipSecretsManager": true}}
	}
	return nil
}
