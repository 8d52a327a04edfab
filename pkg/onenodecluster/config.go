package onenodecluster

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

// ports are the ports the cluster's processes bind, picked when it starts.
type ports struct {
	etcd, etcdPeer, kubeAPIServer, controllerManager, scheduler int
	kubelet, kubeletHealthz, kubeProxyHealthz, kubeProxyMetrics int
}

// component is one process of the cluster: its name (its log is logs/<name>.log) and command line.
type component struct {
	name string
	args []string
}

func (o Options) etcdURL(p ports) string {
	return fmt.Sprintf("http://%s:%d", o.nodeIP(), p.etcd)
}

func (o Options) kubeAPIServerURL(p ports) string {
	return fmt.Sprintf("https://%s:%d", o.nodeIP(), p.kubeAPIServer)
}

// etcd serves on the node's address too: butler-apiserver's Pods store there, under their own
// prefix (/registry/butler.butlerlabs.dev), as the management cluster's etcd may hold them.
func (o Options) etcd(p ports) component {
	peer := fmt.Sprintf("http://127.0.0.1:%d", p.etcdPeer)
	return component{"etcd", []string{o.bin("etcd"), "--name", "cluster", "--data-dir", o.path("etcd"),
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d,%s", p.etcd, o.etcdURL(p)),
		"--advertise-client-urls", o.etcdURL(p),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "cluster=" + peer, "--listen-metrics-urls", "", "--log-level", "warn"}}
}

func (o Options) kubeAPIServer(p ports) component {
	pki := func(f string) string { return o.path("pki", f) }
	return component{"kube-apiserver", []string{o.bin("kube-apiserver"),
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", p.etcd),
		"--bind-address", o.nodeIP().String(), "--advertise-address", o.nodeIP().String(),
		"--secure-port", strconv.Itoa(p.kubeAPIServer),
		"--tls-cert-file", pki("kube-apiserver.crt"), "--tls-private-key-file", pki("kube-apiserver.key"),
		"--client-ca-file", pki("ca.crt"),
		"--kubelet-client-certificate", pki("kube-apiserver-kubelet-client.crt"),
		"--kubelet-client-key", pki("kube-apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority", pki("ca.crt"), "--kubelet-preferred-address-types", "InternalIP",
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--service-cluster-ip-range", o.ServiceCIDR.String(),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", pki("sa.pub"), "--service-account-signing-key-file", pki("sa.key"),
		"--requestheader-client-ca-file", pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", pki("front-proxy-client.crt"), "--proxy-client-key-file", pki("front-proxy-client.key"),
		"--enable-aggregator-routing=true",
		"--cert-dir", o.path("kube-apiserver")}}
}

func (o Options) controllerManager(p ports) component {
	kc := o.kubeconfig("kube-controller-manager")
	return component{"kube-controller-manager", []string{o.bin("kube-controller-manager"),
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(p.controllerManager), "--leader-elect=false",
		"--use-service-account-credentials",
		"--service-account-private-key-file", o.path("pki", "sa.key"), "--root-ca-file", o.path("pki", "ca.crt"),
		"--cluster-signing-cert-file", o.path("pki", "ca.crt"), "--cluster-signing-key-file", o.path("pki", "ca.key")}}
}

func (o Options) scheduler(p ports) component {
	kc := o.kubeconfig("kube-scheduler")
	return component{"kube-scheduler", []string{o.bin("kube-scheduler"),
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(p.scheduler), "--leader-elect=false"}}
}

func (o Options) containerd() component {
	return component{"containerd", []string{"containerd", "--config", o.path("containerd", "config.toml")}}
}

func (o Options) kubelet() component {
	return component{"kubelet", []string{o.bin("kubelet"), "--config", o.path("kubelet-config.yaml"),
		"--kubeconfig", o.kubeconfig("kubelet"), "--root-dir", o.kubeletDir(),
		"--hostname-override", node, "--node-ip", o.nodeIP().String()}}
}

func (o Options) kubeProxy(p ports) component {
	return component{"kube-proxy", []string{o.bin("kube-proxy"), "--kubeconfig", o.kubeconfig("kube-proxy"),
		"--hostname-override", node, "--cluster-cidr", o.PodCIDR.String(), "--proxy-mode", "iptables",
		"--iptables-localhost-nodeports=false",
		"--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", p.kubeProxyHealthz),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", p.kubeProxyMetrics),
		"--conntrack-max-per-core", "0"}}
}

func (o Options) bin(name string) string { return filepath.Join(o.Bin, name) }

// containerdConfig is the node's containerd: the Pods' network from a fixed CNI configuration
// (cniConfig) on the host's bridge.
func (o Options) containerdConfig(restrictOOMScoreAdj bool) string {
	return realnode.Containerd{
		Root: o.path("containerd", "root"), State: o.path("containerd", "state"), Socket: o.containerdSock(),
		CNIConfDir: o.path("cni"), RestrictOOMScoreAdj: restrictOOMScoreAdj, Runc: o.Runc,
	}.Config()
}

// cniConfig puts the Pods on the bridge, which holds the node's address (their gateway).
func (o Options) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %[1]q,
  "plugins": [
    {"type": "bridge", "bridge": %[2]q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %[3]q, "gateway": %[4]q}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, cniNetwork, bridge, o.PodCIDR.String(), o.nodeIP().String())
}

// kubeletConfig is the node's KubeletConfiguration: its Pods under kubeletCgrp, which the
// cluster removes when it stops, and a serving certificate of the cluster's CA.
func (o Options) kubeletConfig(p ports) string {
	return realnode.Kubelet{
		CgroupRoot: kubeletCgrp, ContainerdSocket: o.containerdSock(), Address: o.nodeIP().String(),
		Port: p.kubelet, HealthzPort: p.kubeletHealthz, ClientCAFile: o.path("pki", "ca.crt"), PodLogsDir: o.podLogsDir(),
		Extra: fmt.Sprintf("tlsCertFile: %s\ntlsPrivateKeyFile: %s\n", o.path("pki", "kubelet-serving.crt"), o.path("pki", "kubelet-serving.key")),
	}.Config()
}
