package datastore

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// Keys of the Secret that holds a datastore's credentials (cert-manager's and Steward's names).
const (
	SecretCACert     = "ca.crt"
	SecretCAKey      = "ca.key"
	SecretClientCert = "tls.crt"
	SecretClientKey  = "tls.key"
)

// Object is the DataStore an owner publishes for an etcd it runs: its endpoints (host:port) and
// its credentials in Secret secretNamespace/secretName (SecretData), as Steward's CRD asks of an
// etcd datastore.
func Object(name string, endpoints []string, secretNamespace, secretName string) *unstructured.Unstructured {
	ref := func(key string) map[string]any {
		return map[string]any{"secretReference": map[string]any{"namespace": secretNamespace, "name": secretName, "keyPath": key}}
	}
	eps := make([]any, len(endpoints))
	for i, e := range endpoints {
		eps[i] = e
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": APIVersion, "kind": Kind,
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"driver":    DriverEtcd,
			"endpoints": eps,
			"tlsConfig": map[string]any{
				"certificateAuthority": map[string]any{"certificate": ref(SecretCACert), "privateKey": ref(SecretCAKey)},
				"clientCertificate":    map[string]any{"certificate": ref(SecretClientCert), "privateKey": ref(SecretClientKey)},
			},
		},
	}}
}

// SecretData is the content of the Secret Object points at.
func SecretData(ca, root *pki.KeyPair) map[string][]byte {
	return map[string][]byte{SecretCACert: ca.CertPEM, SecretCAKey: ca.KeyPEM, SecretClientCert: root.CertPEM, SecretClientKey: root.KeyPEM}
}
