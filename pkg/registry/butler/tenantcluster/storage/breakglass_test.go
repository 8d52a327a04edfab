package storage

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
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
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// A platform admin outside the Team gets a short-lived cluster-admin identity of their own in a
// Team's cluster, capped at an hour whatever the member flag allows, and an Event on the
// TenantCluster names who and until when but carries no credential. When the Event cannot be
// written, no kubeconfig is handed out.
func TestBreakGlassKubeconfig(t *testing.T) {
	stored := kubeconfigWithCert(t, time.Now().Add(time.Hour))
	certPEM, keyPEM, _ := tenantCA(t)
	cluster := &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", UID: "uid-1"},
		Status: butler.TenantClusterStatus{Phase: "Ready", TenantNamespace: "prod-1234abcd",
			KubeconfigSecretRef: &butler.LocalObjectReference{Name: "prod-admin-kubeconfig"}},
	}
	for _, tc := range []struct {
		name    string
		seconds *int64
		want    time.Duration
		warn    string
	}{
		{name: "default", want: 15 * time.Minute},
		{name: "asked for a day", seconds: ptr.To[int64](24 * 3600), want: time.Hour, warn: "capped at 3600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "prod-1234abcd"}, Data: map[string][]byte{"admin.conf": stored}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-ca", Namespace: "prod-1234abcd"}, Data: map[string][]byte{"ca.crt": certPEM, "ca.key": keyPEM}})
			r := NewBreakGlassKubeconfigREST(clusterGetter{cluster}, client.CoreV1(), client.CoreV1(), 24*time.Hour)
			now := time.Now().Truncate(time.Second)
			r.now = func() time.Time { return now }
			warnings := &recordedWarnings{}
			ctx := genericapirequest.WithUser(warning.WithWarningRecorder(
				genericapirequest.WithNamespace(context.Background(), "team-a"), warnings), &user.DefaultInfo{Name: "pat"})
			out, err := r.Create(ctx, "prod", &butler.KubeconfigRequest{Spec: butler.KubeconfigRequestSpec{ExpirationSeconds: tc.seconds}}, nil, &metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*butler.KubeconfigRequest)
			cfg, _ := clientcmd.Load(got.Status.Kubeconfig)
			block, _ := pem.Decode(cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientCertificateData)
			cert, _ := x509.ParseCertificate(block.Bytes)
			if cert.Subject.CommonName != "butler:platform-admin:pat" || !slices.Equal(cert.Subject.Organization, []string{"butler:platform-admins"}) {
				t.Errorf("subject %v, want CN butler:platform-admin:pat O butler:platform-admins", cert.Subject)
			}
			if !cert.NotAfter.Equal(now.Add(tc.want)) {
				t.Errorf("notAfter %v, want %v", cert.NotAfter, now.Add(tc.want))
			}
			if (tc.warn == "") != (len(warnings.texts) == 0) || (tc.warn != "" && !strings.Contains(warnings.texts[0], tc.warn)) {
				t.Errorf("warnings %q, want %q", warnings.texts, tc.warn)
			}
			events, _ := client.CoreV1().Events("team-a").List(ctx, metav1.ListOptions{})
			if len(events.Items) != 1 {
				t.Fatalf("%d Events, want 1", len(events.Items))
			}
			ev := events.Items[0]
			wantMsg := `"pat" minted a break-glass kubeconfig: cluster-admin in the tenant as butler:platform-admin:pat until ` + now.Add(tc.want).UTC().Format(time.RFC3339)
			if ev.Reason != BreakGlassReason || ev.Message != wantMsg || ev.InvolvedObject.Kind != "TenantCluster" || ev.InvolvedObject.Name != "prod" || ev.InvolvedObject.UID != "uid-1" {
				t.Errorf("Event %s %q on %v, want %s %q on TenantCluster prod", ev.Reason, ev.Message, ev.InvolvedObject, BreakGlassReason, wantMsg)
			}
			if strings.Contains(ev.Message, "BEGIN") || strings.Contains(ev.Message, string(got.Status.Kubeconfig)) {
				t.Errorf("the Event carries the credential: %q", ev.Message)
			}
		})
	}

	t.Run("no record, no kubeconfig", func(t *testing.T) {
		client := fake.NewClientset(
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "prod-1234abcd"}, Data: map[string][]byte{"admin.conf": stored}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-ca", Namespace: "prod-1234abcd"}, Data: map[string][]byte{"ca.crt": certPEM, "ca.key": keyPEM}})
		client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("etcd is down")
		})
		r := NewBreakGlassKubeconfigREST(clusterGetter{cluster}, client.CoreV1(), client.CoreV1(), 0)
		ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "team-a"), &user.DefaultInfo{Name: "pat"})
		out, err := r.Create(ctx, "prod", &butler.KubeconfigRequest{}, nil, &metav1.CreateOptions{})
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusInternalServerError || out != nil {
			t.Fatalf("got %v %v, want a 500 and nothing", out, err)
		}
	})
}
