// Package infra builds a TenantCluster's infrastructure objects for each of the seven providers:
// the infrastructure cluster <tc> and the machine templates <tc>-workers (and, for a standalone
// control plane, <tc>-control-plane), from the ProviderConfig's provider block and the
// machine template of the pool. One file per provider. Credentials are passed by reference; the
// nodes IPAllocation goes into the machine specs of the one provider that takes static addresses
// (Proxmox); for the others NodeAddressesUnsupported says why not.
package infra

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// NodeAddressesUnsupported is why a provider's machines cannot take the nodes IPAllocation, or
// "" when its machine specs carry it (the API's one table of reasons).
func NodeAddressesUnsupported(p v1alpha1.ProviderType) string {
	return butler.NodeAddressesUnsupported(butler.ProviderType(p))
}

// provider maps a ProviderConfig to one infrastructure provider's objects.
type provider struct {
	cluster, template schema.GroupVersionKind
	// clusterSpec is the infrastructure cluster's spec (nil: none).
	clusterSpec func(in component.Input) (map[string]any, error)
	// machineSpec is the spec of a machine made from a template (its spec.template.spec).
	machineSpec func(in component.Input, mt v1alpha1.MachineTemplate) (map[string]any, error)
}

var providers = map[v1alpha1.ProviderType]provider{
	v1alpha1.ProviderHarvester: harvester,
	v1alpha1.ProviderNutanix:   nutanix,
	v1alpha1.ProviderProxmox:   proxmox,
	v1alpha1.ProviderAWS:       aws,
	v1alpha1.ProviderAzure:     azure,
	v1alpha1.ProviderGCP:       gcp,
	v1alpha1.ProviderLocal:     local,
}

// Kinds are a provider's infrastructure cluster and machine template kinds (empty for an
// unknown provider).
func Kinds(p v1alpha1.ProviderType) (cluster, template schema.GroupVersionKind) {
	pr, ok := providers[p]
	if !ok {
		return schema.GroupVersionKind{}, schema.GroupVersionKind{}
	}
	return pr.cluster, pr.template
}

// ForProvider is the infrastructure cluster <tc> and the workers' machine template <tc>-workers.
func ForProvider(in component.Input) (cluster, workerTemplate *unstructured.Unstructured, err error) {
	p, err := providerOf(in)
	if err != nil {
		return nil, nil, err
	}
	spec, err := p.clusterSpec(in)
	if err != nil {
		return nil, nil, err
	}
	cluster = component.New(in, p.cluster, component.Name(in), spec)
	workerTemplate, err = machineTemplate(in, p, component.WorkersName(in), in.Cluster.Spec.Workers.MachineTemplate)
	if err != nil {
		return nil, nil, err
	}
	return cluster, workerTemplate, nil
}

// ControlPlaneTemplate is the machine template <tc>-control-plane of a standalone control plane,
// sized by spec.controlPlane.machineTemplate (the defaults when unset).
func ControlPlaneTemplate(in component.Input) (*unstructured.Unstructured, error) {
	p, err := providerOf(in)
	if err != nil {
		return nil, err
	}
	var mt v1alpha1.MachineTemplate
	if in.Cluster.Spec.ControlPlane.MachineTemplate != nil {
		mt = *in.Cluster.Spec.ControlPlane.MachineTemplate
	} else {
		mt.OS = in.Cluster.Spec.Workers.MachineTemplate.OS
	}
	return machineTemplate(in, p, component.ControlPlaneMachinesName(in), mt)
}

func providerOf(in component.Input) (provider, error) {
	p, ok := providers[in.Provider.Spec.Provider]
	if !ok {
		return provider{}, fmt.Errorf("ProviderConfig %s: unknown provider %q", pcName(in), in.Provider.Spec.Provider)
	}
	return p, nil
}

func machineTemplate(in component.Input, p provider, name string, mt v1alpha1.MachineTemplate) (*unstructured.Unstructured, error) {
	mt = *mt.DeepCopy()
	v1alpha1.SetDefaults_MachineTemplate(&mt)
	if why := validation.OSUnsupportedOn(butler.ProviderType(in.Provider.Spec.Provider), butler.OSType(mt.OS.Type)); why != "" {
		return nil, fmt.Errorf("ProviderConfig %s: %s machines cannot boot on provider %s: %s", pcName(in), mt.OS.Type, in.Provider.Spec.Provider, why)
	}
	spec, err := p.machineSpec(in, mt)
	if err != nil {
		return nil, err
	}
	if spec == nil {
		spec = map[string]any{}
	}
	t := component.New(in, p.template, name, map[string]any{"template": map[string]any{"spec": spec}})
	return t, nil
}

// missing is the error of a ProviderConfig that lacks a field a provider needs.
func missing(in component.Input, field string) error {
	return fmt.Errorf("ProviderConfig %s: spec.%s is required for provider %s", pcName(in), field, in.Provider.Spec.Provider)
}

func pcName(in component.Input) string {
	if in.Provider.Namespace == "" {
		return in.Provider.Name
	}
	return in.Provider.Namespace + "/" + in.Provider.Name
}

// credentials is the Secret the ProviderConfig names, defaulting its namespace to the
// ProviderConfig's.
func credentials(in component.Input) (name, namespace string, err error) {
	ref := in.Provider.Spec.CredentialsRef
	if ref == nil || ref.Name == "" {
		return "", "", missing(in, "credentialsRef")
	}
	namespace = ref.Namespace
	if namespace == "" {
		namespace = in.Provider.Namespace
	}
	return ref.Name, namespace, nil
}

func cpus(mt v1alpha1.MachineTemplate) int64 { return int64(*mt.CPU) }

// mebibytes and gibibytes round up.
func mebibytes(q *resource.Quantity) int64 { return ceilDiv(q.Value(), 1<<20) }
func gibibytes(q *resource.Quantity) int64 { return ceilDiv(q.Value(), 1<<30) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// quantity is a quantity as the string the apiserver stores.
func quantity(q *resource.Quantity) string { return q.String() }

// sized is an instance size of a cloud's general purpose family.
type sized struct {
	name      string
	cpu       int64
	memoryGiB int64
}

// smallestFitting is the smallest size with at least the CPUs and memory asked for.
func smallestFitting(in component.Input, sizes []sized, mt v1alpha1.MachineTemplate, field string) (string, error) {
	mem := gibibytes(mt.Memory)
	for _, s := range sizes {
		if s.cpu >= cpus(mt) && s.memoryGiB >= mem {
			return s.name, nil
		}
	}
	return "", fmt.Errorf("ProviderConfig %s: no %s size has %d CPUs and %dGi; set spec.%s", pcName(in), in.Provider.Spec.Provider, cpus(mt), mem, field)
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isUUID(s string) bool { return uuidPattern.MatchString(s) }
