package tenantcluster

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// takeOperation acts on the operation annotation, as Gardener's gardener.cloud/operation: a
// rotation's start or completion moves status.credentials.rotation to Preparing or Completing,
// then the annotation is removed. The control plane's provider is asked for the phase through
// the control plane object (component/capi), and the credentials step follows its
// answer. wrote says whether anything was written (the write brings the cluster back).
func (c *Controller) takeOperation(ctx context.Context, tc *v1alpha1.TenantCluster) (wrote bool, err error) {
	op, ok := tc.Annotations[v1alpha1.OperationAnnotation]
	if !ok || (op != v1alpha1.OperationRotateCredentialsStart && op != v1alpha1.OperationRotateCredentialsComplete) {
		return false, nil
	}
	current := rotationOf(&tc.Status)
	if next := nextRotation(current, op, metav1.NewTime(c.clock.Now())); next != nil {
		status := tc.Status.DeepCopy()
		if status.Credentials == nil {
			status.Credentials = &v1alpha1.TenantCredentialsStatus{}
		}
		status.Credentials.Rotation = next
		if stored, err := c.writeStatus(ctx, tc, status); err != nil || !stored {
			return true, err
		}
		c.recordRotation(tc, current, next)
	}
	// The operation is taken (or was already): remove it, so that it runs once.
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{v1alpha1.OperationAnnotation: nil}}})
	_, err = c.butler.ButlerV1alpha1().TenantClusters(tc.Namespace).Patch(ctx, tc.Name, types.MergePatchType, patch, external.Workers.PatchOptions())
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return true, err
}

// nextRotation is the rotation an operation makes of the current one, nil when the operation
// changes nothing (taken before, or not applicable: validation refuses those on update).
func nextRotation(current *v1alpha1.CredentialsRotation, op string, now metav1.Time) *v1alpha1.CredentialsRotation {
	switch op {
	case v1alpha1.OperationRotateCredentialsStart:
		if current != nil && current.Phase != v1alpha1.RotationCompleted {
			return nil
		}
		next := &v1alpha1.CredentialsRotation{Phase: v1alpha1.RotationPreparing, LastInitiationTime: &now}
		if current != nil {
			next.LastCompletionTime = current.LastCompletionTime
		}
		return next
	case v1alpha1.OperationRotateCredentialsComplete:
		if current == nil || current.Phase != v1alpha1.RotationPrepared {
			return nil
		}
		next := current.DeepCopy()
		next.Phase = v1alpha1.RotationCompleting
		return next
	}
	return nil
}

func rotationOf(st *v1alpha1.TenantClusterStatus) *v1alpha1.CredentialsRotation {
	if st.Credentials == nil {
		return nil
	}
	return st.Credentials.Rotation
}

// rotationRecheck is how soon a rotation looks again at Nodes still on the old CA: a kubelet
// renews its certificate in seconds at best.
const rotationRecheck = 2 * time.Second

// followRotation moves a rotation under way on as its provider answers on the
// TenantControlPlane (external.CredentialsRotatedAnnotation): Preparing becomes Prepared once the
// control plane trusts both CAs and keys and every Node's client certificate is the new CA's
// (caPEM, the <cluster>-ca Secret's), as a kubelet renews it with a certificate request;
// Completing becomes Completed once only the new are trusted. Not done while it moves.
func (c *Controller) followRotation(ctx context.Context, s *state, caPEM []byte) (steps.Result, error) {
	current := rotationOf(&s.tc.Status)
	if current == nil || current.LastInitiationTime == nil ||
		(current.Phase != v1alpha1.RotationPreparing && current.Phase != v1alpha1.RotationCompleting) {
		return steps.Ready("CredentialsRead", "the tenant's certificates are read"), nil
	}
	phase, id := external.ParseRotationValue(s.rotated)
	started := external.RotationID(current.LastInitiationTime.Time)
	next := current.DeepCopy()
	switch {
	case current.Phase == v1alpha1.RotationPreparing && phase == string(v1alpha1.RotationPrepared) && id == started:
		tenant, err := c.tenantClientOf(ctx, string(s.tc.UID), s.namespace, s.kubeconfigSecret)
		if err != nil {
			return steps.Result{}, err
		}
		left, err := nodesNotOn(ctx, tenant, caPEM)
		if err != nil {
			return steps.Result{}, err
		}
		if len(left) > 0 {
			// No watch reaches into the tenant: look again shortly.
			s.recheckWithin(rotationRecheck)
			return steps.Waiting("RotatingCredentials", "rotating the tenant CA and service-account key (Preparing): the control plane trusts both; waiting for Node %s to renew its client certificate from the new CA",
				strings.Join(left, ", ")), nil
		}
		next.Phase = v1alpha1.RotationPrepared
	case current.Phase == v1alpha1.RotationCompleting && phase == string(v1alpha1.RotationCompleted) && id == started:
		now := metav1.NewTime(c.clock.Now())
		next.Phase, next.LastCompletionTime = v1alpha1.RotationCompleted, &now
	default:
		return steps.Waiting("RotatingCredentials", "rotating the tenant CA and service-account key (%s): waiting for the control plane provider", current.Phase), nil
	}
	s.rotation = next
	return steps.Ready("CredentialsRead", "the tenant's certificates are read; the rotation is %s", next.Phase), nil
}

// nodesNotOn names the tenant's Nodes without a client certificate from the CA caPEM: none of
// the kubelet client certificate requests issued to it (signer kube-apiserver-client-kubelet,
// requested as system:node:<name>) was signed by that CA.
func nodesNotOn(ctx context.Context, tenant kubernetes.Interface, caPEM []byte) ([]string, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return nil, fmt.Errorf("the cluster CA Secret holds no certificate")
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	nodes, err := tenant.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the tenant's Nodes: %w", err)
	}
	csrs, err := tenant.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the tenant's certificate requests: %w", err)
	}
	renewed := map[string]bool{}
	for _, csr := range csrs.Items {
		if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || len(csr.Status.Certificate) == 0 {
			continue
		}
		block, _ := pem.Decode(csr.Status.Certificate)
		if block == nil {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil || cert.CheckSignatureFrom(ca) != nil || csr.Spec.Username != cert.Subject.CommonName {
			continue
		}
		renewed[strings.TrimPrefix(cert.Subject.CommonName, "system:node:")] = true
	}
	var left []string
	for _, n := range nodes.Items {
		if !renewed[n.Name] {
			left = append(left, n.Name)
		}
	}
	slices.Sort(left)
	return left, nil
}

// recordRotation makes an Event of a rotation's phase change.
func (c *Controller) recordRotation(tc *v1alpha1.TenantCluster, from, to *v1alpha1.CredentialsRotation) {
	if to == nil || (from != nil && from.Phase == to.Phase && equalTimes(from.LastInitiationTime, to.LastInitiationTime)) {
		return
	}
	was := "none"
	if from != nil {
		was = string(from.Phase)
	}
	c.events.Eventf(tc, nil, corev1.EventTypeNormal, "CredentialsRotation"+string(to.Phase), "RotateCredentials",
		"credentials rotation %s -> %s: %s", was, to.Phase, rotationMeaning[to.Phase])
}

var rotationMeaning = map[v1alpha1.CredentialsRotationPhase]string{
	v1alpha1.RotationPreparing:  "a new CA and service-account key are made and trusted beside the old ones",
	v1alpha1.RotationPrepared:   "both are trusted and everything uses the new ones; fetch new kubeconfigs, then complete it (annotation butler.butlerlabs.dev/operation=rotate-credentials-complete)",
	v1alpha1.RotationCompleting: "the old CA and service-account key are being dropped",
	v1alpha1.RotationCompleted:  "only the new CA and service-account key are trusted; credentials from the old CA are refused",
}

func equalTimes(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Equal(b.Time)
}
