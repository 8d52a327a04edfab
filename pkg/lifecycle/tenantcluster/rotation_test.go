package tenantcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

func TestNextRotation(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	rot := func(p v1alpha1.CredentialsRotationPhase) *v1alpha1.CredentialsRotation {
		return &v1alpha1.CredentialsRotation{Phase: p, LastInitiationTime: &earlier, LastCompletionTime: &earlier}
	}
	start, complete := v1alpha1.OperationRotateCredentialsStart, v1alpha1.OperationRotateCredentialsComplete
	for _, c := range []struct {
		current *v1alpha1.CredentialsRotation
		op      string
		want    v1alpha1.CredentialsRotationPhase // "" for no change
	}{
		{nil, start, v1alpha1.RotationPreparing},
		{rot(v1alpha1.RotationCompleted), start, v1alpha1.RotationPreparing},
		{rot(v1alpha1.RotationPreparing), start, ""}, // taken before
		{rot(v1alpha1.RotationPrepared), start, ""},
		{rot(v1alpha1.RotationPrepared), complete, v1alpha1.RotationCompleting},
		{rot(v1alpha1.RotationCompleting), complete, ""}, // taken before
		{nil, complete, ""},
		{rot(v1alpha1.RotationPreparing), complete, ""},
		{nil, "rotate-everything", ""},
	} {
		got := nextRotation(c.current, c.op, now)
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%v + %s: %s, want no change", c.current, c.op, got.Phase)
		case c.want != "" && (got == nil || got.Phase != c.want):
			t.Errorf("%v + %s: %v, want %s", c.current, c.op, got, c.want)
		case c.want == v1alpha1.RotationPreparing && (!got.LastInitiationTime.Equal(&now) || (c.current != nil && got.LastCompletionTime != c.current.LastCompletionTime)):
			t.Errorf("%v + start: %+v, want started now with the last completion kept", c.current, got)
		case c.want == v1alpha1.RotationCompleting && !got.LastInitiationTime.Equal(&earlier):
			t.Errorf("complete moved the initiation time: %+v", got)
		}
	}
}

// The start operation moves the status to Preparing, makes an Event and removes the annotation;
// taken again (the annotation came back before the removal was seen), it changes no status.
func TestTakeOperation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC)
	tc := cluster()
	tc.Annotations = map[string]string{v1alpha1.OperationAnnotation: v1alpha1.OperationRotateCredentialsStart, "keep": "me"}
	client := butlerfake.NewSimpleClientset(tc)
	recorder := events.NewFakeRecorder(10)
	c := &Controller{butler: client, events: recorder, clock: testingclock.NewFakePassiveClock(now)}

	if wrote, err := c.takeOperation(ctx, cluster()); wrote || err != nil {
		t.Fatalf("no annotation: wrote %v, %v", wrote, err)
	}
	if wrote, err := c.takeOperation(ctx, tc); !wrote || err != nil {
		t.Fatalf("start: wrote %v, %v", wrote, err)
	}
	got, _ := client.ButlerV1alpha1().TenantClusters(tc.Namespace).Get(ctx, tc.Name, metav1.GetOptions{})
	r := rotationOf(&got.Status)
	if r == nil || r.Phase != v1alpha1.RotationPreparing || !r.LastInitiationTime.Time.Equal(now) {
		t.Errorf("status after start: %+v", r)
	}
	if _, ok := got.Annotations[v1alpha1.OperationAnnotation]; ok || got.Annotations["keep"] != "me" {
		t.Errorf("annotations after start: %v", got.Annotations)
	}
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "CredentialsRotationPreparing") || !strings.Contains(e, "none -> Preparing") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no Event for the start")
	}

	got.Annotations[v1alpha1.OperationAnnotation] = v1alpha1.OperationRotateCredentialsStart
	c.clock = testingclock.NewFakePassiveClock(now.Add(time.Minute))
	if _, err := c.takeOperation(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, _ := client.ButlerV1alpha1().TenantClusters(tc.Namespace).Get(ctx, tc.Name, metav1.GetOptions{})
	if r := rotationOf(&again.Status); !r.LastInitiationTime.Time.Equal(now) {
		t.Errorf("a start taken twice started another rotation: %+v", r)
	}
	if _, ok := again.Annotations[v1alpha1.OperationAnnotation]; ok {
		t.Error("the annotation taken twice was not removed")
	}
	if len(recorder.Events) != 0 {
		t.Errorf("a start taken twice made an Event: %q", <-recorder.Events)
	}
}

// nodeCSR is an issued kubelet client certificate request of node, signed by ca.
func nodeCSR(t *testing.T, node string, ca *pki.KeyPair) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: ca.Cert.SerialNumber, Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-" + node + "-" + ca.Cert.Subject.CommonName},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Username: "system:node:" + node},
		Status:     certificatesv1.CertificateSigningRequestStatus{Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
	}
}

// The credentials step follows the provider's answer: Preparing becomes Prepared once the
// provider says Prepared for this rotation and every Node has a client certificate of the new
// CA; Completing becomes Completed (with its time) once it says Completed. Another rotation's
// answer, or a Node still on the old CA, keeps it waiting.
func TestFollowRotation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-5 * time.Minute))
	oldCA, _ := pki.NewCA("old")
	newCA, _ := pki.NewCA("new")
	tenant := kubefake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w2"}},
		nodeCSR(t, "w1", oldCA), nodeCSR(t, "w2", oldCA), nodeCSR(t, "w1", newCA))
	kube := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "tenant-ns"},
		Data: map[string][]byte{"admin.conf": []byte("kubeconfig")}})
	c := &Controller{kube: kube, clock: testingclock.NewFakePassiveClock(now),
		access:          accessApplied{digest: map[string]string{}, granted: map[string]grant{}, clients: map[string]tenantClient{}},
		newTenantClient: func([]byte) (kubernetes.Interface, error) { return tenant, nil }}
	stateIn := func(phase v1alpha1.CredentialsRotationPhase, rotated string) *state {
		tc := cluster()
		tc.Status.Credentials = &v1alpha1.TenantCredentialsStatus{Rotation: &v1alpha1.CredentialsRotation{Phase: phase, LastInitiationTime: &started}}
		return &state{tc: tc, namespace: "tenant-ns", kubeconfigSecret: "prod-admin-kubeconfig", rotated: rotated}
	}
	id := external.RotationID(started.Time)

	for _, c2 := range []struct {
		phase   v1alpha1.CredentialsRotationPhase
		rotated string
	}{
		{v1alpha1.RotationPreparing, ""},
		{v1alpha1.RotationPreparing, "Prepared/2020-01-01T00:00:00Z"}, // an earlier rotation's answer
		{v1alpha1.RotationPreparing, "Prepared/" + id},                // w2 is still on the old CA
		{v1alpha1.RotationCompleting, "Prepared/" + id},
	} {
		s := stateIn(c2.phase, c2.rotated)
		r, err := c.followRotation(ctx, s, newCA.CertPEM)
		if err != nil || r.Done || s.rotation != nil || r.Reason != "RotatingCredentials" {
			t.Errorf("%s with answer %q: %+v, %v, rotation %+v; want waiting", c2.phase, c2.rotated, r, err, s.rotation)
		}
		if c2.rotated == "Prepared/"+id && c2.phase == v1alpha1.RotationPreparing && !strings.Contains(r.Message, "Node w2 ") {
			t.Errorf("waiting for w2: %q", r.Message)
		}
	}

	if _, err := tenant.CertificatesV1().CertificateSigningRequests().Create(ctx, nodeCSR(t, "w2", newCA), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := stateIn(v1alpha1.RotationPreparing, "Prepared/"+id)
	if r, err := c.followRotation(ctx, s, newCA.CertPEM); err != nil || !r.Done || s.rotation == nil || s.rotation.Phase != v1alpha1.RotationPrepared {
		t.Errorf("every Node renewed: %+v, %v, %+v; want Prepared", r, err, s.rotation)
	}
	s = stateIn(v1alpha1.RotationCompleting, "Completed/"+id)
	if r, err := c.followRotation(ctx, s, newCA.CertPEM); err != nil || !r.Done || s.rotation == nil ||
		s.rotation.Phase != v1alpha1.RotationCompleted || !s.rotation.LastCompletionTime.Time.Equal(now) {
		t.Errorf("completed: %+v, %v, %+v; want Completed now", r, err, s.rotation)
	}
	s = stateIn(v1alpha1.RotationPrepared, "Prepared/"+id)
	if r, err := c.followRotation(ctx, s, newCA.CertPEM); err != nil || !r.Done || s.rotation != nil {
		t.Errorf("a Prepared rotation: %+v, %v, %+v; want done and unchanged", r, err, s.rotation)
	}
}
