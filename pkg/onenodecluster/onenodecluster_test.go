package onenodecluster

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvDefaultsAndAddresses(t *testing.T) {
	root := t.TempDir()
	o, err := FromEnv(root, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.Dir != filepath.Join(root, "_output", "cluster") || o.Bin != filepath.Join(root, "_output", "bin") {
		t.Errorf("dirs: %s %s", o.Dir, o.Bin)
	}
	if o.nodeIP().String() != "10.244.0.1" || o.kubernetesServiceIP().String() != "10.97.0.1" {
		t.Errorf("node %s, kubernetes Service %s", o.nodeIP(), o.kubernetesServiceIP())
	}
	// No archive yet: the pattern itself, which preflight names ("run make images").
	if want := []string{filepath.Join(root, "_output", "images", "*.oci.tar")}; !slices.Equal(o.Images, want) {
		t.Errorf("images %v, want %v", o.Images, want)
	}
	o, err = FromEnv(root, env(map[string]string{"POD_CIDR": "10.50.3.0/24", "SERVICE_CIDR": "10.60.0.0/16", "IMAGES": " /a.tar  /b.tar ", "CLUSTER_DIR": "rel"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.nodeIP().String() != "10.50.3.1" || o.kubernetesServiceIP().String() != "10.60.0.1" || !slices.Equal(o.Images, []string{"/a.tar", "/b.tar"}) || !filepath.IsAbs(o.Dir) {
		t.Errorf("node %s, Service %s, images %v, dir %s", o.nodeIP(), o.kubernetesServiceIP(), o.Images, o.Dir)
	}
}

func TestFromEnvRefusesBadNetworks(t *testing.T) {
	for _, e := range []map[string]string{
		{"POD_CIDR": "10.244.0.1"}, {"POD_CIDR": "fd00::/64"}, {"SERVICE_CIDR": "10.97.0.0/31"},
		{"POD_CIDR": "10.0.0.0/8", "SERVICE_CIDR": "10.97.0.0/24"},
	} {
		if _, err := FromEnv(t.TempDir(), env(e)); err == nil {
			t.Errorf("%v: accepted", e)
		}
	}
}

// The kubelet serves on the node's address with a certificate naming it, trusts the cluster's
// CA, runs its Pods under its own cgroup root (which the clean-up removes) and reaches the
// cluster's containerd; kube-apiserver's certificate names every address Pods and scripts use.
func TestNodeConfiguration(t *testing.T) {
	o, _ := FromEnv("/repo", env(map[string]string{"CLUSTER_DIR": "/c", "RUNC": "/usr/sbin/runc"}))
	p := ports{kubelet: 20001, kubeletHealthz: 20002, etcd: 20003, kubeAPIServer: 20004}
	k := o.kubeletConfig(p)
	for _, want := range []string{"address: 10.244.0.1", "port: 20001", "healthzPort: 20002", "cgroupRoot: /butler-cluster",
		"containerRuntimeEndpoint: unix:///c/containerd/containerd.sock", "tlsCertFile: /c/pki/kubelet-serving.crt",
		"clientCAFile: /c/pki/ca.crt", "podLogsDir: /c/pod-logs", `nodefs.available: "0%"`, "failCgroupV1: false"} {
		if !strings.Contains(k, want) {
			t.Errorf("kubelet configuration lacks %q:\n%s", want, k)
		}
	}
	c := o.containerdConfig(true)
	for _, want := range []string{`address = "/c/containerd/containerd.sock"`, `conf_dir = "/c/cni"`, `BinaryName = "/usr/sbin/runc"`,
		"restrict_oom_score_adj = true", `sandbox_image = "registry.k8s.io/pause:3.10"`} {
		if !strings.Contains(c, want) {
			t.Errorf("containerd configuration lacks %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "conf_template") {
		t.Errorf("a template would replace the fixed CNI configuration:\n%s", c)
	}
	if cni := o.cniConfig(); !strings.Contains(cni, `"subnet": "10.244.0.0/24", "gateway": "10.244.0.1"`) || !strings.Contains(cni, `"bridge": "butler0"`) {
		t.Errorf("CNI configuration:\n%s", cni)
	}
	if got := o.etcdURL(p); got != "http://10.244.0.1:20003" {
		t.Errorf("etcd URL %s", got)
	}
	api := o.kubeAPIServer(p).args
	if i := slices.Index(api, "--bind-address"); i < 0 || api[i+1] != "10.244.0.1" || !slices.Contains(api, "10.97.0.0/24") {
		t.Errorf("kube-apiserver: %v", api)
	}
}

// A second start keeps the CAs (the clients' trust) and the leaves; a leaf that no longer names
// the node's address (POD_CIDR changed) is made again, signed by the same CA.
func TestCertificatesKeptAcrossStarts(t *testing.T) {
	dir := t.TempDir()
	o, _ := FromEnv("/repo", env(map[string]string{"CLUSTER_DIR": dir}))
	ca1, leaves1, err := ensureCertificates(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "sa.key", "sa.pub", "kube-apiserver.crt", "kubelet-client.key", "admin.crt"} {
		if _, err := os.Stat(filepath.Join(dir, "pki", f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if got := leaves1["kubelet-client"].Cert.Subject; got.CommonName != "system:node:butler-node" || !slices.Equal(got.Organization, []string{"system:nodes"}) {
		t.Errorf("the kubelet's identity: %v", got)
	}
	o2, _ := FromEnv("/repo", env(map[string]string{"CLUSTER_DIR": dir, "POD_CIDR": "10.245.0.0/24"}))
	ca2, leaves2, err := ensureCertificates(o2)
	if err != nil {
		t.Fatal(err)
	}
	if !ca2.Cert.Equal(ca1.Cert) || !leaves2["admin"].Cert.Equal(leaves1["admin"].Cert) {
		t.Error("a second start replaced the CA or a leaf that still fits")
	}
	serving := leaves2["kube-apiserver"].Cert
	if !slices.ContainsFunc(serving.IPAddresses, net.ParseIP("10.245.0.1").Equal) || serving.CheckSignatureFrom(ca1.Cert) != nil {
		t.Errorf("kube-apiserver's certificate after POD_CIDR changed: %v", serving.IPAddresses)
	}
	if err := writeKubeconfigs(o2, "https://10.245.0.1:20000", ca2, leaves2); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.Parse(leaves2["admin"].CertPEM, leaves2["admin"].KeyPEM); err != nil {
		t.Error(err)
	}
}

func TestKubeletChainsRemoved(t *testing.T) {
	rules := `-P INPUT ACCEPT
-N KUBE-FIREWALL
-N KUBE-KUBELET-CANARY
-A INPUT -j KUBE-FIREWALL
-A OUTPUT -m conntrack ! --ctstate RELATED,ESTABLISHED -m comment --comment "kubernetes firewall for dropping marked packets" -j KUBE-FIREWALL
-A OUTPUT -j KUBE-SERVICES
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -j DROP`
	got := rulesJumpingTo(rules, kubeletChains)
	want := [][]string{{"-D", "INPUT", "-j", "KUBE-FIREWALL"},
		{"-D", "OUTPUT", "-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED", "-m", "comment", "--comment", "kubernetes firewall for dropping marked packets", "-j", "KUBE-FIREWALL"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestBridgePorts(t *testing.T) {
	out := "12: veth1a2b@if3: <BROADCAST,MULTICAST,UP> mtu 1500 master butler0 state UP\n13: vethc3d4@if3: <BROADCAST> mtu 1500 master butler0\n"
	if got := linkNames(out); !slices.Equal(got, []string{"veth1a2b", "vethc3d4"}) {
		t.Errorf("%v", got)
	}
}

// The marks find the node's and a killed run's processes by their own arguments, and not the
// host processes hack/test-cluster.sh runs under CLUSTER_DIR/host, which it stops itself.
func TestLeftoverMarks(t *testing.T) {
	o, _ := FromEnv("/repo", env(map[string]string{"CLUSTER_DIR": "/c"}))
	marks := append(o.nodeMarks(), o.controlPlaneMarks()...)
	matches := func(args ...string) bool {
		cmdline := strings.Join(args, "\x00") + "\x00"
		return slices.ContainsFunc(marks, func(m string) bool { return strings.Contains(cmdline, m) })
	}
	for _, c := range []component{o.etcd(ports{}), o.kubeAPIServer(ports{}), o.controllerManager(ports{}), o.scheduler(ports{}), o.containerd(), o.kubelet(), o.kubeProxy(ports{})} {
		if !matches(c.args...) {
			t.Errorf("%s is not found by its command line", c.name)
		}
	}
	if !matches("/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "x", "-address", "/c/containerd/containerd.sock") {
		t.Error("a shim is not found")
	}
	for _, host := range [][]string{{"/repo/_output/bin/butler-localprovider", "--state-dir", "/c/host/state"},
		{"/repo/_output/bin/etcd", "--data-dir", "/c/host/steward-etcd", "--cert-file", "/c/pki/steward-etcd-server.crt"}} {
		if matches(host...) {
			t.Errorf("%v would be killed", host)
		}
	}
}
