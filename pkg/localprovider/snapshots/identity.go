package snapshots

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
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
	if isTeamAccess(rec.Key) {
		return false
	}
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

// fromNow are the keys an in-place restore takes from the data it replaces instead of from the
// snapshot, by prefix (take, when set, picks among a prefix's values):
//   - the Nodes and their heartbeat Leases: those are the Machines' that exist now (a Machine's
//     Node goes with it); the snapshot's may be of Machines deleted since, and lack those made
//     since;
//   - who may do what: every Role, ClusterRole, RoleBinding and ClusterRoleBinding (the Team's
//     and the tenant's own), every ServiceAccount and service-account token Secret. Rights follow
//     the tenant of now, never a snapshot's: a binding deleted since (a demoted admin's, a
//     revoked CI account's) is not bound again, a token revoked since is not valid again, not
//     even until the lifecycle's access step runs on the restored data;
//   - the ValidatingAdmissionPolicy butler-api-endpoint and its binding (by exact key: exact):
//     operators are bound from the restored data's first start, so a snapshot's older policy, or
//     none, would let them write the API's endpoint, its ClusterIP or externalIPs until the
//     access step applies today's again. The tenant's own policies are the snapshot's.
var fromNow = []struct {
	prefix string
	take   func(value []byte) bool
	exact  bool
}{
	{prefix: "minions/"},
	{prefix: "leases/kube-node-lease/"},
	{prefix: "roles/"},
	{prefix: "rolebindings/"},
	{prefix: "clusterroles/"},
	{prefix: "clusterrolebindings/"},
	{prefix: "serviceaccounts/"},
	{prefix: "secrets/", take: isServiceAccountToken},
	{prefix: "validatingadmissionpolicies/" + access.APIEndpointPolicy, exact: true},
	{prefix: "validatingadmissionpolicybindings/" + access.APIEndpointPolicy, exact: true},
}

// teamClusterRoleBindings is the key prefix of the Team's ClusterRoleBindings.
const teamClusterRoleBindings = "clusterrolebindings/" + access.Prefix

// isFromNow says whether an in-place restore takes the record's key from the data it replaces.
func isFromNow(rec snapshot.Record) bool {
	for _, p := range fromNow {
		if (rec.Key == p.prefix || !p.exact && strings.HasPrefix(rec.Key, p.prefix)) && (p.take == nil || p.take(rec.Value)) {
			return true
		}
	}
	return false
}

// namespaceEncoder writes a Namespace as kube-apiserver stores it (protobuf).
var namespaceEncoder = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// decodeNamespace decodes a stored Namespace (protobuf or JSON), its kind set for encoding again.
func decodeNamespace(value []byte) (*corev1.Namespace, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(value, nil, nil)
	if err != nil {
		return nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, fmt.Errorf("not a Namespace: %T", obj)
	}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns, nil
}

func isServiceAccountToken(value []byte) bool {
	return secretType(value) == corev1.SecretTypeServiceAccountToken
}

// namespaceOf is the namespace of a namespaced object's key (resource/namespace/name) under the
// prefixes of fromNow; "" for cluster-scoped ones.
func namespaceOf(key string) string {
	resource, rest, _ := strings.Cut(key, "/")
	switch resource {
	case "roles", "rolebindings", "serviceaccounts", "secrets":
		ns, _, _ := strings.Cut(rest, "/")
		return ns
	}
	return ""
}

// isTeamAccess says whether the key is one of the Team's bindings: a new cluster made from a
// snapshot has its own Team's, which its access step applies before anyone is let in.
func isTeamAccess(key string) bool {
	return strings.HasPrefix(key, teamClusterRoleBindings) || isTeamRoleBinding(key)
}

// isTeamRoleBinding says whether the key is a RoleBinding of the Team's.
func isTeamRoleBinding(key string) bool {
	_, name, ok := roleBindingKey(key)
	return ok && strings.HasPrefix(name, access.Prefix)
}

// roleBindingKey splits a RoleBinding's key, rolebindings/<namespace>/<name>.
func roleBindingKey(key string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(key, "rolebindings/")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "/")
}
