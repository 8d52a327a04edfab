package tenantcluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// Names of the credentials in status.credentials.expiry.
const (
	credentialCA              = "ca"
	credentialAdminKubeconfig = "admin-kubeconfig"
)

// ensureCredentials reads when the tenant's certificates expire, for the status: the cluster CA
// (Secret <cluster>-ca, Cluster API's name) and the admin kubeconfig's client certificate, from
// the tenant namespace's Secrets watch (its certificates are cached; private keys are not). A
// Secret a provider does not make is left out; it never holds the cluster back. A rotation under
// way holds it until the provider has moved the tenant over (followRotation).
func (c *Controller) ensureCredentials(ctx context.Context, s *state) (steps.Result, error) {
	if s.kubeconfigSecret == "" {
		return steps.Waiting("WaitingForKubeconfig", "waiting for the control plane's admin kubeconfig"), nil
	}
	var expiry []v1alpha1.CredentialExpiry
	var caPEM []byte
	for _, cred := range []struct {
		name, secret string
		keys         []string
		notAfter     func([]byte) (time.Time, error)
	}{
		{credentialCA, s.tc.Name + "-ca", []string{"ca.crt", "tls.crt"}, pki.NotAfter},
		{credentialAdminKubeconfig, s.kubeconfigSecret, component.ManagementKubeconfigKeys, pki.KubeconfigNotAfter},
	} {
		secret, err := c.secretOf(ctx, s.namespace, cred.secret)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return steps.Result{}, err
		}
		if cred.name == credentialCA {
			caPEM = firstOf(secret.Data, cred.keys...)
		}
		if t, err := cred.notAfter(firstOf(secret.Data, cred.keys...)); err == nil {
			expiry = append(expiry, v1alpha1.CredentialExpiry{Name: cred.name, NotAfter: metav1.NewTime(t)})
		}
	}
	s.credentials = expiry
	return c.followRotation(ctx, s, caPEM)
}

// secretOf is a Secret of a tenant namespace, from the watch, else from the API server.
func (c *Controller) secretOf(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if c.secrets != nil {
		if secret, err := c.secrets.Secrets(ns).Get(name); err == nil {
			return secret, nil
		}
	}
	return c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func firstOf(data map[string][]byte, keys ...string) []byte {
	for _, k := range keys {
		if len(data[k]) > 0 {
			return data[k]
		}
	}
	return nil
}
