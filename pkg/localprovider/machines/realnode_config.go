package machines

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

// PauseImage is the sandbox image every real node's containerd uses.
const PauseImage = realnode.PauseImage

// nodeLayout is where one real node keeps its files. State goes under dir (the machine's state
// directory); sockets go under run, a short path, because a unix socket's path has at most 107
// bytes: the kubelet's root directory too, where it makes the pod-resources socket (a
// MachineDeployment's machine names made it too long under dir, and the kubelet exited).
type nodeLayout struct {
	id  string // short, unique per machine: names the netns, the host's veth and the cgroup
	dir string
	run string
}

func (l nodeLayout) netnsName() string        { return "butler-" + l.id }
func (l nodeLayout) netnsPath() string        { return filepath.Join("/var/run/netns", l.netnsName()) }
func (l nodeLayout) hostVeth() string         { return "bn" + l.id }
func (l nodeLayout) cgroupRoot() string       { return "/butler-nodes/" + l.id }
func (l nodeLayout) containerdDir() string    { return filepath.Join(l.dir, "containerd") }
func (l nodeLayout) containerdConfig() string { return filepath.Join(l.containerdDir(), "config.toml") }
func (l nodeLayout) containerdSock() string   { return filepath.Join(l.run, "containerd.sock") }
func (l nodeLayout) cniDir() string           { return filepath.Join(l.dir, "cni") }
func (l nodeLayout) kubeletDir() string       { return filepath.Join(l.run, "kubelet") }
func (l nodeLayout) kubeletConfig() string    { return filepath.Join(l.dir, "kubelet-config.yaml") }
func (l nodeLayout) podLogsDir() string       { return filepath.Join(l.dir, "pod-logs") }
func (l nodeLayout) log(name string) string   { return filepath.Join(l.dir, name+".log") }

// kubeletCertDir holds the kubelet's serving certificate and key (its --cert-dir; the kubelet's
// own default is the host's /var/lib/kubelet/pki, whatever its --root-dir, which every node
// shared and none removed).
func (l nodeLayout) kubeletCertDir() string { return filepath.Join(l.kubeletDir(), "pki") }

// containerdConfig is a node's containerd configuration: CRI's CNI configuration is rendered
// from a template once the kubelet hands it the Node's pod CIDR (the kube-controller-manager
// allocates one per Node). The bridge in the template is inside the node's network namespace,
// where containerd runs.
func containerdConfig(l nodeLayout, restrictOOMScoreAdj bool) string {
	return realnode.Containerd{
		Root: filepath.Join(l.containerdDir(), "root"), State: filepath.Join(l.containerdDir(), "state"),
		Socket: l.containerdSock(), CNIConfDir: l.cniDir(), CNITemplate: filepath.Join(l.containerdDir(), "cni.template"),
		RestrictOOMScoreAdj: restrictOOMScoreAdj,
	}.Config()
}

// cniTemplate is the node's CNI configuration (containerd's conf_template): a bridge of its own
// in the node's network namespace holding the Node's pod CIDR, the node the gateway. Pods
// reach other nodes' pods through the routes the provider sets in each node's namespace.
const cniTemplate = `{
  "cniVersion": "0.4.0",
  "name": "butler-node",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "{{.DataDir}}",
              "ranges": [{{range $i, $r := .PodCIDRRanges}}{{if $i}},{{end}}[{"subnet": "{{$r}}"}]{{end}}],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`

// renderCNITemplate fills in what containerd's template does not know: where host-local keeps
// its leases (inside the node's directory, not the host's /var/lib/cni).
func renderCNITemplate(l nodeLayout) string {
	return strings.ReplaceAll(cniTemplate, "{{.DataDir}}", filepath.Join(l.dir, "cni-ipam"))
}

// kubeletConfig is the node's KubeletConfiguration. It listens on the node's own address (the
// tenant's kube-apiserver reaches it there for logs, exec and port-forward with its kubelet
// client certificate, which the tenant CA signed) with a serving certificate it asks for through
// a CSR (serverTLSBootstrap: the provider approves it, the tenant CA signs it).
func kubeletConfig(l nodeLayout, nodeIP, caFile, providerID string, clusterDNS []string, clusterDomain string) string {
	extra := fmt.Sprintf("providerID: %q\nserverTLSBootstrap: true\nclusterDomain: %s\n", providerID, cmp.Or(clusterDomain, "cluster.local"))
	if len(clusterDNS) > 0 {
		extra += "clusterDNS: [" + strings.Join(clusterDNS, ", ") + "]\n"
	}
	return realnode.Kubelet{
		CgroupRoot: l.cgroupRoot(), ContainerdSocket: l.containerdSock(), Address: nodeIP,
		Port: kubeletPort, HealthzPort: kubeletHealthzPort, ClientCAFile: caFile, PodLogsDir: l.podLogsDir(), Extra: extra,
	}.Config()
}
