// Package workers builds a TenantCluster's worker pool: the CAPI MachineDeployment <tc>-workers
// and the BootstrapConfigTemplate <tc>-workers of butler's bootstrap provider that its machines
// get their bootstrap data from.
package workers

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
)

// DeploymentNameLabel is CAPI's label for a MachineDeployment's machines.
const DeploymentNameLabel = "cluster.x-k8s.io/deployment-name"

// clusterDNSIndex is the address of the service CIDR the cluster DNS Service takes (kubeadm's).
const clusterDNSIndex = 10

// MachineDeployment is <tc>-workers: spec.workers.replicas machines at spec.kubernetesVersion,
// bootstrapped by the BootstrapConfigTemplate and made from the provider's machine template of
// the same name. Selector, labels and rollout are set in full: no CAPI defaulting webhook runs
// in front of the management cluster.
func MachineDeployment(in component.Input) (*unstructured.Unstructured, error) {
	_, template := infra.Kinds(in.Provider.Spec.Provider)
	if template.Empty() {
		return nil, fmt.Errorf("ProviderConfig %s/%s: unknown provider %q", in.Provider.Namespace, in.Provider.Name, in.Provider.Spec.Provider)
	}
	name := component.WorkersName(in)
	selector := map[string]string{
		clusterv1.ClusterNameLabel: in.Cluster.Name,
		DeploymentNameLabel:        name,
	}
	machineLabels := map[string]string{
		external.TenantClusterLabel: in.Cluster.Name,
		component.PoolLabel:         component.WorkersPool,
	}
	for k, v := range selector {
		machineLabels[k] = v
	}
	md := &clusterv1.MachineDeployment{Spec: clusterv1.MachineDeploymentSpec{
		ClusterName: in.Cluster.Name,
		Replicas:    ptr.To(in.Cluster.Spec.Workers.Replicas),
		Selector:    metav1.LabelSelector{MatchLabels: selector},
		Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
			Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
			RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
				MaxSurge:       ptr.To(intstr.FromInt32(1)),
				MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			},
		}},
		Template: clusterv1.MachineTemplateSpec{
			ObjectMeta: clusterv1.ObjectMeta{Labels: machineLabels},
			Spec: clusterv1.MachineSpec{
				ClusterName: in.Cluster.Name,
				Version:     in.Cluster.Spec.KubernetesVersion,
				Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: external.BootstrapConfigTemplateGVK.Group,
					Kind:     external.BootstrapConfigTemplateGVK.Kind,
					Name:     name,
				}},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: template.Group, Kind: template.Kind, Name: name,
				},
			},
		},
	}}
	return component.FromTyped(in, external.MachineDeploymentGVK, name, md)
}

// BootstrapTemplate is the BootstrapConfigTemplate <tc>-workers: the pool's OS, the Node labels
// that tie a Node to its cluster and pool, and the cluster's networks (cluster DNS = the 10th
// address of the service CIDR).
func BootstrapTemplate(in component.Input) (*unstructured.Unstructured, error) {
	net := in.Cluster.Spec.Networking
	dns, err := component.NthAddress(net.ServiceCIDR, clusterDNSIndex)
	if err != nil {
		return nil, fmt.Errorf("TenantCluster %s/%s: spec.networking.serviceCIDR: %w", in.Cluster.Namespace, in.Cluster.Name, err)
	}
	osSpec := in.Cluster.Spec.Workers.MachineTemplate.OS
	osType := osSpec.Type
	if osType == "" {
		osType = v1alpha1.OSTalos
	}
	spec := external.BootstrapConfigSpec{
		OS: external.BootstrapOS{Type: string(osType), Version: osSpec.Version},
		NodeLabels: map[string]string{
			external.TenantClusterLabel: in.Cluster.Name,
			component.PoolLabel:         component.WorkersPool,
		},
		ClusterDNS:    dns,
		ClusterDomain: component.ServiceDomain,
		PodCIDR:       net.PodCIDR,
		ServiceCIDR:   net.ServiceCIDR,
	}
	return component.FromSpec(in, external.BootstrapConfigTemplateGVK, component.WorkersName(in),
		&external.BootstrapConfigTemplateSpec{Template: external.BootstrapConfigTemplateResource{Spec: spec}})
}
