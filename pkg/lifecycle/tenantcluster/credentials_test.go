package tenantcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// The credentials step reads when the cluster CA and the admin kubeconfig's certificate expire,
// and leaves out what a provider does not make.
func TestEnsureCredentialsReadsExpiry(t *testing.T) {
	ctx := context.Background()
	ca, err := pki.NewCA("prod")
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	admin, err := ca.Issue(pki.Request{CommonName: "kubernetes-admin", Usage: pki.ClientAuth, NotAfter: until})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := pki.Kubeconfig("prod", "https://127.0.0.1:1", ca.CertPEM, "kubernetes-admin", admin)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "tenant-ns"},
		Data: map[string][]byte{"admin.conf": kubeconfig}})
	c := &Controller{kube: kube}
	s := &state{tc: &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a"}}, namespace: "tenant-ns"}
	if r, err := c.ensureCredentials(ctx, s); err != nil || r.Done {
		t.Fatalf("before the kubeconfig: %+v, %v", r, err)
	}
	s.kubeconfigSecret = "prod-admin-kubeconfig"
	if r, err := c.ensureCredentials(ctx, s); err != nil || !r.Done || len(s.credentials) != 1 ||
		s.credentials[0].Name != credentialAdminKubeconfig || !s.credentials[0].NotAfter.Time.Equal(until) {
		t.Fatalf("without a CA Secret: %+v, %v, %+v", r, err, s.credentials)
	}
	if _, err := kube.CoreV1().Secrets("tenant-ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-ca", Namespace: "tenant-ns"},
		Data: map[string][]byte{"tls.crt": ca.CertPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	caUntil, _ := pki.NotAfter(ca.CertPEM)
	if r, err := c.ensureCredentials(ctx, s); err != nil || !r.Done || len(s.credentials) != 2 ||
		s.credentials[0].Name != credentialCA || !s.credentials[0].NotAfter.Time.Equal(caUntil) {
		t.Fatalf("with the CA Secret: %+v, %v, %+v", r, err, s.credentials)
	}
}
