// Package capi builds a TenantCluster's CAPI Cluster and its control plane object: a
// StewardControlPlane (or KamajiControlPlane, by ButlerConfig spec.controlPlaneProvider) for a
// hosted control plane, a KubeadmControlPlane for a standalone one.
package capi

import (
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/kamaji"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
)

// ControlPlaneGVK is the kind of the cluster's control plane object.
func ControlPlaneGVK(in component.Input) schema.GroupVersionKind {
	switch {
	case in.Cluster.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone:
		return external.KubeadmControlPlaneGVK
	case component.ControlPlaneProvider(in.Config) == v1alpha1.ControlPlaneProviderKamaji:
		return external.KamajiControlPlaneGVK
	default:
		return external.StewardControlPlaneGVK
	}
}

// Cluster is the CAPI Cluster <tc>: its networks, and references to the control plane and the
// provider's infrastructure cluster (both named after the TenantCluster).
func Cluster(in component.Input) (*unstructured.Unstructured, error) {
	cp := ControlPlaneGVK(in)
	infraCluster, _ := infra.Kinds(in.Provider.Spec.Provider)
	if infraCluster.Empty() {
		return nil, fmt.Errorf("ProviderConfig %s/%s: unknown provider %q", in.Provider.Namespace, in.Provider.Name, in.Provider.Spec.Provider)
	}
	net := in.Cluster.Spec.Networking
	c := &clusterv1.Cluster{Spec: clusterv1.ClusterSpec{
		ClusterNetwork: clusterv1.ClusterNetwork{
			Pods:          clusterv1.NetworkRanges{CIDRBlocks: nonEmpty(net.PodCIDR)},
			Services:      clusterv1.NetworkRanges{CIDRBlocks: nonEmpty(net.ServiceCIDR)},
			ServiceDomain: component.ServiceDomain,
		},
		ControlPlaneRef:   clusterv1.ContractVersionedObjectReference{APIGroup: cp.Group, Kind: cp.Kind, Name: component.Name(in)},
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infraCluster.Group, Kind: infraCluster.Kind, Name: component.Name(in)},
	}}
	return component.FromTyped(in, external.ClusterGVK, component.Name(in), c)
}

// ControlPlane is the control plane object <tc> of the kind ControlPlaneGVK names.
func ControlPlane(in component.Input) (*unstructured.Unstructured, error) {
	switch ControlPlaneGVK(in) {
	case external.KubeadmControlPlaneGVK:
		return kubeadmControlPlane(in)
	case external.KamajiControlPlaneGVK:
		return kamajiControlPlane(in)
	default:
		return stewardControlPlane(in)
	}
}

func stewardControlPlane(in component.Input) (*unstructured.Unstructured, error) {
	exp, err := exposureOf(in)
	if err != nil {
		return nil, err
	}
	cp := in.Cluster.Spec.ControlPlane
	spec := steward.StewardControlPlaneSpec{
		Version:       in.Cluster.Spec.KubernetesVersion,
		Replicas:      cp.Replicas,
		DataStoreName: dataStore(in.Cluster),
		Network:       &steward.NetworkComponent{ServiceType: exp.serviceType(), CertSANs: exp.certSANs},
	}
	spec.APIServer, spec.ControllerManager, spec.Scheduler = components(cp.Resources)
	spec.APIServer, spec.Deployment = podSecurity(spec.APIServer)
	switch exp.mode {
	case v1alpha1.ExposureIngress:
		spec.Network.Ingress = &steward.IngressComponent{Hostname: exp.hostname, ClassName: exp.ingressClass}
	case v1alpha1.ExposureGateway:
		spec.Network.Gateway = &steward.GatewayComponent{Hostname: exp.hostname,
			ParentRefs: []steward.ParentReference{{Name: exp.gateway.Name, Namespace: exp.gateway.Namespace}}}
	}
	return withRotation(in)(withRestore(in)(withHibernation(in)(component.FromSpec(in, external.StewardControlPlaneGVK, component.Name(in), &spec))))
}

// Where a hosted control plane's kube-apiserver finds its admission configuration: a
// downwardAPI volume of its Pod's external.AdmissionConfigurationAnnotation.
const (
	admissionVolume = "butler-admission"
	admissionDir    = "/etc/kubernetes/butler"
	admissionFile   = "admission.yaml"
)

// podSecurity has the tenant's kube-apiserver enforce external.PodSecurityAdmission (Pod
// Security baseline where a namespace sets no level), as a local tenant's does. Steward sets no
// admission configuration of its own; capi-steward hands apiServer.extraArgs,
// apiServer.extraVolumeMounts, deployment.extraVolumes and deployment.podAdditionalMetadata to
// the TenantControlPlane. The configuration travels in this object, as an annotation of the
// control plane's Pods: no other object to keep in step, and a change of it rolls the Pods
// (kube-apiserver reads the file only at its start).
func podSecurity(apiServer *steward.ControlPlaneComponent) (*steward.ControlPlaneComponent, *steward.DeploymentComponent) {
	if apiServer == nil {
		apiServer = &steward.ControlPlaneComponent{}
	}
	apiServer.ExtraArgs = append(apiServer.ExtraArgs, "--admission-control-config-file="+path.Join(admissionDir, admissionFile))
	apiServer.ExtraVolumeMounts = append(apiServer.ExtraVolumeMounts, corev1.VolumeMount{Name: admissionVolume, MountPath: admissionDir, ReadOnly: true})
	file := corev1.DownwardAPIVolumeFile{Path: admissionFile, FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", external.AdmissionConfigurationAnnotation),
	}}
	return apiServer, &steward.DeploymentComponent{
		PodAdditionalMetadata: &steward.AdditionalMetadata{Annotations: map[string]string{external.AdmissionConfigurationAnnotation: external.PodSecurityAdmission}},
		ExtraVolumes: []corev1.Volume{{Name: admissionVolume, VolumeSource: corev1.VolumeSource{
			DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{file}},
		}}},
	}
}

func kamajiControlPlane(in component.Input) (*unstructured.Unstructured, error) {
	exp, err := exposureOf(in)
	if err != nil {
		return nil, err
	}
	cp := in.Cluster.Spec.ControlPlane
	spec := kamaji.KamajiControlPlaneSpec{
		Version:       in.Cluster.Spec.KubernetesVersion,
		Replicas:      cp.Replicas,
		DataStoreName: dataStore(in.Cluster),
		Network:       &kamaji.NetworkComponent{ServiceType: exp.serviceType(), CertSANs: exp.certSANs},
	}
	spec.APIServer, spec.ControllerManager, spec.Scheduler = components(cp.Resources)
	switch exp.mode {
	case v1alpha1.ExposureIngress:
		spec.Network.Ingress = &kamaji.IngressComponent{Hostname: exp.hostname, ClassName: exp.ingressClass}
	case v1alpha1.ExposureGateway:
		if exp.gateway.Namespace == "" {
			return nil, fmt.Errorf("ButlerConfig butler: spec.controlPlaneExposure.gatewayRef.namespace is required for Gateway exposure through Kamaji (TenantCluster %s/%s)", in.Cluster.Namespace, in.Cluster.Name)
		}
		spec.Network.Gateway = &kamaji.GatewayComponent{Hostname: exp.hostname, Name: exp.gateway.Name, Namespace: exp.gateway.Namespace}
	}
	return withRotation(in)(withHibernation(in)(component.FromSpec(in, external.KamajiControlPlaneGVK, component.Name(in), &spec)))
}

// withHibernation annotates a hosted control plane object with what spec.hibernation asks of
// the endpoint while it is at 0 replicas (the contracts have no field for it; see
// hibernation.WakeOnRequestAnnotation).
func withHibernation(in component.Input) func(*unstructured.Unstructured, error) (*unstructured.Unstructured, error) {
	return func(u *unstructured.Unstructured, err error) (*unstructured.Unstructured, error) {
		h := in.Cluster.Spec.Hibernation
		if err != nil || h == nil || !h.WakeOnRequest {
			return u, err
		}
		u.SetAnnotations(map[string]string{
			hibernation.WakeOnRequestAnnotation: "true",
			hibernation.IdleTimeoutAnnotation:   hibernation.IdleTimeout(h).String(),
		})
		return u, nil
	}
}

// withRestore names the snapshot of spec.restoreFrom in an annotation, for a provider that
// restores tenants from snapshots (the local one; Steward's contract has no field for it).
func withRestore(in component.Input) func(*unstructured.Unstructured, error) (*unstructured.Unstructured, error) {
	return func(u *unstructured.Unstructured, err error) (*unstructured.Unstructured, error) {
		if err != nil || in.Cluster.Spec.RestoreFrom == nil {
			return u, err
		}
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[v1alpha1.RestoreFromAnnotation] = in.Cluster.Spec.RestoreFrom.Name
		u.SetAnnotations(a)
		return u, nil
	}
}

// withRotation asks the provider for the phase of a rotation of the tenant CA and the
// service-account key that status.credentials.rotation is in (external.CredentialsRotationAnnotation):
// Preparing until it completes, then Completing. It stays once the rotation is Completed, so
// that the provider, which has answered, does nothing more.
func withRotation(in component.Input) func(*unstructured.Unstructured, error) (*unstructured.Unstructured, error) {
	return func(u *unstructured.Unstructured, err error) (*unstructured.Unstructured, error) {
		c := in.Cluster.Status.Credentials
		if err != nil || c == nil || c.Rotation == nil || c.Rotation.LastInitiationTime == nil {
			return u, err
		}
		phase := v1alpha1.RotationPreparing
		if p := c.Rotation.Phase; p == v1alpha1.RotationCompleting || p == v1alpha1.RotationCompleted {
			phase = v1alpha1.RotationCompleting
		}
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[external.CredentialsRotationAnnotation] = external.RotationValue(string(phase), c.Rotation.LastInitiationTime.Time)
		u.SetAnnotations(a)
		return u, nil
	}
}

// kubeadmControlPlane runs the control plane on 1, 3 or 5 machines of the provider's template
// <tc>-control-plane (infra.ControlPlaneTemplate). The kubeadm config stays minimal: the
// networks come from the Cluster, the certificate SANs from the spec.
func kubeadmControlPlane(in component.Input) (*unstructured.Unstructured, error) {
	cp := in.Cluster.Spec.ControlPlane
	replicas := ptr.Deref(cp.Replicas, 1)
	if !slices.Contains([]int32{1, 3, 5}, replicas) {
		return nil, fmt.Errorf("TenantCluster %s/%s: spec.controlPlane.replicas is %d; a standalone control plane has 1, 3 or 5", in.Cluster.Namespace, in.Cluster.Name, replicas)
	}
	_, template := infra.Kinds(in.Provider.Spec.Provider)
	if template.Empty() {
		return nil, fmt.Errorf("ProviderConfig %s/%s: unknown provider %q", in.Provider.Namespace, in.Provider.Name, in.Provider.Spec.Provider)
	}
	kcp := &controlplanev1.KubeadmControlPlane{Spec: controlplanev1.KubeadmControlPlaneSpec{
		Replicas: ptr.To(replicas),
		Version:  in.Cluster.Spec.KubernetesVersion,
		MachineTemplate: controlplanev1.KubeadmControlPlaneMachineTemplate{
			ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{
				external.TenantClusterLabel: in.Cluster.Name,
				component.PoolLabel:         "control-plane",
			}},
			Spec: controlplanev1.KubeadmControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: template.Group, Kind: template.Kind, Name: component.ControlPlaneMachinesName(in),
				},
			},
		},
		KubeadmConfigSpec: bootstrapv1.KubeadmConfigSpec{
			ClusterConfiguration: bootstrapv1.ClusterConfiguration{
				APIServer: bootstrapv1.APIServer{CertSANs: cp.CertSANs},
			},
		},
	}}
	return component.FromTyped(in, external.KubeadmControlPlaneGVK, component.Name(in), kcp)
}

// dataStore is the DataStore a hosted control plane object names: spec.controlPlane.dataStoreRef,
// else the one the provider placed the tenant on (status.dataStoreName), once known. The real
// Steward provider writes its object's dataStoreName onto the TenantControlPlane whole, and
// Steward refuses an update that unsets the default it chose ("unsetting the dataStore is not
// supported"), so the provider could not update the TenantControlPlane again.
func dataStore(tc *v1alpha1.TenantCluster) string {
	if ref := tc.Spec.ControlPlane.DataStoreRef; ref != nil {
		return ref.Name
	}
	return tc.Status.DataStoreName
}

func components(r *v1alpha1.ControlPlaneResources) (apiServer, controllerManager, scheduler *steward.ControlPlaneComponent) {
	if r == nil {
		return nil, nil, nil
	}
	return componentResources(r.APIServer), componentResources(r.ControllerManager), componentResources(r.Scheduler)
}

func componentResources(r *v1alpha1.ComponentResources) *steward.ControlPlaneComponent {
	if r == nil || (len(r.Requests) == 0 && len(r.Limits) == 0) {
		return nil
	}
	return &steward.ControlPlaneComponent{Resources: &steward.Resources{Requests: r.Requests, Limits: r.Limits}}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// SetClusterOwner gives the control plane object the ownerReference Cluster API's Cluster
// controller sets on it: a plain (not controller) reference, as for a Cluster without a
// topology, which that controller finds exact and leaves be. The control plane provider
// waits for this reference; that controller, paced at one pass a second per object, sets it
// on its second or third pass, two seconds into every create. Without the Cluster's UID (not
// stored yet) it is left to that controller.
func SetClusterOwner(cp, cluster *unstructured.Unstructured) {
	if cluster.GetUID() == "" {
		return
	}
	cp.SetOwnerReferences(append(cp.GetOwnerReferences(), metav1.OwnerReference{
		APIVersion: external.ClusterGVK.GroupVersion().String(),
		Kind:       external.ClusterGVK.Kind,
		Name:       cluster.GetName(),
		UID:        cluster.GetUID(),
	}))
}
