package providerconfig

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/providerconfig/credentialstest"
)

func identity(gvk schema.GroupVersionKind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": fields}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestCredentialsAndIdentities: a ProviderConfig is Ready only when its Secret's keys parse as
// its provider's credentials and the identity its infrastructure cluster names exists and
// points at that Secret; every problem is named, without a secret value. No cloud is called.
func TestCredentialsAndIdentities(t *testing.T) {
	good := map[v1alpha1.ProviderType]map[string]string{}
	for _, p := range []v1alpha1.ProviderType{v1alpha1.ProviderAWS, v1alpha1.ProviderAzure, v1alpha1.ProviderGCP,
		v1alpha1.ProviderNutanix, v1alpha1.ProviderProxmox, v1alpha1.ProviderHarvester} {
		data, _, err := credentialstest.Data(string(p))
		if err != nil {
			t.Fatal(err)
		}
		good[p] = data
	}
	bad := map[v1alpha1.ProviderType]struct {
		data map[string]string
		want string
	}{
		v1alpha1.ProviderAWS:       {map[string]string{"AccessKeyID": "nope", "SecretAccessKey": "short"}, `AccessKeyID is not an AWS access key id`},
		v1alpha1.ProviderAzure:     {map[string]string{"credentials": "x"}, `key "clientSecret" is missing or empty`},
		v1alpha1.ProviderGCP:       {map[string]string{"credentials": `{"type":"service_account","project_id":"p","client_email":"e","private_key":"not pem"}`}, `private_key is not PEM`},
		v1alpha1.ProviderNutanix:   {map[string]string{"credentials": `{"username":"admin"}`}, `is not CAPX credentials`},
		v1alpha1.ProviderProxmox:   {map[string]string{"url": "http://pve", "token": "capmox", "secret": "s"}, `token is not a Proxmox API token id`},
		v1alpha1.ProviderHarvester: {map[string]string{"kubeconfig": "secret"}, `is not a kubeconfig of the Harvester cluster`},
	}
	awsID := identity(schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "AWSClusterStaticIdentity"}, "", "creds",
		map[string]any{"secretRef": "creds"})
	azureID := identity(schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "AzureClusterIdentity"}, "infra", "creds",
		map[string]any{"type": "ServicePrincipal", "clientID": "id", "clientSecret": map[string]any{"name": "creds", "namespace": "infra"}})
	wrongAzureID := identity(azureID.GroupVersionKind(), "infra", "creds", map[string]any{"type": "ServicePrincipal", "clientID": "id",
		"clientSecret": map[string]any{"name": "other", "namespace": "infra"}})
	listKinds := map[schema.GroupVersionResource]string{external.AWSClusterStaticIdentityGVR: "AWSClusterStaticIdentityList", external.AzureClusterIdentityGVR: "AzureClusterIdentityList"}

	check := func(p v1alpha1.ProviderType, data map[string]string, ids ...runtime.Object) []string {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "infra"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		c := &Controller{kube: kubefake.NewClientset(s),
			dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, ids...)}
		pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "pc", Namespace: "infra"},
			Spec: v1alpha1.ProviderConfigSpec{Provider: p, CredentialsRef: &v1alpha1.SecretKeyReference{Name: "creds"},
				AWS: &v1alpha1.AWSConfig{}, Azure: &v1alpha1.AzureConfig{}, GCP: &v1alpha1.GCPConfig{}, Nutanix: &v1alpha1.NutanixConfig{},
				Proxmox: &v1alpha1.ProxmoxConfig{}, Harvester: &v1alpha1.HarvesterConfig{}}}
		problems, _, err := c.check(context.Background(), pc)
		if err != nil {
			t.Fatal(err)
		}
		return problems
	}
	for p, data := range good {
		t.Run(string(p), func(t *testing.T) {
			if got := check(p, data, awsID.DeepCopy(), azureID.DeepCopy()); len(got) != 0 {
				t.Errorf("good credentials: %v", got)
			}
			b := bad[p]
			got := strings.Join(check(p, b.data, awsID.DeepCopy(), azureID.DeepCopy()), "; ")
			if !strings.Contains(got, "credentials Secret infra/creds") || !strings.Contains(got, b.want) {
				t.Errorf("bad credentials: %q, want %q", got, b.want)
			}
			for _, v := range b.data {
				if len(v) > 4 && strings.Contains(got, v) {
					t.Errorf("a problem repeats a secret value: %q", got)
				}
			}
		})
	}
	if got := strings.Join(check(v1alpha1.ProviderAWS, good[v1alpha1.ProviderAWS]), "; "); !strings.Contains(got, "AWSClusterStaticIdentity creds does not exist") {
		t.Errorf("AWS without its identity: %q", got)
	}
	if got := strings.Join(check(v1alpha1.ProviderAzure, good[v1alpha1.ProviderAzure]), "; "); !strings.Contains(got, "AzureClusterIdentity infra/creds does not exist") {
		t.Errorf("Azure without its identity: %q", got)
	}
	if got := strings.Join(check(v1alpha1.ProviderAzure, good[v1alpha1.ProviderAzure], wrongAzureID), "; "); !strings.Contains(got, `spec.clientSecret.name is "other", not the credentials Secret "creds"`) {
		t.Errorf("Azure identity of another Secret: %q", got)
	}
}
