package snapshots

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

// identityPrefixes are kube-apiserver's keys (relative to --etcd-prefix, the tenant's prefix) of objects that
// carry the source cluster's identity, which a new cluster made from a snapshot must not have:
// its Nodes (the new cluster's Machines make their own) and their Leases, leader-election and
// apiserver identity Leases, the endpoints of default/kubernetes (the source's address),
// certificate signing requests (signed by the source's CA).
var identityPrefixes = []string{
	"minions/",
	"leases/",
	"masterleases/",
	"certificatesigningrequests/",
	"services/endpoints/default/kubernetes",
	"endpointslices/default/kubernetes",
	"secrets/kube-system/bootstrap-token-",
}

// keepForNewIdentity says whether a record of a snapshot belongs in a new cluster made from it:
// not what identityPrefixes name, not the kube-root-ca.crt ConfigMaps (the source's CA; the new
// cluster's controller-manager publishes its own), not bootstrap-token or service-account
// token Secrets (signed with, or trusted by, the source's keys).
func keepForNewIdentity(rec snapshot.Record) bool {
	for _, p := range identityPrefixes {
		if strings.HasPrefix(rec.Key, p) {
			return false
		}
	}
	if strings.HasPrefix(rec.Key, "configmaps/") && strings.HasSuffix(rec.Key, "/kube-root-ca.crt") {
		return false
	}
	if strings.HasPrefix(rec.Key, "secrets/") {
		switch secretType(rec.Value) {
		case corev1.SecretTypeServiceAccountToken, corev1.SecretTypeBootstrapToken:
			return false
		}
	}
	return true
}

// secretType decodes a stored Secret (protobuf, as kube-apiserver writes it, or JSON) for its
// type; "" when it cannot be read.
func secretType(value []byte) corev1.SecretType {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(value, nil, nil)
	if err != nil {
		return ""
	}
	if s, ok := obj.(*corev1.Secret); ok {
		return s.Type
	}
	return ""
}

// machineNodePrefixes are the keys an in-place restore takes from the data it replaces instead
// of from the snapshot: the Nodes and their heartbeat Leases. Those are the Machines' that exist
// now (a Machine's Node goes with it); the snapshot's may be of Machines deleted since, and lack
// those made since.
var machineNodePrefixes = []string{"minions/", "leases/kube-node-lease/"}

func isMachineNode(key string) bool {
	for _, p := range machineNodePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
