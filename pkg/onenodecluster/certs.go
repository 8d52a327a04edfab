package onenodecluster

import (
	"net"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// leafCert is a certificate the cluster's processes present, signed by one of its two CAs.
type leafCert struct {
	stem string // <stem>.crt and <stem>.key in CLUSTER_DIR/pki
	ca   string // "ca" or "front-proxy-ca"
	req  pki.Request
}

// leafCerts are the cluster's certificates, as the processes' flags name them.
func (o Options) leafCerts() []leafCert {
	nodeIP := net.IP(o.nodeIP().AsSlice())
	loopback := net.ParseIP("127.0.0.1")
	client := func(stem, cn string, orgs ...string) leafCert {
		return leafCert{stem, "ca", pki.Request{CommonName: cn, Organizations: orgs, Usage: pki.ClientAuth}}
	}
	return []leafCert{
		{"kube-apiserver", "ca", pki.Request{CommonName: "kube-apiserver", Usage: pki.ServerAuth,
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			IPs:      []net.IP{loopback, nodeIP, net.IP(o.kubernetesServiceIP().AsSlice())}}},
		client("kube-apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
		client("admin", "kubernetes-admin", "system:masters"),
		client("kube-controller-manager", "system:kube-controller-manager"),
		client("kube-scheduler", "system:kube-scheduler"),
		client("kube-proxy", "system:kube-proxy"),
		client("kubelet-client", "system:node:"+node, "system:nodes"),
		{"kubelet-serving", "ca", pki.Request{CommonName: node, Usage: pki.ServerAuth,
			DNSNames: []string{node}, IPs: []net.IP{nodeIP, loopback}}},
		{"front-proxy-client", "front-proxy-ca", pki.Request{CommonName: "front-proxy-client", Usage: pki.ClientAuth}},
	}
}

// ensureCertificates makes the CAs, the leaves and the service-account key in CLUSTER_DIR/pki,
// or keeps those there (a leaf whose names no longer fit, after POD_CIDR changed, is made
// again): a cluster started again on the same directory keeps its clients' trust. It returns
// the cluster's CA and its leaves by stem.
func ensureCertificates(o Options) (*pki.KeyPair, map[string]*pki.KeyPair, error) {
	cas := map[string]*pki.KeyPair{}
	for stem, cn := range map[string]string{"ca": "butler-cluster-ca", "front-proxy-ca": "butler-cluster-front-proxy-ca"} {
		ca, err := pki.EnsureCA(o.pkiDir(), stem, cn)
		if err != nil {
			return nil, nil, err
		}
		cas[stem] = ca
	}
	leaves := map[string]*pki.KeyPair{}
	for _, l := range o.leafCerts() {
		kp, err := pki.EnsureLeaf(o.pkiDir(), l.stem, cas[l.ca], l.req)
		if err != nil {
			return nil, nil, err
		}
		leaves[l.stem] = kp
	}
	if _, err := pki.EnsureServiceAccountKey(o.pkiDir()); err != nil {
		return nil, nil, err
	}
	return cas["ca"], leaves, nil
}

// writeKubeconfigs writes the components' kubeconfigs and the booting admin's, for server.
func writeKubeconfigs(o Options, server string, ca *pki.KeyPair, leaves map[string]*pki.KeyPair) error {
	files := map[string]struct{ stem, user string }{
		o.bootKubeconfig():                      {"admin", "admin"},
		o.kubeconfig("kube-controller-manager"): {"kube-controller-manager", "kube-controller-manager"},
		o.kubeconfig("kube-scheduler"):          {"kube-scheduler", "kube-scheduler"},
		o.kubeconfig("kube-proxy"):              {"kube-proxy", "kube-proxy"},
		o.kubeconfig("kubelet"):                 {"kubelet-client", "system:node:" + node},
	}
	for file, who := range files {
		data, err := pki.Kubeconfig("local", server, ca.CertPEM, who.user, leaves[who.stem])
		if err != nil {
			return err
		}
		if err := pki.WriteFile(file, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
