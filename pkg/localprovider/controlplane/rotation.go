package controlplane

import (
	"context"
	"crypto/sha256"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// rotateCredentials carries out the phase of a rotation of the tenant CA and service-account
// key that the TenantControlPlane asks for (external.CredentialsRotationAnnotation), once per
// rotation: Preparing keeps the CA and key as the previous ones, makes a new key and a new CA
// in Secret <tcp>-ca (EnsureTenant then reissues every client certificate from it and keeps
// serving with the previous CA's); Completing drops the previous ones. Each is safe to run
// again after a crash. It returns the answer to record and give once the control plane serves
// with them ("" when there is nothing to do). A control plane that never served has nothing to
// rotate yet.
func (c *Controller) rotateCredentials(ctx context.Context, tcp *unstructured.Unstructured, pl *plane) (string, error) {
	phase, id := external.ParseRotationValue(tcp.GetAnnotations()[external.CredentialsRotationAnnotation])
	if phase == "" || publishedEndpoint(tcp) == "" {
		return "", nil
	}
	pl.mu.Lock()
	_, doneID := external.ParseRotationValue(pl.rec.CredentialsRotated)
	donePhase := pl.rec.CredentialsRotated
	pl.mu.Unlock()
	prepared := string(v1alpha1.RotationPrepared) + "/" + id
	completed := string(v1alpha1.RotationCompleted) + "/" + id
	logger := klog.FromContext(ctx).WithValues("rotation", id)
	switch {
	case phase == string(v1alpha1.RotationPreparing) && doneID != id:
		previous, err := pki.StartRotation(pl.paths.pki())
		if err != nil {
			return "", fmt.Errorf("starting the rotation: %w", err)
		}
		ca, err := c.ensureCA(ctx, tcp, pl)
		if err != nil {
			return "", err
		}
		if ca.Cert.Equal(previous.Cert) {
			if err := c.replaceCA(ctx, tcp, pl); err != nil {
				return "", err
			}
			logger.Info("Rotation prepared: a new CA and service-account key, trusted beside the previous ones")
		}
		return prepared, nil
	case phase == string(v1alpha1.RotationCompleting) && donePhase == prepared:
		if err := pki.CompleteRotation(pl.paths.pki()); err != nil {
			return "", fmt.Errorf("completing the rotation: %w", err)
		}
		logger.Info("Rotation completing: the previous CA and service-account key are no longer trusted")
		return completed, nil
	}
	return "", nil
}

// replaceCA puts a new CA into Secret <tcp>-ca (an update of the version read: of two racing
// writers one wins, and the other reads its CA again).
func (c *Controller) replaceCA(ctx context.Context, tcp *unstructured.Unstructured, pl *plane) error {
	secrets := c.deps.Kube.CoreV1().Secrets(tcp.GetNamespace())
	name := caSecretName(tcp.GetName())
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("Secret %s: %w", name, err)
	}
	ca, err := pki.NewCA(tcp.GetName())
	if err != nil {
		return err
	}
	secret.Data = map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM, "tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM}
	if _, err := secrets.Update(ctx, secret, external.LocalProvider.UpdateOptions()); err != nil {
		if apierrors.IsConflict(err) {
			pl.mu.Lock()
			pl.ca = nil // read again
			pl.mu.Unlock()
		}
		return fmt.Errorf("Secret %s: %w", name, err)
	}
	pl.mu.Lock()
	pl.ca = ca
	pl.mu.Unlock()
	return nil
}

// recordRotated records a rotation's phase done, once the control plane serves with it, and
// answers on the TenantControlPlane (external.CredentialsRotatedAnnotation, its own field
// manager: the StewardControlPlane's apply of the annotations must not drop it).
func (c *Controller) recordRotated(ctx context.Context, tcp *unstructured.Unstructured, pl *plane, done string) error {
	pl.mu.Lock()
	rec := pl.rec
	pl.mu.Unlock()
	if done != "" && rec.CredentialsRotated != done {
		rec.CredentialsRotated = done
		if err := writeRecord(pl.paths, rec); err != nil {
			return err
		}
		pl.mu.Lock()
		pl.rec.CredentialsRotated = done
		pl.mu.Unlock()
		klog.FromContext(ctx).Info("Credentials rotation", "phase", done)
	}
	if rec.CredentialsRotated == "" || tcp.GetAnnotations()[external.CredentialsRotatedAnnotation] == rec.CredentialsRotated {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenantControlPlaneAPIVersion, "kind": tenantControlPlaneKind,
		"metadata": map[string]any{"name": tcp.GetName(), "namespace": tcp.GetNamespace(),
			"annotations": map[string]any{external.CredentialsRotatedAnnotation: rec.CredentialsRotated}}}}
	_, err := external.LocalProviderRotation.Apply(ctx, c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(tcp.GetNamespace()), u)
	if err != nil {
		return fmt.Errorf("answering the rotation on the TenantControlPlane: %w", err)
	}
	return nil
}

// credentialsDigest names the credentials the processes read once, when they start (the
// kubeconfigs' certificates, the CAs, the service-account keys): a process started with others
// is replaced, as one with another command line is.
func credentialsDigest(certs *pki.Tenant) string {
	h := sha256.New()
	for _, b := range [][]byte{certs.CA.CertPEM, certs.Trust, certs.ServiceAccount.PublicPEM} {
		h.Write(b)
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil))[:16]
}
