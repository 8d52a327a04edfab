// Command butler-cluster runs `make cluster`'s one-node Kubernetes cluster on this machine
// (pkg/onenodecluster), for installing the chart as a platform team would; hack/test-cluster.sh
// runs it too. Run from the repository's root, as root; configured by the environment (--help
// lists it). It writes CLUSTER_DIR/admin.kubeconfig once the node is Ready. SIGINT or SIGTERM
// stops everything and cleans up; it exits 128 plus the signal's number then, and 1 when the
// cluster failed to start or one of its processes exited.
package main

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/onenodecluster"
)

const usage = `Usage: butler-cluster (run from the repository's root, as root)

A one-node Kubernetes cluster on this machine: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, Debian's containerd, a kubelet and kube-proxy, Pods on the bridge butler0.
Needs: apt-get install containerd runc containernetworking-plugins iptables conntrack
Environment (all optional):
  CLUSTER_DIR    state, certificates, logs (default _output/cluster); admin.kubeconfig and
                 cluster.env (NODE_IP, ETCD_URL, KUBE_APISERVER_URL) there while it runs
  POD_CIDR       default 10.244.0.0/24 (its first address is the node's, on the bridge)
  SERVICE_CIDR   default 10.97.0.0/24 (its first address is the kubernetes Service)
  IMAGES         image archives to import (default: _output/images/*.oci.tar)
  BIN            where the binaries are (default _output/bin; built when missing)
  RUNC           runc's binary (default runc on PATH)
`

func main() { process.Main("cluster", usage, onenodecluster.FromEnv, onenodecluster.Run) }
