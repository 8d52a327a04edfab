package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// unsupportedOS says why machines of an OS cannot boot on a provider: the provider's Cluster API
// infrastructure provider delivers bootstrap data in a way no image of that OS reads, or the OS
// publishes no image for it. Every other OS × provider pair is delivered as the README's table
// says (pkg/lifecycle/component/infra sets the fields each needs).
var unsupportedOS = map[butler.ProviderType]map[butler.OSType]string{
	butler.ProviderAzure:     {butler.OSBottlerocket: bottlerocketImages},
	butler.ProviderGCP:       {butler.OSBottlerocket: bottlerocketImages},
	butler.ProviderProxmox:   {butler.OSBottlerocket: bottlerocketImages},
	butler.ProviderHarvester: {butler.OSBottlerocket: bottlerocketImages},
	butler.ProviderNutanix: {
		butler.OSBottlerocket: bottlerocketImages,
		butler.OSFlatcar:      "Flatcar publishes no Nutanix AHV image, and CAPX delivers bootstrap data only as cloud-init guest customization, which Flatcar's Ignition does not read",
	},
}

const bottlerocketImages = "Bottlerocket publishes images only for AWS, VMware and bare metal, and reads its settings only from those platforms' user data"

// OSUnsupportedOn is why machines of os cannot boot on provider, or "" when they can.
func OSUnsupportedOn(provider butler.ProviderType, os butler.OSType) string {
	return unsupportedOS[provider][os]
}

// ValidateOSOnProvider refuses the cluster's machine OSes that cannot boot on its provider (the
// provider of the ProviderConfig the cluster resolves to), with the reason.
func ValidateOSOnProvider(spec *butler.TenantClusterSpec, provider butler.ProviderType, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	check := func(os butler.OSType, p *field.Path) {
		if why := OSUnsupportedOn(provider, os); why != "" {
			allErrs = append(allErrs, field.Invalid(p, os, fmt.Sprintf("%s machines cannot boot on provider %s: %s", os, provider, why)))
		}
	}
	check(spec.Workers.MachineTemplate.OS.Type, fldPath.Child("workers", "machineTemplate", "os", "type"))
	if mt := spec.ControlPlane.MachineTemplate; mt != nil && spec.ControlPlane.Type == butler.ControlPlaneStandalone {
		check(mt.OS.Type, fldPath.Child("controlPlane", "machineTemplate", "os", "type"))
	}
	return allErrs
}
