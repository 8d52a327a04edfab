package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// ensureCA returns the tenant's CA from Secret <tcp>-ca, making both the first time. The Secret
// is created, not applied: of two racing reconciles, one CA wins and the other reads it.
func (c *Controller) ensureCA(ctx context.Context, tcp *unstructured.Unstructured, pl *plane) (*pki.KeyPair, error) {
	pl.mu.Lock()
	ca := pl.ca
	pl.mu.Unlock()
	if ca != nil {
		return ca, nil
	}
	secrets := c.deps.Kube.CoreV1().Secrets(tcp.GetNamespace())
	name := caSecretName(tcp.GetName())
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var newCA *pki.KeyPair
		if newCA, err = pki.NewCA(tcp.GetName()); err != nil {
			return nil, err
		}
		secret, err = c.createCASecret(ctx, tcp, newCA)
		if apierrors.IsAlreadyExists(err) {
			secret, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("Secret %s: %w", name, err)
	}
	ca, err = pki.Parse(secret.Data["ca.crt"], secret.Data["ca.key"])
	if err != nil {
		return nil, fmt.Errorf("Secret %s holds no usable CA (ca.crt, ca.key): %w", name, err)
	}
	if !bytes.Equal(secret.Data["tls.crt"], secret.Data["ca.crt"]) || !bytes.Equal(secret.Data["tls.key"], secret.Data["ca.key"]) {
		// Cluster API reads the CA as tls.crt/tls.key.
		ac := corev1ac.Secret(name, tcp.GetNamespace()).WithData(map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM})
		if _, err := secrets.Apply(ctx, ac, external.LocalProvider.ApplyOptions()); err != nil {
			return nil, fmt.Errorf("Secret %s: %w", name, err)
		}
	}
	pl.mu.Lock()
	pl.ca = ca
	pl.mu.Unlock()
	return ca, nil
}

// createCASecret creates Secret <tcp>-ca holding ca; AlreadyExists if the tenant has a CA.
func (c *Controller) createCASecret(ctx context.Context, tcp *unstructured.Unstructured, ca *pki.KeyPair) (*corev1.Secret, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: caSecretName(tcp.GetName()), Namespace: tcp.GetNamespace(),
			Labels:          map[string]string{clusterv1.ClusterNameLabel: clusterNameOf(tcp)},
			OwnerReferences: []metav1.OwnerReference{ownerReference(tcp)}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM, "tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM},
	}
	return c.deps.Kube.CoreV1().Secrets(tcp.GetNamespace()).Create(ctx, secret, external.LocalProvider.CreateOptions())
}

// tenantKubeconfigs are the kubeconfigs of a tenant, as files in its state directory.
type tenantKubeconfigs struct {
	// admin and superAdmin name the endpoint; the .svc ones kube-apiserver's own address, for
	// management-side clients (the same unless a wake-on-request listener holds the endpoint).
	admin, superAdmin, adminSvc, superAdminSvc []byte
}

// writeKubeconfigs writes the components' and admins' kubeconfigs where they differ.
func (c *Controller) writeKubeconfigs(cluster, endpoint, apiEndpoint string, paths tenantPaths, certs *pki.Tenant) (tenantKubeconfigs, error) {
	public, internal := "https://"+endpoint, "https://"+apiEndpoint
	var out tenantKubeconfigs
	for _, k := range []struct {
		name, server, user string
		kp                 *pki.KeyPair
		keep               *[]byte
	}{
		{"admin", public, pki.AdminUser, certs.Admin, &out.admin},
		{"super-admin", public, pki.SuperAdminUser, certs.SuperAdmin, &out.superAdmin},
		{"admin-svc", internal, pki.AdminUser, certs.Admin, &out.adminSvc},
		{"super-admin-svc", internal, pki.SuperAdminUser, certs.SuperAdmin, &out.superAdminSvc},
		{"controller-manager", internal, pki.ControllerManager, certs.ControllerManager, nil},
		{"scheduler", internal, pki.Scheduler, certs.Scheduler, nil},
	} {
		data, err := pki.Kubeconfig(cluster, k.server, certs.Trust, k.user, k.kp)
		if err != nil {
			return out, err
		}
		if k.keep != nil {
			*k.keep = data
		}
		if old, err := os.ReadFile(paths.kubeconfig(k.name)); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := pki.WriteFile(paths.kubeconfig(k.name), data, 0o600); err != nil {
			return out, err
		}
	}
	return out, nil
}

// applyAdminKubeconfig writes Secret <tcp>-admin-kubeconfig when its content changed. The .svc
// keys are, in Steward, for clients inside the management cluster; here they name
// kube-apiserver's own port, which is the endpoint's unless a wake-on-request listener holds it.
func (c *Controller) applyAdminKubeconfig(ctx context.Context, tcp *unstructured.Unstructured, pl *plane, k tenantKubeconfigs) error {
	sum := sha256.New()
	sum.Write(k.admin)
	sum.Write(k.superAdmin)
	sum.Write(k.adminSvc)
	sum.Write(k.superAdminSvc)
	digest := fmt.Sprintf("%x", sum.Sum(nil))
	pl.mu.Lock()
	done := pl.adminDigest == digest
	pl.mu.Unlock()
	if done {
		return nil
	}
	ac := corev1ac.Secret(adminKubeconfigName(tcp.GetName()), tcp.GetNamespace()).
		WithLabels(map[string]string{clusterv1.ClusterNameLabel: clusterNameOf(tcp)}).
		WithOwnerReferences(ownerReferenceAC(tcp)).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{
			"admin.conf": k.admin, "super-admin.conf": k.superAdmin,
			"admin.svc": k.adminSvc, "super-admin.svc": k.superAdminSvc,
		})
	if _, err := c.deps.Kube.CoreV1().Secrets(tcp.GetNamespace()).Apply(ctx, ac, external.LocalProvider.ApplyOptions()); err != nil {
		return fmt.Errorf("Secret %s: %w", adminKubeconfigName(tcp.GetName()), err)
	}
	pl.mu.Lock()
	pl.adminDigest = digest
	pl.mu.Unlock()
	return nil
}

// clusterNameOf is the Cluster a TenantControlPlane belongs to: its cluster-name label, or its
// own name (capi-steward names it after the Cluster).
func clusterNameOf(obj *unstructured.Unstructured) string {
	if n := obj.GetLabels()[clusterv1.ClusterNameLabel]; n != "" {
		return n
	}
	return obj.GetName()
}

func ownerReference(obj *unstructured.Unstructured) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(),
		UID: obj.GetUID(), Controller: &t, BlockOwnerDeletion: &t}
}

func ownerReferenceAC(obj *unstructured.Unstructured) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion(obj.GetAPIVersion()).WithKind(obj.GetKind()).
		WithName(obj.GetName()).WithUID(obj.GetUID()).WithController(true).WithBlockOwnerDeletion(true)
}

// ensureCredentials makes (once) and returns the tenant's CA, its certificates and the
// kubeconfigs its processes and the admin kubeconfig Secret hold: the public ones name endpoint,
// the internal ones apiEndpoint.
func (c *Controller) ensureCredentials(ctx context.Context, tcp *unstructured.Unstructured, spec tenantSpec, pl *plane, endpoint, apiEndpoint string) (*pki.Tenant, tenantKubeconfigs, error) {
	ca, err := c.ensureCA(ctx, tcp, pl)
	if err != nil {
		return nil, tenantKubeconfigs{}, err
	}
	certs, _, err := pki.EnsureTenant(pl.paths.pki(), ca, tenantOptions(tcp.GetNamespace()+"/"+tcp.GetName(), spec, pl.address()))
	if err != nil {
		return nil, tenantKubeconfigs{}, fmt.Errorf("certificates: %w", err)
	}
	kubeconfigs, err := c.writeKubeconfigs(tcp.GetName(), endpoint, apiEndpoint, pl.paths, certs)
	if err != nil {
		return nil, tenantKubeconfigs{}, err
	}
	return certs, kubeconfigs, writeAdmissionConfig(pl.paths)
}

// tenantOptions are the certificates' options of a tenant of spec (a spare's too): name goes
// into its front-proxy CA's name only.
func tenantOptions(name string, spec tenantSpec, address string) pki.TenantOptions {
	serviceIP, _ := firstServiceIP(spec.ServiceCIDR)
	return pki.TenantOptions{Name: name, ServiceIP: serviceIP, ClusterDomain: spec.ClusterDomain,
		CertSANs: append(slices.Clone(spec.CertSANs), address)}
}
