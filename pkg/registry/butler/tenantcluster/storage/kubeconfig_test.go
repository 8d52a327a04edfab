package storage

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// clusterGetter serves one TenantCluster, as the main store would.
type clusterGetter struct{ cluster *butler.TenantCluster }

func (g clusterGetter) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if g.cluster == nil || g.cluster.Name != name {
		return nil, apierrors.NewNotFound(butler.Resource("tenantclusters"), name)
	}
	return g.cluster.DeepCopy(), nil
}

// kubeconfigWithCert is a kubeconfig whose client certificate expires at notAfter.
func kubeconfigWithCert(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["prod"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	cfg.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "admin"}
	cfg.CurrentContext = "prod"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestKubeconfigREST(t *testing.T) {
	notAfter := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
	kubeconfig := kubeconfigWithCert(t, notAfter)
	ready := &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a"},
		Status: butler.TenantClusterStatus{Phase: "Ready",
			KubeconfigSecretRef: &butler.LocalObjectReference{Name: "prod-admin-kubeconfig"}},
	}
	provisioning := &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a"},
		Status:     butler.TenantClusterStatus{Phase: "Provisioning"},
	}
	secret := func(key string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "team-a"},
			Data: map[string][]byte{key: kubeconfig}}
	}

	cases := []struct {
		name       string
		cluster    *butler.TenantCluster
		secrets    []runtime.Object
		standalone bool
		request    butler.KubeconfigRequest
		wantCode   int32
		wantInErr  string
		wantWarn   string
	}{
		{name: "Steward admin.conf", cluster: ready, secrets: []runtime.Object{secret("admin.conf")}},
		{name: "Cluster API value key", cluster: ready, secrets: []runtime.Object{secret("value")}},
		{name: "no ref yet", cluster: provisioning, wantCode: http.StatusConflict,
			wantInErr: "has no kubeconfig yet (phase Provisioning)"},
		{name: "unknown cluster", cluster: nil, wantCode: http.StatusNotFound},
		{name: "secret missing", cluster: ready, wantCode: http.StatusConflict,
			wantInErr: "team-a/prod-admin-kubeconfig named by status.kubeconfigSecretRef does not exist"},
		{name: "secret without a known key", cluster: ready, secrets: []runtime.Object{secret("other")},
			wantCode: http.StatusConflict, wantInErr: `holds none of the keys ["admin.conf" "value" "kubeconfig"]`},
		{name: "standalone", cluster: ready, standalone: true, wantCode: http.StatusServiceUnavailable,
			wantInErr: "runs standalone"},
		{name: "expiration too short", cluster: ready, secrets: []runtime.Object{secret("admin.conf")},
			request:  butler.KubeconfigRequest{Spec: butler.KubeconfigRequestSpec{ExpirationSeconds: ptr.To[int64](60)}},
			wantCode: http.StatusUnprocessableEntity, wantInErr: "spec.expirationSeconds: Invalid value: 60"},
		{name: "credential outlives the asked expiration", cluster: ready, secrets: []runtime.Object{secret("admin.conf")},
			request:  butler.KubeconfigRequest{Spec: butler.KubeconfigRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
			wantWarn: "later than the 3600 seconds asked for"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewKubeconfigREST(clusterGetter{tc.cluster}, fake.NewClientset(tc.secrets...).CoreV1())
			if tc.standalone {
				r = NewKubeconfigREST(clusterGetter{tc.cluster}, nil)
			}
			warnings := &recordedWarnings{}
			ctx := warning.WithWarningRecorder(
				genericapirequest.WithNamespace(context.Background(), "team-a"), warnings)
			req := tc.request.DeepCopy()
			out, err := r.Create(ctx, "prod", req, nil, &metav1.CreateOptions{})
			if tc.wantCode != 0 {
				status, ok := err.(apierrors.APIStatus)
				if !ok {
					t.Fatalf("want a %d API error, got %v", tc.wantCode, err)
				}
				if got := status.Status().Code; got != tc.wantCode {
					t.Fatalf("code %d, want %d: %v", got, tc.wantCode, err)
				}
				if !strings.Contains(err.Error(), tc.wantInErr) {
					t.Fatalf("error %q does not say %q", err, tc.wantInErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*butler.KubeconfigRequest)
			if string(got.Status.Kubeconfig) != string(kubeconfig) {
				t.Errorf("kubeconfig differs from the Secret's")
			}
			if !got.Status.ExpirationTimestamp.Time.Equal(notAfter) {
				t.Errorf("expirationTimestamp %v, want the certificate's %v", got.Status.ExpirationTimestamp, notAfter)
			}
			if got.Name != "prod" || got.Namespace != "team-a" {
				t.Errorf("answer is for %s/%s, want team-a/prod", got.Namespace, got.Name)
			}
			if tc.wantWarn == "" && len(warnings.texts) > 0 {
				t.Errorf("unexpected warnings %q", warnings.texts)
			}
			if tc.wantWarn != "" && (len(warnings.texts) != 1 || !strings.Contains(warnings.texts[0], tc.wantWarn)) {
				t.Errorf("warnings %q, want one saying %q", warnings.texts, tc.wantWarn)
			}
		})
	}
}

type recordedWarnings struct{ texts []string }

func (w *recordedWarnings) AddWarning(_, text string) { w.texts = append(w.texts, text) }
