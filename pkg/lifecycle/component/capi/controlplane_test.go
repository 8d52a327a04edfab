package capi_test

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/capi"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/componenttest"
)

func ptrTo[T any](v T) *T { return &v }

func get(u *unstructured.Unstructured, path ...string) string {
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !ok {
		return "<none>"
	}
	return fmt.Sprint(v)
}

func TestControlPlaneGVK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(in *component.Input)
		want   string
	}{
		{"default steward", func(*component.Input) {}, "StewardControlPlane"},
		{"no ButlerConfig", func(in *component.Input) { in.Config = nil }, "StewardControlPlane"},
		{"kamaji", func(in *component.Input) { in.Config.Spec.ControlPlaneProvider = v1alpha1.ControlPlaneProviderKamaji }, "KamajiControlPlane"},
		{"standalone wins over kamaji", func(in *component.Input) {
			in.Config.Spec.ControlPlaneProvider = v1alpha1.ControlPlaneProviderKamaji
			in.Cluster.Spec.ControlPlane.Type = v1alpha1.ControlPlaneStandalone
		}, "KubeadmControlPlane"},
	} {
		in := componenttest.Input(v1alpha1.ProviderLocal)
		tc.change(&in)
		gvk := capi.ControlPlaneGVK(in)
		cp, err := capi.ControlPlane(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, err := capi.Cluster(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if gvk.Kind != tc.want || cp.GroupVersionKind() != gvk || get(c, "spec", "controlPlaneRef", "kind") != tc.want ||
			get(c, "spec", "controlPlaneRef", "apiGroup") != external.ControlPlaneGroup || cp.GetName() != "prod" {
			t.Errorf("%s: GVK %s, object %s %s, Cluster refers to %s; want %s", tc.name, gvk, cp.GroupVersionKind(), cp.GetName(),
				get(c, "spec", "controlPlaneRef"), tc.want)
		}
	}
}

// The Cluster refers to the provider's infrastructure cluster and carries the networks.
func TestCluster(t *testing.T) {
	for _, p := range componenttest.Providers {
		in := componenttest.Input(p)
		in.Cluster.Spec.Networking = v1alpha1.NetworkingSpec{PodCIDR: "10.32.0.0/16", ServiceCIDR: "10.33.0.0/16"}
		c, err := capi.Cluster(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := get(c, "spec", "infrastructureRef", "kind"); !strings.HasSuffix(got, "Cluster") || got == "Cluster" {
			t.Errorf("%s: infrastructureRef kind %s", p, got)
		}
		if get(c, "spec", "infrastructureRef", "name") != "prod" ||
			get(c, "spec", "clusterNetwork", "pods", "cidrBlocks") != "[10.32.0.0/16]" ||
			get(c, "spec", "clusterNetwork", "services", "cidrBlocks") != "[10.33.0.0/16]" ||
			get(c, "spec", "clusterNetwork", "serviceDomain") != "cluster.local" {
			t.Errorf("%s: spec %v", p, c.Object["spec"])
		}
	}
	in := componenttest.Input("vsphere")
	if _, err := capi.Cluster(in); err == nil || !strings.Contains(err.Error(), `unknown provider "vsphere"`) {
		t.Errorf("unknown provider: %v", err)
	}
}

// Exposure: spec.controlPlane.serviceType, else ButlerConfig's mode, else LoadBalancer; Ingress
// and Gateway get the hostname <tc>.<tenant namespace>.<base> as first SAN.
func TestExposure(t *testing.T) {
	const host = "prod.prod-0a1b2c3d.k8s.example.com"
	for _, tc := range []struct {
		name    string
		change  func(in *component.Input)
		network map[string]string // path under spec.network -> value
		err     string
	}{
		{"default LoadBalancer", func(*component.Input) {}, map[string]string{"serviceType": "LoadBalancer", "ingress": "<none>", "certSANs": "<none>"}, ""},
		{"LoadBalancer keeps the cluster's SANs", func(in *component.Input) {
			in.Cluster.Spec.ControlPlane.CertSANs = []string{"api.prod.example.com"}
		}, map[string]string{"certSANs": "[api.prod.example.com]"}, ""},
		{"no ButlerConfig", func(in *component.Input) { in.Config = nil }, map[string]string{"serviceType": "LoadBalancer"}, ""},
		{"ButlerConfig Ingress", func(in *component.Input) {
			in.Config.Spec.ControlPlaneExposure.Mode = v1alpha1.ExposureIngress
			in.Cluster.Spec.ControlPlane.CertSANs = []string{host, "api.prod.example.com"}
		}, map[string]string{"serviceType": "ClusterIP", "ingress.hostname": host, "ingress.className": "haproxy",
			"certSANs": "[" + host + " api.prod.example.com]"}, ""},
		{"cluster overrides ButlerConfig", func(in *component.Input) {
			in.Config.Spec.ControlPlaneExposure.Mode = v1alpha1.ExposureIngress
			in.Cluster.Spec.ControlPlane.ServiceType = v1alpha1.ExposureLoadBalancer
		}, map[string]string{"serviceType": "LoadBalancer", "ingress": "<none>"}, ""},
		{"Gateway", func(in *component.Input) { in.Cluster.Spec.ControlPlane.ServiceType = v1alpha1.ExposureGateway },
			map[string]string{"serviceType": "ClusterIP", "gateway.hostname": host, "gateway.parentRefs": "[map[name:tenants namespace:gateways]]"}, ""},
		{"Ingress without hostname", func(in *component.Input) {
			in.Config.Spec.ControlPlaneExposure = v1alpha1.ControlPlaneExposure{Mode: v1alpha1.ExposureIngress}
		}, nil, "spec.controlPlaneExposure.hostname is required for Ingress"},
		{"Ingress without ButlerConfig", func(in *component.Input) {
			in.Config = nil
			in.Cluster.Spec.ControlPlane.ServiceType = v1alpha1.ExposureIngress
		}, nil, "spec.controlPlaneExposure.hostname is required for Ingress"},
		{"Gateway without gatewayRef", func(in *component.Input) {
			in.Config.Spec.ControlPlaneExposure.GatewayRef = nil
			in.Cluster.Spec.ControlPlane.ServiceType = v1alpha1.ExposureGateway
		}, nil, "spec.controlPlaneExposure.gatewayRef is required"},
		{"unknown mode", func(in *component.Input) { in.Cluster.Spec.ControlPlane.ServiceType = "NodePort" }, nil, `unknown control plane exposure "NodePort"`},
	} {
		for _, provider := range []v1alpha1.ControlPlaneProvider{v1alpha1.ControlPlaneProviderSteward, v1alpha1.ControlPlaneProviderKamaji} {
			t.Run(string(provider)+"/"+tc.name, func(t *testing.T) {
				in := componenttest.Input(v1alpha1.ProviderLocal)
				in.Config.Spec.ControlPlaneProvider = provider
				tc.change(&in)
				cp, err := capi.ControlPlane(in)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("error %v, want %q", err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				for path, want := range tc.network {
					if provider == v1alpha1.ControlPlaneProviderKamaji && strings.HasPrefix(path, "gateway.parentRefs") {
						path, want = "gateway.name", "tenants"
					}
					if got := get(cp, append([]string{"spec", "network"}, strings.Split(path, ".")...)...); got != want {
						t.Errorf("spec.network.%s = %s, want %s", path, got, want)
					}
				}
			})
		}
	}
	in := componenttest.Input(v1alpha1.ProviderLocal)
	in.Config.Spec.ControlPlaneProvider = v1alpha1.ControlPlaneProviderKamaji
	in.Config.Spec.ControlPlaneExposure.GatewayRef.Namespace = ""
	in.Cluster.Spec.ControlPlane.ServiceType = v1alpha1.ExposureGateway
	if _, err := capi.ControlPlane(in); err == nil || !strings.Contains(err.Error(), "gatewayRef.namespace is required") {
		t.Errorf("Kamaji Gateway without a namespace: %v", err)
	}
}

// A hosted control plane takes the version, replicas, data store and resources of the spec; a
// version change changes only spec.version (the provider rolls it).
func TestHostedSpec(t *testing.T) {
	for _, provider := range []v1alpha1.ControlPlaneProvider{v1alpha1.ControlPlaneProviderSteward, v1alpha1.ControlPlaneProviderKamaji} {
		in := componenttest.Input(v1alpha1.ProviderLocal)
		in.Config.Spec.ControlPlaneProvider = provider
		cp := &in.Cluster.Spec.ControlPlane
		cp.Replicas = ptrTo[int32](3)
		cp.DataStoreRef = &v1alpha1.LocalObjectReference{Name: "etcd-shared"}
		cp.Resources = &v1alpha1.ControlPlaneResources{
			APIServer: &v1alpha1.ComponentResources{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
			Scheduler: &v1alpha1.ComponentResources{},
		}
		before, err := capi.ControlPlane(in)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{
			"version": "v1.36.3", "replicas": "3", "dataStoreName": "etcd-shared",
			"apiServer.resources.requests.cpu": "500m", "apiServer.resources.limits.memory": "1Gi",
			"scheduler": "<none>", "controllerManager": "<none>",
		} {
			if got := get(before, append([]string{"spec"}, strings.Split(path, ".")...)...); got != want {
				t.Errorf("%s: spec.%s = %s, want %s", provider, path, got, want)
			}
		}
		in.Cluster.Spec.KubernetesVersion = "v1.37.0"
		after, err := capi.ControlPlane(in)
		if err != nil {
			t.Fatal(err)
		}
		if get(after, "spec", "version") != "v1.37.0" {
			t.Errorf("%s: version %s after the upgrade", provider, get(after, "spec", "version"))
		}
		unstructured.RemoveNestedField(before.Object, "spec", "version")
		unstructured.RemoveNestedField(after.Object, "spec", "version")
		if fmt.Sprint(before.Object) != fmt.Sprint(after.Object) {
			t.Errorf("%s: an upgrade changed more than spec.version", provider)
		}
	}
}

// A Steward tenant's kube-apiserver reads external.PodSecurityAdmission, as a local tenant's does:
// the file its flag names is, through the StewardControlPlane's mount and downwardAPI volume,
// the annotation its Pods get. Resolved here as Steward builds the Pod.
func TestHostedPodSecurity(t *testing.T) {
	in := componenttest.Input(v1alpha1.ProviderLocal)
	u, err := capi.ControlPlane(in)
	if err != nil {
		t.Fatal(err)
	}
	scp, err := external.FromUnstructured[steward.StewardControlPlane](u)
	if err != nil {
		t.Fatal(err)
	}
	api, deploy := ptrDeref(scp.Spec.APIServer), ptrDeref(scp.Spec.Deployment)
	var file string
	for _, a := range api.ExtraArgs {
		if v, ok := strings.CutPrefix(a, "--admission-control-config-file="); ok {
			file = v
		}
	}
	if file == "" {
		t.Fatalf("apiServer.extraArgs %v name no admission configuration", api.ExtraArgs)
	}
	var volume string
	for _, m := range api.ExtraVolumeMounts {
		if m.MountPath == path.Dir(file) {
			volume = m.Name
		}
	}
	var key string
	for _, v := range deploy.ExtraVolumes {
		if v.Name != volume || v.DownwardAPI == nil {
			continue
		}
		for _, item := range v.DownwardAPI.Items {
			if item.Path == path.Base(file) && item.FieldRef != nil {
				key = strings.TrimSuffix(strings.TrimPrefix(item.FieldRef.FieldPath, "metadata.annotations['"), "']")
			}
		}
	}
	var annotations map[string]string
	if deploy.PodAdditionalMetadata != nil {
		annotations = deploy.PodAdditionalMetadata.Annotations
	}
	if got := annotations[key]; key == "" || got != external.PodSecurityAdmission {
		t.Fatalf("%s is, through mount %q and annotation %q, %q; want external.PodSecurityAdmission", file, volume, key, got)
	}
	if !strings.Contains(external.PodSecurityAdmission, "enforce: baseline") {
		t.Errorf("external.PodSecurityAdmission enforces no baseline:\n%s", external.PodSecurityAdmission)
	}
}

func ptrDeref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Without a dataStoreRef the object names the DataStore the provider placed the tenant on, once
// the status says which: Steward refuses a TenantControlPlane update that unsets its dataStore.
func TestHostedDataStoreStaysNamed(t *testing.T) {
	for _, provider := range []v1alpha1.ControlPlaneProvider{v1alpha1.ControlPlaneProviderSteward, v1alpha1.ControlPlaneProviderKamaji} {
		in := componenttest.Input(v1alpha1.ProviderLocal)
		in.Config.Spec.ControlPlaneProvider = provider
		for placed, want := range map[string]string{"": "<none>", "steward-etcd": "steward-etcd"} {
			in.Cluster.Status.DataStoreName = placed
			cp, err := capi.ControlPlane(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := get(cp, "spec", "dataStoreName"); got != want {
				t.Errorf("%s, placed on %q: spec.dataStoreName = %s, want %s", provider, placed, got, want)
			}
		}
	}
}

func TestKubeadmControlPlane(t *testing.T) {
	for _, replicas := range []int32{1, 2, 3, 4, 5, 7} {
		in := componenttest.Input(v1alpha1.ProviderProxmox)
		in.Cluster.Spec.ControlPlane.Type = v1alpha1.ControlPlaneStandalone
		in.Cluster.Spec.ControlPlane.Replicas = ptrTo(replicas)
		in.Cluster.Spec.ControlPlane.CertSANs = []string{"api.prod.example.com"}
		kcp, err := capi.ControlPlane(in)
		valid := slices.Contains([]int32{1, 3, 5}, replicas)
		if !valid {
			if err == nil || !strings.Contains(err.Error(), "spec.controlPlane.replicas is") {
				t.Errorf("replicas %d: error %v, want one about 1, 3 or 5", replicas, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{
			"replicas": fmt.Sprint(replicas),
			"version":  "v1.36.3",
			"machineTemplate.spec.infrastructureRef.kind":               "ProxmoxMachineTemplate",
			"machineTemplate.spec.infrastructureRef.name":               "prod-control-plane",
			"kubeadmConfigSpec.clusterConfiguration.apiServer.certSANs": "[api.prod.example.com]",
		} {
			if got := get(kcp, append([]string{"spec"}, strings.Split(path, ".")...)...); got != want {
				t.Errorf("replicas %d: spec.%s = %s, want %s", replicas, path, got, want)
			}
		}
	}
}

// A rotation in the cluster's status asks the hosted control plane's provider for its phase
// (external.CredentialsRotationAnnotation): Preparing until it completes, then Completing, with
// the rotation's start as its id; no rotation, no annotation.
func TestRotationAnnotation(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC))
	for _, provider := range []v1alpha1.ControlPlaneProvider{v1alpha1.ControlPlaneProviderSteward, v1alpha1.ControlPlaneProviderKamaji} {
		for phase, want := range map[v1alpha1.CredentialsRotationPhase]string{
			"":                          "",
			v1alpha1.RotationPreparing:  "Preparing/2026-11-25T21:00:00Z",
			v1alpha1.RotationPrepared:   "Preparing/2026-11-25T21:00:00Z",
			v1alpha1.RotationCompleting: "Completing/2026-11-25T21:00:00Z",
			v1alpha1.RotationCompleted:  "Completing/2026-11-25T21:00:00Z",
		} {
			in := componenttest.Input(v1alpha1.ProviderLocal)
			in.Config.Spec.ControlPlaneProvider = provider
			if phase != "" {
				in.Cluster.Status.Credentials = &v1alpha1.TenantCredentialsStatus{
					Rotation: &v1alpha1.CredentialsRotation{Phase: phase, LastInitiationTime: &started}}
			}
			cp, err := capi.ControlPlane(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := cp.GetAnnotations()[external.CredentialsRotationAnnotation]; got != want {
				t.Errorf("%s, rotation %q: annotation %q, want %q", provider, phase, got, want)
			}
		}
	}
}
