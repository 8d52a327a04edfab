package storage

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
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
	kubeconfig := kubeconfigWithCert(t, time.Now().Add(365*24*time.Hour))
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
	certPEM, keyPEM, _ := tenantCA(t)
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-ca", Namespace: "team-a"},
		Data: map[string][]byte{"ca.crt": certPEM, "ca.key": keyPEM}}

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
		{name: "Steward admin.conf", cluster: ready, secrets: []runtime.Object{secret("admin.conf"), ca}},
		{name: "Cluster API value key", cluster: ready, secrets: []runtime.Object{secret("value"), ca}},
		{name: "no tenant CA: never the stored admin credential", cluster: ready, secrets: []runtime.Object{secret("admin.conf")},
			wantCode: http.StatusConflict, wantInErr: "team-a/prod-ca holds no CA certificate and key"},
		{name: "no ref yet", cluster: provisioning, wantCode: http.StatusConflict,
			wantInErr: "has no kubeconfig yet (phase Provisioning)"},
		{name: "unknown cluster", cluster: nil, wantCode: http.StatusNotFound},
		{name: "secret missing", cluster: ready, wantCode: http.StatusConflict,
			wantInErr: "team-a/prod-admin-kubeconfig named by status.kubeconfigSecretRef does not exist"},
		{name: "secret without a known key", cluster: ready, secrets: []runtime.Object{secret("other")},
			wantCode: http.StatusConflict, wantInErr: `holds none of the keys ["admin.conf" "value" "kubeconfig"]`},
		{name: "standalone", cluster: ready, standalone: true, wantCode: http.StatusServiceUnavailable,
			wantInErr: "runs standalone"},
		{name: "expiration too short", cluster: ready, secrets: []runtime.Object{secret("admin.conf"), ca},
			request:  butler.KubeconfigRequest{Spec: butler.KubeconfigRequestSpec{ExpirationSeconds: ptr.To[int64](60)}},
			wantCode: http.StatusUnprocessableEntity, wantInErr: "spec.expirationSeconds: Invalid value: 60"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewKubeconfigREST(clusterGetter{tc.cluster}, nil, fake.NewClientset(tc.secrets...).CoreV1(), 0, false)
			if tc.standalone {
				r = NewKubeconfigREST(clusterGetter{tc.cluster}, nil, nil, 0, false)
			}
			warnings := &recordedWarnings{}
			ctx := genericapirequest.WithUser(warning.WithWarningRecorder(
				genericapirequest.WithNamespace(context.Background(), "team-a"), warnings), &user.DefaultInfo{Name: "root"})
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
			if string(got.Status.Kubeconfig) == string(kubeconfig) {
				t.Errorf("the stored admin kubeconfig was handed out")
			}
			if got.Status.User != "butler:root" || got.Status.ExpirationTimestamp.IsZero() {
				t.Errorf("identity %q expiry %v", got.Status.User, got.Status.ExpirationTimestamp)
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

// tenantCA is a self-signed CA as Steward keeps it in <tcp>-ca.
func tenantCA(t *testing.T) (certPEM, keyPEM []byte, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), cert
}

func TestKubeconfigRESTMintsForTheRequester(t *testing.T) {
	stored := kubeconfigWithCert(t, time.Now().Add(365*24*time.Hour))
	certPEM, keyPEM, ca := tenantCA(t)
	cluster := &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a"},
		Status: butler.TenantClusterStatus{Phase: "Ready", TenantNamespace: "prod-1234abcd",
			KubeconfigSecretRef: &butler.LocalObjectReference{Name: "prod-admin-kubeconfig"}},
	}
	for _, tc := range []struct {
		name    string
		caData  map[string][]byte
		seconds *int64
		want    time.Duration
		warn    string
	}{
		{name: "Steward ca.crt/ca.key, default hour", caData: map[string][]byte{"ca.crt": certPEM, "ca.key": keyPEM}, want: time.Hour},
		{name: "CAPI tls.crt/tls.key, 10 minutes", caData: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}, seconds: ptr.To[int64](600), want: 10 * time.Minute},
		{name: "capped at the flag", caData: map[string][]byte{"ca.crt": certPEM, "ca.key": keyPEM}, seconds: ptr.To[int64](7 * 24 * 3600), want: 2 * time.Hour, warn: "capped at 7200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := fake.NewClientset(
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "prod-1234abcd"}, Data: map[string][]byte{"admin.conf": stored}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-ca", Namespace: "prod-1234abcd"}, Data: tc.caData})
			r := NewKubeconfigREST(clusterGetter{cluster}, nil, secrets.CoreV1(), 2*time.Hour, false)
			now := time.Now().Truncate(time.Second)
			r.now = func() time.Time { return now }
			warnings := &recordedWarnings{}
			ctx := genericapirequest.WithUser(warning.WithWarningRecorder(
				genericapirequest.WithNamespace(context.Background(), "team-a"), warnings),
				&user.DefaultInfo{Name: "alice", Groups: []string{"team-a-admins"}})
			out, err := r.Create(ctx, "prod", &butler.KubeconfigRequest{Spec: butler.KubeconfigRequestSpec{ExpirationSeconds: tc.seconds}}, nil, &metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*butler.KubeconfigRequest)
			cfg, err := clientcmd.Load(got.Status.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			kctx := cfg.Contexts[cfg.CurrentContext]
			if cfg.Clusters[kctx.Cluster].Server != "https://prod.example:6443" {
				t.Errorf("server %q, want the stored one", cfg.Clusters[kctx.Cluster].Server)
			}
			auth := cfg.AuthInfos[kctx.AuthInfo]
			block, _ := pem.Decode(auth.ClientCertificateData)
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if err := cert.CheckSignatureFrom(ca); err != nil {
				t.Errorf("not signed by the tenant CA: %v", err)
			}
			// A cluster no Team owns: the platform admins' identity, never system:masters.
			if cert.Subject.CommonName != "butler:alice" || !slices.Equal(cert.Subject.Organization, []string{"butler:platform-admins"}) {
				t.Errorf("subject %v, want CN butler:alice O butler:platform-admins", cert.Subject)
			}
			if !cert.NotAfter.Equal(now.Add(tc.want)) || !got.Status.ExpirationTimestamp.Time.Equal(cert.NotAfter) {
				t.Errorf("notAfter %v expiration %v, want %v", cert.NotAfter, got.Status.ExpirationTimestamp, now.Add(tc.want))
			}
			if _, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData); err != nil {
				t.Errorf("key does not match the certificate: %v", err)
			}
			if (tc.warn == "") != (len(warnings.texts) == 0) || (tc.warn != "" && !strings.Contains(warnings.texts[0], tc.warn)) {
				t.Errorf("warnings %q, want %q", warnings.texts, tc.warn)
			}
		})
	}
}

// teamGetter serves one Team.
type teamGetter struct{ team *butler.Team }

func (g teamGetter) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if g.team == nil || g.team.Name != name {
		return nil, apierrors.NewNotFound(butler.Resource("teams"), name)
	}
	return g.team.DeepCopy(), nil
}

// teamCluster is Team team-a's Ready cluster prod and the Secrets of its tenant namespace (the
// admin kubeconfig and the CA that signs members' certificates).
func teamCluster(t *testing.T) (*butler.TenantCluster, corev1client.CoreV1Interface) {
	stored := kubeconfigWithCert(t, time.Now().Add(time.Hour))
	certPEM, keyPEM, _ := tenantCA(t)
	cluster := &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a"},
		Status: butler.TenantClusterStatus{Phase: "Ready", TenantNamespace: "prod-1234abcd",
			KubeconfigSecretRef: &butler.LocalObjectReference{Name: "prod-admin-kubeconfig"}},
	}
	secrets := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "prod-1234abcd"}, Data: map[string][]byte{"admin.conf": stored}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-ca", Namespace: "prod-1234abcd"}, Data: map[string][]byte{"ca.crt": certPEM, "ca.key": keyPEM}}).CoreV1()
	return cluster, secrets
}

// A Team's cluster: members get their identity (prefixed names, the Team's groups they are in,
// no role), a viewer only a read-only one, and anyone else a 403.
func TestKubeconfigRESTTeamMembers(t *testing.T) {
	team := &butler.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: butler.TeamSpec{Access: butler.TeamAccess{
		Users:  []butler.TeamMember{{Name: "alice", Role: "admin"}, {Name: "vera", Role: "viewer"}},
		Groups: []butler.TeamMember{{Name: "ops", Role: "operator"}},
	}}}
	cluster, secrets := teamCluster(t)
	for _, tc := range []struct {
		name       string
		who        user.Info
		readOnly   bool
		wantCode   int32
		wantUser   string
		wantGroups []string
	}{
		{name: "admin", who: &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated", "system:masters"}}, wantUser: "butler:alice"},
		{name: "operator by group", who: &user.DefaultInfo{Name: "otto", Groups: []string{"ops", "other"}}, wantUser: "butler:otto", wantGroups: []string{"butler:group:ops"}},
		{name: "viewer asks for more", who: &user.DefaultInfo{Name: "vera"}, wantCode: http.StatusForbidden},
		{name: "viewer read-only", who: &user.DefaultInfo{Name: "vera"}, readOnly: true, wantUser: "butler:vera:readonly"},
		{name: "admin read-only", who: &user.DefaultInfo{Name: "alice"}, readOnly: true, wantUser: "butler:alice:readonly"},
		{name: "outsider", who: &user.DefaultInfo{Name: "mallory", Groups: []string{"system:masters"}}, wantCode: http.StatusForbidden},
		{name: "outsider read-only", who: &user.DefaultInfo{Name: "mallory"}, readOnly: true, wantCode: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewKubeconfigREST(clusterGetter{cluster}, teamGetter{team}, secrets, 0, tc.readOnly)
			ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "team-a"), tc.who)
			out, err := r.Create(ctx, "prod", &butler.KubeconfigRequest{}, nil, &metav1.CreateOptions{})
			if tc.wantCode != 0 {
				if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tc.wantCode {
					t.Fatalf("got %v, want a %d", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*butler.KubeconfigRequest)
			cfg, _ := clientcmd.Load(got.Status.Kubeconfig)
			block, _ := pem.Decode(cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientCertificateData)
			cert, _ := x509.ParseCertificate(block.Bytes)
			if cert.Subject.CommonName != tc.wantUser || !slices.Equal(cert.Subject.Organization, tc.wantGroups) {
				t.Errorf("subject %v, want CN %s O %v", cert.Subject, tc.wantUser, tc.wantGroups)
			}
			if got.Status.User != tc.wantUser || !slices.Equal(got.Status.Groups, tc.wantGroups) {
				t.Errorf("status says %s %v", got.Status.User, got.Status.Groups)
			}
		})
	}
}

// A Team lists a member whose management user name is platform-admin:<x> (or ends in
// :readonly): the kubeconfig said butler:platform-admin:<x>, the break-glass name, so the
// tenant's audit log showed a Team member's acts as the platform's break-glass entry (or
// butler:<y>:readonly, another member's read-only name). Such names get no kubeconfig.
func TestAttackMemberNamedLikeBreakGlass(t *testing.T) {
	team := &butler.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: butler.TeamSpec{Access: butler.TeamAccess{
		Users: []butler.TeamMember{{Name: "platform-admin:pat", Role: "admin"}, {Name: "vera:readonly", Role: "admin"}},
	}}}
	cluster, secrets := teamCluster(t)
	for _, name := range []string{"platform-admin:pat", "vera:readonly"} {
		r := NewKubeconfigREST(clusterGetter{cluster}, teamGetter{team}, secrets, 0, false)
		ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "team-a"), &user.DefaultInfo{Name: name})
		_, err := r.Create(ctx, "prod", &butler.KubeconfigRequest{}, nil, &metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "kept for") {
			t.Errorf("%s: %v, want a 403 saying the name is kept for butler's own identities", name, err)
		}
	}
}
