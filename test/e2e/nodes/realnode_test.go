package nodes

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestRealNodeRunsPods is a TenantCluster on a local ProviderConfig whose nodeType is real: its
// workers are LocalMachines that each boot a kubelet, containerd and runc in a network namespace
// of their own on the nodes' bridge, joined with their bootstrap data as a kwok machine joins.
// The cluster is Ready with 2 Nodes; the project's echo image (built from source and imported,
// nothing pulled) runs as a Deployment of 2, one pod per node; kubectl logs, exec and
// port-forward reach the pods with the minted kubeconfig (the tenant's kube-apiserver, its
// kubelet client certificate, and the kubelets' serving certificates of the tenant CA, issued
// through CSRs the provider approved for each node's own name and address and for nothing a
// node or a user asks beyond); a pod reaches the other node's pod directly, through a ClusterIP Service (kube-proxy),
// by the Service's DNS name (the provider's CoreDNS), and the tenant's API through the
// kubernetes Service; scale 2→3 adds a real node that runs a pod; a node whose kubelet is killed
// goes NotReady and its LocalMachine says so, and an impostor at its kubelet's address is refused
// by the tenant's kube-apiserver (logs, exec); hibernation removes every node and the wake brings
// them back; deleting the cluster leaves no process, mount, network namespace, cgroup, veth or
// iptables rule of the nodes (nor the nodes' bridge once every real-node test ended:
// realNodeParallel).
func TestRealNodeRunsPods(t *testing.T) {
	realNodeRequirements(t)
	realNodeParallel(t)
	ctx := context.Background()
	ns := framework.Namespace(t, "realnode")
	const name = "rn"
	started := time.Now()
	framework.MustApply(t, fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: ProviderConfig
metadata: {name: local, namespace: %s}
spec: {provider: local, local: {nodeType: real}}
---
`, ns)+framework.LocalClusterManifest(ns, name, framework.PinnedVersion, bootstrap.OSTalos, 2))
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "tc", name, "-n", ns, "--wait=false") })
	tc := framework.WaitReady(t, ns, name, 2, 4*time.Minute)
	t.Logf("TenantCluster Ready with 2 real nodes %s after it was applied", time.Since(started).Round(100*time.Millisecond))
	kubeconfig, tenant := framework.MintKubeconfig(t, ns, name)

	// The echo image, one pod on each node.
	pods := realNodeEcho(t, tenant, 2)
	nodes := make([]string, 0, len(pods))
	for n := range pods {
		nodes = append(nodes, n)
	}
	first, second := pods[nodes[0]], pods[nodes[1]]
	t.Logf("memory of real node %s with one echo pod: %s", nodes[0], realNodePSS(t, realNodeMachine(t, tenant, nodes[0])))

	realNodeServingCertificates(t, kubeconfig, tenant, nodes[0], nodes[1])
	// logs and exec through the tenant's kube-apiserver, with the minted kubeconfig.
	out, err := framework.KubectlAs(t, kubeconfig, "", "logs", first)
	if err != nil || !strings.Contains(out, "serving on :8080") {
		t.Errorf("kubectl logs: %v: %s", err, out)
	}
	out, err = framework.KubectlAs(t, kubeconfig, "", "exec", second, "--", "/usr/local/bin/echo", "-say", "hello from "+second)
	// (kubectl may print a warning of its websocket client before the output)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "hello from "+second) {
		t.Errorf("kubectl exec: %v: %s", err, out)
	}

	kubeconfig, tenant = realNodeRotation(t, ns, name, kubeconfig, tenant, first, second)

	realNodeKubeletRefusesStrangers(t, tenant, nodes[0])
	realNodePodReachesNoHostService(t, kubeconfig, first)
	realNodeNetworking(t, kubeconfig, tenant, first, second)
	// A pod reaches its tenant's API through the kubernetes Service, with its ServiceAccount.
	realNodeGet(t, kubeconfig, first, "https://kubernetes.default.svc/api", `"APIVersions"`)
	realNodePortForward(t, kubeconfig, second)

	// Scale 2→3: a third real node, where the Deployment's third pod runs and reaches the
	// others by the Service's name.
	framework.MustKubectl(t, "scale", "tc", name, "-n", ns, "--replicas=3")
	scaled := time.Now()
	framework.WaitReady(t, ns, name, 3, 3*time.Minute)
	t.Logf("scaled 2→3: Ready with 3 real nodes in %s", time.Since(scaled).Round(100*time.Millisecond))
	pods = realNodeEcho(t, tenant, 3)
	third := ""
	for n, p := range pods {
		if n != nodes[0] && n != nodes[1] {
			third = n
			realNodeGet(t, kubeconfig, p, "http://echo.default.svc.cluster.local/from-"+n, " /from-"+n)
		}
	}

	netns := realNodeNetns(t, realNodeMachine(t, tenant, third))
	realNodeKillKubelet(t, tenant, third)
	realNodeImpostorKubelet(t, kubeconfig, tenant, third, pods[third], netns)
	netns.Close()
	realNodeSleepAndWake(t, ns, name, tc.Status.TenantNamespace, tenant, 3)

	// Delete: the cluster's processes and every trace of its nodes go.
	cp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.DeleteCluster(t, ns, name, string(cp.GetUID()))
	// The cluster's LocalMachines are in its tenant namespace, and so are their directories.
	left := realNodeLeftoversOf(tc.Status.TenantNamespace)
	machines, _ := filepath.Glob(filepath.Join(framework.Plane.Dir, "machines", tc.Status.TenantNamespace, "*"))
	for _, m := range machines {
		left = append(left, realNodeStateLeft(tc.Status.TenantNamespace, filepath.Base(m))...)
	}
	if len(left) > 0 {
		t.Errorf("the deleted cluster's real nodes left:\n  %s", strings.Join(left, "\n  "))
	}
}

// realNodeSleepAndWake hibernates the cluster: its real nodes (machines of machineNS) go and
// leave nothing on the host; the wake brings workers real nodes back, which run the echo
// Deployment's pods again.
func realNodeSleepAndWake(t *testing.T, ns, name, machineNS string, tenant kubernetes.Interface, workers int32) {
	t.Helper()
	start := time.Now()
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":true}}}`)
	framework.WaitCluster(t, ns, name, 3*time.Minute, "Hibernated", framework.Hibernated)
	t.Logf("hibernate -> Hibernated in %s", time.Since(start).Round(100*time.Millisecond))
	if left := realNodeLeftoversOf(machineNS); len(left) > 0 {
		t.Errorf("the hibernated cluster's real nodes left:\n  %s", strings.Join(left, "\n  "))
	}
	start = time.Now()
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":false}}}`)
	framework.WaitReady(t, ns, name, workers, 4*time.Minute)
	realNodeEcho(t, tenant, workers)
	t.Logf("wake -> Ready with %d real nodes running the echo pods in %s", workers, time.Since(start).Round(100*time.Millisecond))
}

// realNodeRequirements skips (fails under make test-realnode, which provides everything) when
// what real nodes run is missing.
func realNodeRequirements(t *testing.T) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("BUTLER_E2E_REALNODE") != "" {
		skip = t.Fatalf
	}
	for _, tool := range []string{"containerd", "runc", "nsenter", "ip", "iptables-save"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip("%s is not installed (hack/install-cluster-deps.sh installs what real nodes need)", tool)
		}
	}
	root, _ := filepath.Abs("../../..")
	for _, f := range []string{"_output/bin/kubelet", "_output/node-images/pause.oci.tar", "_output/node-images/echo.oci.tar", "_output/node-images/coredns.oci.tar"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			skip("%s is missing: hack/build-kube.sh kubelet kube-proxy and hack/build-node-images.sh build what real nodes run", f)
		}
	}
}

// realNodeEcho runs the echo image as the Deployment echo of replicas pods, at most one per node
// (required anti-affinity), behind the Service echo, and waits until every pod runs. It returns
// the pods by node.
func realNodeEcho(t *testing.T, tenant kubernetes.Interface, replicas int32) map[string]string {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "echo"}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "echo", Image: "localhost/butler-echo:v1", ImagePullPolicy: corev1.PullNever}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: corev1.LabelHostname}}}}}}}}
	deployments := tenant.AppsV1().Deployments(metav1.NamespaceDefault)
	if _, err := deployments.Create(ctx, deploy, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = deployments.Patch(ctx, "echo", types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	} else if _, err := tenant.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: labels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := map[string]string{}
	framework.WaitFor(t, 2*time.Minute, fmt.Sprintf("%d echo pods Running, one per node", replicas), func() (bool, string) {
		l, err := tenant.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=echo"})
		if err != nil {
			return false, err.Error()
		}
		clear(pods)
		var states []string
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				pods[p.Spec.NodeName] = p.Name
			}
			states = append(states, fmt.Sprintf("%s on %q: %s %s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Message))
		}
		return len(pods) == int(replicas) && len(l.Items) == int(replicas), strings.Join(states, "; ")
	})
	return pods
}

// realNodeKubeletRefusesStrangers attacks the kubelet's API on the node's address, from the
// host, without a client certificate and with one of another CA (the management cluster's
// admin): 401 both times.
func realNodeKubeletRefusesStrangers(t *testing.T, tenant kubernetes.Interface, node string) {
	t.Helper()
	nodeIP := realNodeIP(t, tenant, node)
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
			t.Errorf("kubelet API of %s at %s with %s: %s, want 401", node, nodeIP, who, resp.Status)
		}
	}
}

// realNodePodReachesNoHostService attacks services of the host listening on every address from
// a pod, through the host's end of the nodes' bridge or the host's own address: TCP (a
// connection) and UDP (a datagram needs no answer to arrive). Nothing may arrive.
func realNodePodReachesNoHostService(t *testing.T, kubeconfig, pod string) {
	t.Helper()
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
		_, _ = framework.KubectlAs(t, kubeconfig, "", "exec", pod, "--", "/usr/local/bin/echo", "-send", net.JoinHostPort(hostIP, udpPort))
		_, _ = framework.KubectlAs(t, kubeconfig, "", "exec", pod, "--", "/usr/local/bin/echo", "-get", "http://"+net.JoinHostPort(hostIP, tcpPort)+"/")
	}
	time.Sleep(time.Second)
	for len(arrived) > 0 {
		t.Errorf("a pod on a real node reached a service of the host: %s", <-arrived)
	}
}

// realNodeNetworking: pod from reaches pod to on the other node directly (each node routes the
// other's pod CIDR), through the ClusterIP Service echo (kube-proxy on each node: both pods
// answer in a few tries) and by the Service's DNS name (the provider's CoreDNS behind kube-dns).
func realNodeNetworking(t *testing.T, kubeconfig string, tenant kubernetes.Interface, from, to string) {
	t.Helper()
	ctx := context.Background()
	peer, err := tenant.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, to, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	realNodeGet(t, kubeconfig, from, "http://"+net.JoinHostPort(peer.Status.PodIP, "8080")+"/direct", to+" /direct")
	svc, err := tenant.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "echo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/via-service", "http://echo.default.svc.cluster.local/via-dns"} {
		answered := map[string]bool{}
		framework.WaitFor(t, 2*time.Minute, "both pods to answer at "+url+" from "+from, func() (bool, string) {
			out, err := framework.KubectlAs(t, kubeconfig, "", "exec", from, "--", "/usr/local/bin/echo", "-get", url)
			if err == nil {
				answered[strings.Fields(out + " -")[0]] = true
			}
			return answered[from] && answered[to], fmt.Sprint(err, out, answered)
		})
	}
}

// realNodeGet waits until pod fetches url (from inside, with the echo image) and the answer
// holds want.
func realNodeGet(t *testing.T, kubeconfig, pod, url, want string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, pod+" to reach "+url, func() (bool, string) {
		out, err := framework.KubectlAs(t, kubeconfig, "", "exec", pod, "--", "/usr/local/bin/echo", "-get", url)
		return err == nil && strings.Contains(out, want), fmt.Sprint(err, out)
	})
}

// realNodeMachine is the LocalMachine (namespace/name) whose real node is the Node node.
func realNodeMachine(t *testing.T, tenant kubernetes.Interface, node string) string {
	t.Helper()
	n, err := tenant.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key, ok := strings.CutPrefix(n.Spec.ProviderID, "local://")
	if !ok || strings.Count(key, "/") != 1 {
		t.Fatalf("Node %s: providerID %q is no local machine's", node, n.Spec.ProviderID)
	}
	return key
}

// realNodeKillKubelet kills the kubelet of node: its LocalMachine says so at once, its Node goes
// NotReady (the tenant's node lifecycle controller, after its grace period).
func realNodeKillKubelet(t *testing.T, tenant kubernetes.Interface, node string) {
	t.Helper()
	ctx := context.Background()
	key := realNodeMachine(t, tenant, node)
	killed := false
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, _ := os.ReadFile(f)
		args := strings.Split(string(data), "\x00")
		if strings.HasSuffix(args[0], "/kubelet") && strings.Contains(string(data), "/machines/"+key+"/") {
			if err := exec.Command("kill", "-KILL", filepath.Base(filepath.Dir(f))).Run(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	if !killed {
		t.Fatalf("found no kubelet process of %s (%s)", node, key)
	}
	ns, name, _ := strings.Cut(key, "/")
	framework.WaitFor(t, 30*time.Second, key+"'s LocalMachine to say its kubelet exited", func() (bool, string) {
		u, err := framework.DynamicClient(t).Resource(external.LocalMachineGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
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
	framework.WaitFor(t, 2*time.Minute, "Node "+node+" to be NotReady", func() (bool, string) {
		n, err := tenant.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
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
	cfg := framework.Plane.Config
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

// realNodePSS sums the proportional set size of the real node of a LocalMachine (namespace/name):
// its kubelet, kube-proxy and containerd (found by the machine's directory in their command
// lines), containerd's shims (by the socket in its configuration) and what runs under them (its
// pods).
func realNodePSS(t *testing.T, key string) string {
	t.Helper()
	kib, n := realNodePSSKiB(t, key)
	return fmt.Sprintf("%.1f MiB PSS over %d processes", float64(kib)/1024, n)
}

// realNodePSSKiB is realNodePSS's sum, in KiB, and how many processes it counted.
func realNodePSSKiB(t *testing.T, key string) (int64, int) {
	t.Helper()
	dir := "/machines/" + key + "/"
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
				v, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					t.Fatalf("smaps_rollup %q: %v", line, err)
				}
				kib += v
			}
		}
	}
	return kib, len(counted)
}

// realNodeStateLeft names the files left in the state directories of the deleted machines of
// namespace ns (their node client keys and kubeconfigs among them).
func realNodeStateLeft(ns string, machines ...string) []string {
	var left []string
	for _, m := range machines {
		dir := filepath.Join(framework.Plane.Dir, "machines", ns, m)
		if _, err := os.Lstat(dir); err == nil {
			left = append(left, "machine state "+dir+": "+strings.Join(filesUnder(dir, 5), " "))
		}
	}
	return left
}
