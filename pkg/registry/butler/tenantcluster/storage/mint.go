package storage

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// caKeyPairs are the key pairs a tenant CA Secret may hold, in the order they are tried:
// Steward/Kamaji's <tcp>-ca (ca.crt, ca.key), then Cluster API's <cluster>-ca (tls.crt, tls.key).
var caKeyPairs = [][2]string{{"ca.crt", "ca.key"}, {"tls.crt", "tls.key"}}

// caFrom returns the CA in a tenant CA Secret's data, if it holds one.
func caFrom(data map[string][]byte) (*pki.KeyPair, bool) {
	for _, pair := range caKeyPairs {
		ca, err := pki.Parse(data[pair[0]], data[pair[1]])
		if err == nil && ca.Cert.IsCA {
			return ca, true
		}
	}
	return nil, false
}

// mintKubeconfig returns stored's cluster (server and CA) with a new client certificate signed
// by the tenant CA that says id (CN the user, O the groups) and nothing else, valid for ttl
// (never beyond the CA).
func mintKubeconfig(stored []byte, ca *pki.KeyPair, id access.Identity, ttl time.Duration, now time.Time) ([]byte, time.Time, error) {
	cfg, err := clientcmd.Load(stored)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading the stored kubeconfig: %w", err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("the stored kubeconfig has no current context")
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("the stored kubeconfig has no cluster %q", kctx.Cluster)
	}
	kp, err := ca.Issue(pki.Request{CommonName: id.User, Organizations: id.Groups, Usage: pki.ClientAuth,
		NotAfter: now.Add(ttl).Truncate(time.Second)})
	if err != nil {
		return nil, time.Time{}, err
	}
	data, err := pki.Kubeconfig(kctx.Cluster, cluster.Server, cluster.CertificateAuthorityData, id.User, kp)
	return data, kp.Cert.NotAfter, err
}
