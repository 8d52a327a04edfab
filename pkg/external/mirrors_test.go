package external_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/kamaji"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

func ptrTo[T any](v T) *T { return &v }

// object is a mirror with every field set, as an object of a kind.
func object(t *testing.T, gvk schema.GroupVersionKind, spec any, status any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetName("prod")
	u.SetNamespace("prod-0a1b2c3d")
	for k, v := range map[string]any{"spec": spec, "status": status} {
		if v == nil {
			continue
		}
		if m, ok := v.(map[string]any); ok {
			u.Object[k] = m
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
		if err != nil {
			t.Fatal(err)
		}
		u.Object[k] = m
	}
	return u
}

// The mirrors' field names are the CRDs': an object with every mirrored field set loses none of
// them to pruning and passes the schema.
func TestMirrorsMatchTheCRDs(t *testing.T) {
	set := load(t)
	resources := &steward.ControlPlaneComponent{Resources: &steward.Resources{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}}
	tcp := steward.TenantControlPlane{Status: steward.TenantControlPlaneStatus{
		ControlPlaneEndpoint: "10.0.0.100:6443",
		Kubeconfig: steward.KubeconfigsStatus{
			Admin:             steward.KubeconfigStatus{SecretName: "prod-admin-kubeconfig", Checksum: "x"},
			ControllerManager: steward.KubeconfigStatus{SecretName: "prod-controller-manager-kubeconfig"},
			Scheduler:         steward.KubeconfigStatus{SecretName: "prod-scheduler-kubeconfig"},
		},
		KubernetesResources: steward.KubernetesResources{Version: steward.KubernetesVersion{Version: "v1.36.3", Status: "Ready"}},
	}}
	tcp.Spec.Kubernetes.Version = "v1.36.3"
	// The spec the local provider runs, with the service type the CRD requires beside it.
	tcpRead := steward.TenantControlPlaneSpec{
		Kubernetes: steward.KubernetesSpec{Version: "v1.36.3", AdmissionControllers: []string{"NodeRestriction"},
			Kubelet: steward.KubeletSpec{Cgroupfs: "systemd"}},
		NetworkProfile: steward.NetworkProfileSpec{Address: "10.0.0.5", Port: 6443, CertSANs: []string{"a.example.com"},
			ServiceCIDR: "10.96.0.0/16", PodCIDR: "10.244.0.0/16", ClusterDomain: "cluster.local", DNSServiceIPs: []string{"10.96.0.10"}},
		ControlPlane: steward.ControlPlaneSpec{Deployment: steward.DeploymentSpec{Replicas: ptrTo[int32](1),
			ExtraArgs: steward.ExtraArgs{APIServer: []string{"--v=2"}, ControllerManager: []string{"--v=2"}, Scheduler: []string{"--v=2"}}}},
		DataStore: "default", DataStoreSchema: "prod", DataStoreUsername: "prod",
	}
	tcpSpec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tcpRead)
	if err != nil {
		t.Fatal(err)
	}
	tcpSpec["controlPlane"].(map[string]any)["service"] = map[string]any{"serviceType": "LoadBalancer"}
	tcpStatus := tcp.Status
	tcpStatus.Storage = &steward.StorageStatus{DataStoreName: "default", Setup: &steward.StorageSetup{Schema: "prod", User: "prod"}}
	conditions := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	// The identity's required fields butler does not read, beside the mirror's.
	azureIdentity, err := runtime.DefaultUnstructuredConverter.ToUnstructured(
		&external.AzureClusterIdentitySpec{ClientSecret: external.SecretReference{Name: "azure-creds", Namespace: "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	azureIdentity["type"], azureIdentity["clientID"] = "ServicePrincipal", "00000000-0000-0000-0000-000000000000"
	bootstrapSpec := external.BootstrapConfigSpec{
		OS: external.BootstrapOS{Type: "talos", Version: "v1.9"}, NodeLabels: map[string]string{"a": "b"},
		NodeTaints: []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}},
		ClusterDNS: "10.96.0.10", ClusterDomain: "cluster.local", PodCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/16",
		TokenTTL: "15m",
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
	}{
		{"TenantControlPlane", object(t, external.TenantControlPlaneGVK, map[string]any{
			"controlPlane": map[string]any{"service": map[string]any{"serviceType": "LoadBalancer"}},
			"kubernetes":   map[string]any{"version": tcp.Spec.Kubernetes.Version, "kubelet": map[string]any{"cgroupfs": "systemd"}},
		}, &tcp.Status)},
		{"TenantControlPlane as the local provider reads it", object(t, external.TenantControlPlaneGVK, tcpSpec, &tcpStatus)},
		{"DataStore", object(t, external.DataStoreGVK, &steward.DataStoreSpec{
			Driver: "etcd", Endpoints: []string{"127.0.0.1:2379"},
			TLSConfig: &steward.DataStoreTLSConfig{
				CertificateAuthority: &steward.CertKeyPair{
					Certificate: &steward.ContentRef{Content: []byte("ca")},
					PrivateKey:  &steward.ContentRef{SecretReference: &steward.KeySecretReference{Name: "ds", Namespace: "kube-system", KeyPath: "ca.key"}},
				},
				ClientCertificate: &steward.CertKeyPair{
					Certificate: &steward.ContentRef{SecretReference: &steward.KeySecretReference{Name: "ds", Namespace: "kube-system", KeyPath: "tls.crt"}},
					PrivateKey:  &steward.ContentRef{SecretReference: &steward.KeySecretReference{Name: "ds", Namespace: "kube-system", KeyPath: "tls.key"}},
				},
			},
		}, nil)},
		{"StewardControlPlane as the local provider reads it", object(t, external.StewardControlPlaneGVK, &steward.StewardControlPlaneSpec{
			Version: "v1.36.3", DataStoreName: "default", DataStoreSchema: "prod", DataStoreUsername: "prod",
			Network: &steward.NetworkComponent{ServiceType: "ClusterIP", ServiceAddress: "10.0.0.5", DNSServiceIPs: []string{"10.96.0.10"}},
			Addons:  &steward.AddonsSpec{CoreDNS: &steward.CoreDNSAddon{DNSServiceIPs: []string{"10.96.0.10"}}},
		}, nil)},
		{"StewardControlPlane", object(t, external.StewardControlPlaneGVK, &steward.StewardControlPlaneSpec{
			Version: "v1.36.3", Replicas: ptrTo[int32](2), DataStoreName: "default",
			APIServer: resources, ControllerManager: resources, Scheduler: resources,
			Network: &steward.NetworkComponent{ServiceType: "ClusterIP", CertSANs: []string{"a.example.com"},
				Gateway: &steward.GatewayComponent{Hostname: "a.example.com", ParentRefs: []steward.ParentReference{{Name: "gw", Namespace: "gws"}}}},
		}, nil)},
		{"StewardControlPlane ingress", object(t, external.StewardControlPlaneGVK, &steward.StewardControlPlaneSpec{
			Version: "v1.36.3", Network: &steward.NetworkComponent{ServiceType: "ClusterIP",
				Ingress: &steward.IngressComponent{Hostname: "a.example.com", ClassName: "haproxy"}},
		}, nil)},
		{"KamajiControlPlane", object(t, external.KamajiControlPlaneGVK, &kamaji.KamajiControlPlaneSpec{
			Version: "v1.36.3", Replicas: ptrTo[int32](2), DataStoreName: "default",
			APIServer: resources, ControllerManager: resources, Scheduler: resources,
			Network: &kamaji.NetworkComponent{ServiceType: "ClusterIP", CertSANs: []string{"a.example.com"},
				Ingress: &kamaji.IngressComponent{Hostname: "a.example.com", ClassName: "nginx"},
				Gateway: &kamaji.GatewayComponent{Hostname: "a.example.com", Name: "gw", Namespace: "gws"}},
		}, nil)},
		{"BootstrapConfig", object(t, external.BootstrapConfigGVK, &bootstrapSpec, &external.BootstrapConfigStatus{
			Initialization: &external.BootstrapInitialization{DataSecretCreated: ptrTo(true)},
			DataSecretName: ptrTo("prod-workers-x"), Phase: "Ready", ObservedGeneration: 1, Conditions: conditions,
		})},
		{"BootstrapConfigTemplate", object(t, external.BootstrapConfigTemplateGVK,
			&external.BootstrapConfigTemplateSpec{Template: external.BootstrapConfigTemplateResource{Spec: bootstrapSpec}}, nil)},
		{"LocalCluster", object(t, external.LocalClusterGVK,
			&external.InfrastructureClusterSpec{ControlPlaneEndpoint: external.APIEndpoint{Host: "127.0.0.1", Port: 36001}},
			&external.LocalClusterStatus{Initialization: &external.InfrastructureInitialization{Provisioned: ptrTo(true)}, Conditions: conditions})},
		{"LocalMachine", object(t, external.LocalMachineGVK, &external.InfrastructureMachineSpec{ProviderID: "local://prod-0a1b2c3d/m"},
			&external.LocalMachineStatus{
				Initialization: &external.InfrastructureInitialization{Provisioned: ptrTo(true)},
				Addresses:      []external.MachineAddress{{Type: "Hostname", Address: "m"}},
				NodeName:       "m", Phase: "Running", Conditions: conditions,
			})},
		{"AWSClusterStaticIdentity", object(t, external.AWSClusterStaticIdentityGVK,
			&external.AWSClusterStaticIdentitySpec{SecretRef: "aws-creds"}, nil)},
		{"AzureClusterIdentity", object(t, external.AzureClusterIdentityGVK, azureIdentity, nil)},
	} {
		if errs := set.Validate(tc.obj); len(errs) > 0 {
			t.Errorf("%s: %v", tc.name, errs.ToAggregate())
		}
	}
}
