package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// TestRealNodeRunsPods boots two LocalMachines of nodeType real: each a kubelet, containerd and
// runc in a network namespace of its own on the nodes' bridge, joined with its bootstrap data as
// a kwok machine joins. Both Nodes become Ready; the project's echo image (built from source and
// imported, nothing pulled) runs on each; kubectl logs and exec reach the pods through the
// tenant's kube-apiserver (its kubelet client certificate); a pod reaches the other node's pod
// directly and both through a ClusterIP Service (kube-proxy), and that Service by its DNS name
// (the provider's CoreDNS); kubectl port-forward reaches a pod; a node whose kubelet is killed goes
// NotReady and its LocalMachine says so; a paused (hibernated) cluster's nodes stop and leave
// nothing, and boot again on the wake; deleting the Machines leaves no process, mount,
// network namespace, cgroup, veth, bridge or iptables rule of the nodes.
func TestRealNodeRunsPods(t *testing.T) {
	// make test-realnode provides everything: there a missing piece is a failure, not a skip.
	skip := t.Skipf
	if os.Getenv("BUTLER_E2E_REALNODE") != "" {
		skip = t.Fatalf
	}
	for _, tool := range []string{"containerd", "runc", "nsenter", "ip", "iptables-save"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip("%s is not installed (hack/install-cluster-deps.sh installs what real nodes need)", tool)
		}
	}
	root, _ := filepath.Abs("../..")
	for _, f := range []string{"_output/bin/kubelet", "_output/node-images/pause.oci.tar", "_output/node-images/echo.oci.tar", "_output/node-images/coredns.oci.tar"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			skip("%s is missing: hack/build-kube.sh kubelet kube-proxy and hack/build-node-images.sh build what real nodes run", f)
		}
	}
	ctx := context.Background()
	started := time.Now()
	env := lmTenant(t, "realnode", "rn")
	nodes := []string{"rn-0", "rn-1"}
	for _, n := range nodes {
		env.machine(t, n, env.token, "real")
	}
	for _, n := range nodes {
		lmWaitNode(t, env.tenant, n, 3*time.Minute)
	}
	t.Logf("2 real nodes Ready %s after the cluster was applied", time.Since(started).Round(100*time.Millisecond))

	// The echo image on each node.
	for _, n := range nodes {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-" + n, Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": "echo"}},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "echo",
				Image: "localhost/butler-echo:v1", ImagePullPolicy: corev1.PullNever}},
				Tolerations: []corev1.Toleration{{Key: "butler.butlerlabs.dev/e2e", Operator: corev1.TolerationOpExists}}}}
		if _, err := env.tenant.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		lmWait(t, 2*time.Minute, "the echo pod on "+n+" to be Running", func() (bool, string) {
			p, err := env.tenant.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "echo-"+n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", fmt.Sprint(p.Status)
		})
	}

	t.Logf("memory of real node rn-0 with one echo pod: %s", realNodePSS(t, env.ns, "rn-0"))

	// logs and exec through the tenant's kube-apiserver, with the cluster's kubeconfig.
	kubeconfig := filepath.Join(t.TempDir(), "tenant.kubeconfig")
	if err := os.WriteFile(kubeconfig, env.tenantKubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kubectlAs(t, kubeconfig, "", "logs", "echo-rn-0")
	if err != nil || !strings.Contains(out, "serving on :8080") {
		t.Errorf("kubectl logs: %v: %s", err, out)
	}
	out, err = kubectlAs(t, kubeconfig, "", "exec", "echo-rn-1", "--", "/usr/local/bin/echo", "-say", "hello from rn-1")
	// (kubectl may print a warning of its websocket client before the output)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "hello from rn-1") {
		t.Errorf("kubectl exec: %v: %s", err, out)
	}

	// Attack: the kubelet's API on the node's address, from the host, without a client
	// certificate and with one of another CA (the management cluster's admin): 401 both times.
	rn0, err := env.tenant.CoreV1().Nodes().Get(ctx, "rn-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeIP := ""
	for _, a := range rn0.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	for who, certs := range map[string][]tls.Certificate{"no client certificate": nil, "another CA's admin": realNodeForeignCert(t)} {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, Certificates: certs}}} //nolint:gosec // the attacker does not verify the kubelet
		resp, err := c.Get("https://" + net.JoinHostPort(nodeIP, "10250") + "/pods")
		if err != nil {
			t.Errorf("kubelet API with %s: %v", who, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("kubelet API of rn-0 at %s with %s: %s, want 401", nodeIP, who, resp.Status)
		}
	}

	// Attack: a pod reaches services of the host listening on every address, through the host's
	// end of the nodes' bridge or the host's own address: TCP (a connection) and UDP (a datagram
	// needs no answer to arrive). Nothing may arrive.
	hostTCP, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostTCP.Close()
	hostUDP, err := net.ListenPacket("udp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostUDP.Close()
	arrived := make(chan string, 16)
	go func() {
		for {
			c, err := hostTCP.Accept()
			if err != nil {
				return
			}
			arrived <- "a TCP connection from " + c.RemoteAddr().String()
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nhost service\n"))
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := hostUDP.ReadFrom(buf)
			if err != nil {
				return
			}
			arrived <- fmt.Sprintf("a UDP datagram %q from %s", buf[:n], from)
		}
	}()
	tcpPort := fmt.Sprint(hostTCP.Addr().(*net.TCPAddr).Port)
	udpPort := fmt.Sprint(hostUDP.LocalAddr().(*net.UDPAddr).Port)
	for _, hostIP := range []string{"10.250.0.1", realNodeHostAddress(t)} {
		_, _ = kubectlAs(t, kubeconfig, "", "exec", "echo-rn-0", "--", "/usr/local/bin/echo", "-send", net.JoinHostPort(hostIP, udpPort))
		_, _ = kubectlAs(t, kubeconfig, "", "exec", "echo-rn-0", "--", "/usr/local/bin/echo", "-get", "http://"+net.JoinHostPort(hostIP, tcpPort)+"/")
	}
	time.Sleep(time.Second)
	for len(arrived) > 0 {
		t.Errorf("a pod on a real node reached a service of the host: %s", <-arrived)
	}

	// Pods reach each other across the nodes (each node routes the other's pod CIDR).
	peer, err := env.tenant.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "echo-rn-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + net.JoinHostPort(peer.Status.PodIP, "8080") + "/from-rn-0"
	var got string
	lmWait(t, 30*time.Second, "echo-rn-0 to reach echo-rn-1 at "+url, func() (bool, string) {
		got, err = kubectlAs(t, kubeconfig, "", "exec", "echo-rn-0", "--", "/usr/local/bin/echo", "-get", url)
		return err == nil && strings.Contains(got, "echo-rn-1 /from-rn-0"), fmt.Sprint(err, got)
	})

	// A ClusterIP Service in front of both (kube-proxy on each node): every answer comes from one
	// of them, and both answer in a few tries.
	svc, err := env.tenant.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svcURL := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/via-service"
	answered := map[string]bool{}
	lmWait(t, time.Minute, "both pods to answer at "+svcURL+" from echo-rn-0", func() (bool, string) {
		out, err := kubectlAs(t, kubeconfig, "", "exec", "echo-rn-0", "--", "/usr/local/bin/echo", "-get", svcURL)
		if err == nil {
			answered[strings.Fields(out + " -")[0]] = true
		}
		return answered["echo-rn-0"] && answered["echo-rn-1"], fmt.Sprint(err, out, answered)
	})

	// Cluster DNS: the provider runs CoreDNS (built from source) behind kube-dns at the kubelets'
	// clusterDNS; a pod on rn-0 reaches the Service by its name.
	dnsURL := "http://echo.default.svc.cluster.local/via-dns"
	lmWait(t, 2*time.Minute, "echo-rn-0 to reach "+dnsURL, func() (bool, string) {
		out, err := kubectlAs(t, kubeconfig, "", "exec", "echo-rn-0", "--", "/usr/local/bin/echo", "-get", dnsURL)
		return err == nil && strings.Contains(out, " /via-dns"), fmt.Sprint(err, out)
	})

	// port-forward through the tenant's kube-apiserver and the kubelet, with the cluster's kubeconfig.
	realNodePortForward(t, kubeconfig, "echo-rn-1")

	// Hibernation: the paused cluster's nodes stop and clean up, and boot again on the wake.
	mustKubectl(t, "patch", "-n", env.ns, "clusters.cluster.x-k8s.io", env.cluster, "--type=merge", "-p", `{"spec":{"paused":true}}`)
	lmWait(t, time.Minute, "the paused cluster's real nodes to be gone from the host", func() (bool, string) {
		left := realNodeLeftovers()
		return len(left) == 0, strings.Join(left, "; ")
	})
	mustKubectl(t, "patch", "-n", env.ns, "clusters.cluster.x-k8s.io", env.cluster, "--type=merge", "-p", `{"spec":{"paused":false}}`)
	woke := time.Now()
	for _, n := range nodes {
		lmWaitNode(t, env.tenant, n, 2*time.Minute)
	}
	lmWait(t, 2*time.Minute, "the echo pods to run again after the wake", func() (bool, string) {
		_, err := kubectlAs(t, kubeconfig, "", "exec", "echo-rn-0", "--", "/usr/local/bin/echo", "-get", svcURL)
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("woken: nodes Ready and the Service answering %s after the unpause", time.Since(woke).Round(100*time.Millisecond))

	// A node whose kubelet is killed: its LocalMachine says so at once, its Node goes NotReady
	// (the tenant's node lifecycle controller, after its grace period).
	killed := false
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, _ := os.ReadFile(f)
		args := strings.Split(string(data), "\x00")
		if strings.HasSuffix(args[0], "/kubelet") && strings.Contains(string(data), "/machines/"+env.ns+"/rn-1/") {
			pid := filepath.Base(filepath.Dir(f))
			if err := exec.Command("kill", "-KILL", pid).Run(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	if !killed {
		t.Fatal("found no kubelet process of rn-1")
	}
	lmWait(t, 30*time.Second, "rn-1's LocalMachine to say its kubelet exited", func() (bool, string) {
		u, err := env.dyn.Resource(external.LocalMachineGVR).Namespace(env.ns).Get(ctx, "rn-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Ready" && c["status"] == "False" && c["reason"] == "NodeDown" &&
				strings.Contains(fmt.Sprint(c["message"]), "kubelet exited") {
				return true, ""
			}
		}
		return false, fmt.Sprint(u.Object["status"])
	})
	lmWait(t, 2*time.Minute, "Node rn-1 to be NotReady", func() (bool, string) {
		n, err := env.tenant.CoreV1().Nodes().Get(ctx, "rn-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status != corev1.ConditionTrue, string(c.Status)
			}
		}
		return false, "no Ready condition"
	})

	// Delete: every trace of the nodes goes.
	mustKubectl(t, "delete", "-n", env.ns, "machines.cluster.x-k8s.io", "--all", "--wait=false")
	lmWait(t, 2*time.Minute, "the LocalMachines to be gone", func() (bool, string) {
		l, err := env.dyn.Resource(external.LocalMachineGVR).Namespace(env.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprint(len(l.Items), " left")
	})
	if _, err := env.tenant.CoreV1().Nodes().Get(ctx, "rn-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Node rn-0 after its Machine was deleted: %v", err)
	}
	if left := realNodeLeftovers(); len(left) > 0 {
		t.Errorf("the deleted real nodes left:\n  %s", strings.Join(left, "\n  "))
	}
}

// realNodePortForward forwards a local port to the pod's 8080 with kubectl port-forward and
// fetches a page through it from the pod.
func realNodePortForward(t *testing.T, kubeconfig, pod string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "port-forward", "--address", "127.0.0.1", "pod/"+pod, ":8080")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// "Forwarding from 127.0.0.1:<port> -> 8080"
	line := make([]byte, 256)
	n, _ := stdout.Read(line)
	f := strings.Fields(string(line[:n]))
	if len(f) < 3 || f[0] != "Forwarding" {
		t.Fatalf("kubectl port-forward printed %q %s", line[:n], stderr.String())
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://" + f[2] + "/via-port-forward")
	if err != nil {
		t.Fatalf("through kubectl port-forward to %s: %v", pod, err)
	}
	defer resp.Body.Close()
	body := make([]byte, 512)
	n, _ = resp.Body.Read(body)
	if !strings.Contains(string(body[:n]), pod+" /via-port-forward") {
		t.Errorf("through kubectl port-forward to %s: %s %q", pod, resp.Status, body[:n])
	}
}

// realNodeForeignCert is the management cluster's admin client certificate: valid, but of
// another CA than the tenant's.
func realNodeForeignCert(t *testing.T) []tls.Certificate {
	t.Helper()
	cfg := plane.config
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil && cfg.CertFile != "" {
		cert, err = tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	}
	if err != nil {
		t.Fatalf("the management cluster's admin certificate: %v", err)
	}
	return []tls.Certificate{cert}
}

// realNodeHostAddress is the host's address on its default route's interface.
func realNodeHostAddress(t *testing.T) string {
	t.Helper()
	c, err := net.Dial("udp", "1.1.1.1:9")
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// realNodePSS sums the proportional set size of a real node's processes: its kubelet, kube-proxy
// and containerd (found by the machine's directory in their command lines), containerd's shims
// (by the socket in its configuration) and what runs under them (its pods).
func realNodePSS(t *testing.T, ns, name string) string {
	t.Helper()
	dir := "/machines/" + ns + "/" + name + "/"
	procs, _ := filepath.Glob("/proc/[0-9]*")
	cmdline := func(p string) string {
		data, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		return strings.ReplaceAll(string(data), "\x00", " ")
	}
	var sock string
	counted := map[string]bool{}
	for _, p := range procs {
		cmd := cmdline(p)
		if !strings.Contains(cmd, dir) {
			continue
		}
		counted[p] = true
		if f := strings.Fields(cmd); len(f) > 2 && strings.HasSuffix(f[0], "containerd") && f[1] == "--config" {
			if conf, err := os.ReadFile(f[2]); err == nil {
				for _, line := range strings.Split(string(conf), "\n") {
					if strings.HasPrefix(strings.TrimSpace(line), "address = ") && sock == "" {
						sock = strings.Trim(strings.TrimPrefix(strings.TrimSpace(line), "address = "), `"`)
					}
				}
			}
		}
	}
	shims := map[string]bool{}
	for _, p := range procs {
		if sock != "" && strings.Contains(cmdline(p), "-address "+sock+" ") {
			counted[p], shims[filepath.Base(p)] = true, true
		}
	}
	// The shims' descendants: the pods' processes.
	for changed := true; changed; {
		changed = false
		for _, p := range procs {
			stat, _ := os.ReadFile(filepath.Join(p, "stat"))
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(f) > 1 && shims[f[1]] && !shims[filepath.Base(p)] {
				counted[p], shims[filepath.Base(p)], changed = true, true, true
			}
		}
	}
	var kib int64
	for p := range counted {
		data, _ := os.ReadFile(filepath.Join(p, "smaps_rollup"))
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				var v int64
				fmt.Sscan(f[1], &v)
				kib += v
			}
		}
	}
	return fmt.Sprintf("%.1f MiB PSS over %d processes", float64(kib)/1024, len(counted))
}

// realNodeLeftovers lists what real nodes of this plane left on the host.
func realNodeLeftovers() []string {
	var left []string
	machines := filepath.Join(plane.dir, "machines") + "/"
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, err := os.ReadFile(f)
		cmd := strings.ReplaceAll(string(data), "\x00", " ")
		if err == nil && (strings.Contains(cmd, machines) || strings.Contains(cmd, "/run/butler-nodes/")) {
			left = append(left, "process "+filepath.Base(filepath.Dir(f))+": "+cmd)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for _, m := range strings.Split(string(mounts), "\n") {
		if strings.Contains(m, machines) || strings.Contains(m, "/run/butler-nodes/") || strings.Contains(m, "/var/run/netns/butler-") {
			left = append(left, "mount "+m)
		}
	}
	if ns, _ := filepath.Glob("/var/run/netns/butler-*"); len(ns) > 0 {
		left = append(left, "network namespaces "+strings.Join(ns, " "))
	}
	if cg, _ := filepath.Glob("/sys/fs/cgroup/*/butler-nodes"); len(cg) > 0 {
		left = append(left, "cgroups "+strings.Join(cg, " "))
	}
	if links, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, l := range strings.Split(string(links), "\n") {
			if f := strings.Fields(l); len(f) > 1 && (strings.HasPrefix(f[1], "bn") || strings.HasPrefix(f[1], "butlern0")) {
				left = append(left, "link "+f[1])
			}
		}
	}
	if rules, err := exec.Command("iptables-save").Output(); err == nil {
		for _, r := range strings.Split(string(rules), "\n") {
			if strings.Contains(r, "butlern0") || strings.Contains(r, "10.250.") {
				left = append(left, "iptables "+r)
			}
		}
	}
	return left
}
