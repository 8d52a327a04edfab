package infra

import (
	"strings"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// Harvester runs KubeVirt: CAPI's KubeVirt provider (CAPK) makes the VMs in the Harvester cluster
// whose kubeconfig the ProviderConfig's credentials Secret holds (infraClusterSecretRef).
var harvester = provider{
	cluster:     external.KubevirtClusterGVK,
	template:    external.KubevirtMachineTemplateGVK,
	clusterSpec: harvesterCluster,
	machineSpec: harvesterMachine,
}

// harvesterImageAnnotation makes Harvester fill a DataVolume from one of its images.
const harvesterImageAnnotation = "harvesterhci.io/imageId"

func harvesterConfig(in component.Input) (*v1alpha1.HarvesterConfig, error) {
	c := in.Provider.Spec.Harvester
	if c == nil {
		return nil, missing(in, "harvester")
	}
	if c.NetworkName == "" {
		return nil, missing(in, "harvester.networkName")
	}
	return c, nil
}

func infraClusterSecretRef(in component.Input) (map[string]any, error) {
	name, namespace, err := credentials(in)
	if err != nil {
		return nil, err
	}
	return map[string]any{"apiVersion": "v1", "kind": "Secret", "name": name, "namespace": namespace}, nil
}

func harvesterCluster(in component.Input) (map[string]any, error) {
	if _, err := harvesterConfig(in); err != nil {
		return nil, err
	}
	ref, err := infraClusterSecretRef(in)
	if err != nil {
		return nil, err
	}
	return map[string]any{"infraClusterSecretRef": ref}, nil
}

func harvesterMachine(in component.Input, mt v1alpha1.MachineTemplate) (map[string]any, error) {
	c, err := harvesterConfig(in)
	if err != nil {
		return nil, err
	}
	ref, err := infraClusterSecretRef(in)
	if err != nil {
		return nil, err
	}
	image := mt.OS.ImageRef
	if image == "" {
		image = c.ImageName
	}
	if image == "" {
		return nil, missing(in, "harvester.imageName (or the pool's os.imageRef)")
	}
	storageClass := c.StorageClassName
	if storageClass == "" {
		// Harvester makes a StorageClass per image: longhorn-<image name>.
		storageClass = "longhorn-" + image[strings.LastIndex(image, "/")+1:]
	}
	vmMeta := map[string]any{}
	if c.Namespace != "" {
		vmMeta["namespace"] = c.Namespace
	}
	const disk = "rootdisk"
	vm := map[string]any{
		"runStrategy": "Always",
		"dataVolumeTemplates": []any{map[string]any{
			"metadata": map[string]any{
				"name":        disk,
				"annotations": map[string]any{harvesterImageAnnotation: image},
			},
			"spec": map[string]any{"pvc": map[string]any{
				"accessModes":      []any{"ReadWriteMany"},
				"volumeMode":       "Block",
				"storageClassName": storageClass,
				"resources":        map[string]any{"requests": map[string]any{"storage": quantity(mt.DiskSize)}},
			}},
		}},
		"template": map[string]any{"spec": map[string]any{
			"domain": map[string]any{
				"cpu":       map[string]any{"cores": cpus(mt), "sockets": int64(1), "threads": int64(1)},
				"memory":    map[string]any{"guest": quantity(mt.Memory)},
				"resources": map[string]any{"limits": map[string]any{"cpu": cpus(mt), "memory": quantity(mt.Memory)}},
				"devices": map[string]any{
					"disks":      []any{map[string]any{"name": disk, "bootOrder": int64(1), "disk": map[string]any{"bus": "virtio"}}},
					"interfaces": []any{map[string]any{"name": "default", "model": "virtio", "bridge": map[string]any{}}},
				},
			},
			"networks": []any{map[string]any{"name": "default", "multus": map[string]any{"networkName": c.NetworkName}}},
			"volumes":  []any{map[string]any{"name": disk, "dataVolume": map[string]any{"name": disk}}},
		}},
	}
	spec := map[string]any{
		// The worker OS may have no SSH (Talos); CAPK then trusts the bootstrap instead of probing.
		"virtualMachineBootstrapCheck": map[string]any{"checkStrategy": "none"},
		"infraClusterSecretRef":        ref,
		"virtualMachineTemplate":       map[string]any{"spec": vm},
	}
	if len(vmMeta) > 0 {
		spec["virtualMachineTemplate"].(map[string]any)["metadata"] = vmMeta
	}
	return spec, nil
}
