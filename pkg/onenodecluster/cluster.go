package onenodecluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

// cluster is one run of the cluster.
type cluster struct {
	o            Options
	log          func(format string, args ...any)
	procs        *procs
	ports        ports
	pauseArchive string
	client       kubernetes.Interface
	nodeStart    time.Time
}

// Run checks the host, builds what is missing, starts the cluster, writes admin.kubeconfig once
// the node is Ready and runs until ctx ends or one of its processes exits; then it stops
// everything and cleans up. It returns the error that ended the cluster (logged before the
// stop, so that it reads first); ctx's error when ctx ended it.
func Run(ctx context.Context, o Options, log func(format string, args ...any)) error {
	c := &cluster{o: o, log: log, procs: &procs{Group: process.Group{LogDir: o.logsDir()}, log: log}}
	if err := c.prepare(ctx); err != nil {
		log("%v", err)
		return err
	}
	err := c.start(ctx)
	if err == nil {
		c.banner()
		err = c.supervise(ctx)
	}
	if ctx.Err() == nil {
		log("%v", err)
	}
	c.stop(context.WithoutCancel(ctx))
	return err
}

// prepare checks the host and builds the binaries and the pause image when missing; nothing
// is started yet, so a failure here leaves nothing to clean.
func (c *cluster) prepare(ctx context.Context) error {
	if err := c.o.preflight(); err != nil {
		return err
	}
	for _, dir := range []string{c.o.pkiDir(), c.o.logsDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return c.ensureBinaries(ctx)
}

// preflight checks what the cluster needs of the host: root, Debian's packages, the images.
func (o Options) preflight() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (containerd, kubelet, iptables, the bridge)")
	}
	const install = "apt-get install containerd runc containernetworking-plugins iptables conntrack"
	for _, tool := range []string{"containerd", "ctr", cmp.Or(o.Runc, "runc"), "iptables", "conntrack", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed: %s", tool, install)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return errors.New("the CNI plugins are needed in /usr/lib/cni: apt-get install containernetworking-plugins")
	}
	for _, archive := range o.Images {
		if _, err := os.Stat(archive); err != nil {
			return fmt.Errorf("no image archive %s: run make images", archive)
		}
	}
	return nil
}

// ensureBinaries builds the control plane's binaries, the kubelet and kube-proxy when BIN lacks
// them, and the pause image (hack/build-node-images.sh, which keeps an archive up to date).
func (c *cluster) ensureBinaries(ctx context.Context) error {
	start := time.Now()
	missing := func(names ...string) bool {
		return slices.ContainsFunc(names, func(n string) bool { _, err := os.Stat(c.o.bin(n)); return err != nil })
	}
	if missing("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd") {
		if _, err := c.hack(ctx, "build-kube.sh"); err != nil {
			return err
		}
	}
	if missing("kubelet", "kube-proxy") {
		c.log("building the kubelet and kube-proxy (the first time takes minutes)")
		if _, err := c.hack(ctx, "build-kube.sh", "kubelet", "kube-proxy"); err != nil {
			return err
		}
	}
	out, err := c.hack(ctx, "build-node-images.sh")
	if err != nil {
		return err
	}
	c.pauseArchive = strings.TrimSpace(out)
	c.log("binaries ready in %d s", int(time.Since(start).Seconds()))
	return nil
}

// hack runs a build script of hack/ with BIN and NODE_IMAGES_DIR set; its output is returned,
// its errors go to stderr.
func (c *cluster) hack(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.o.Root, "hack", script), args...)
	cmd.Dir, cmd.Stderr = c.o.Root, os.Stderr
	cmd.Env = append(os.Environ(), "BIN="+c.o.Bin, "NODE_IMAGES_DIR="+c.o.path("images"))
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/%s: %w", script, err)
	}
	return string(out), nil
}

// start brings the cluster up, step by step, and publishes it.
func (c *cluster) start(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		c.certificates,
		c.cleanLeftovers,
		c.network,
		c.startControlPlane,
		c.startContainerd,
		c.startNode,
		c.publish,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// certificates makes the certificates (or keeps those there), picks the ports and writes the
// kubeconfigs for them.
func (c *cluster) certificates(context.Context) error {
	_ = os.Remove(c.o.AdminKubeconfig())
	ca, leaves, err := ensureCertificates(c.o)
	if err != nil {
		return fmt.Errorf("certificates in %s: %w", c.o.pkiDir(), err)
	}
	if c.ports, err = pickPorts(); err != nil {
		return err
	}
	if err := writeKubeconfigs(c.o, c.o.kubeAPIServerURL(c.ports), ca, leaves); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.o.bootKubeconfig())
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	c.client, err = kubernetes.NewForConfig(cfg)
	return err
}

// clusterPorts is where the cluster's ports come from: below hack/test-cluster.sh's host
// processes (25000-29000) and the tenants' range (30000-32000).
var clusterPorts = localports.Range{Min: 20000, Max: 24999}

func pickPorts() (ports, error) {
	alloc, err := localports.NewAllocator(clusterPorts)
	if err != nil {
		return ports{}, err
	}
	var p ports
	for _, port := range []*int{&p.etcd, &p.etcdPeer, &p.kubeAPIServer, &p.controllerManager, &p.scheduler,
		&p.kubelet, &p.kubeletHealthz, &p.kubeProxyHealthz, &p.kubeProxyMetrics} {
		if *port, err = alloc.Allocate("cluster"); err != nil {
			return ports{}, err
		}
	}
	return p, nil
}

// cleanLeftovers removes what a run that was killed (SIGKILL) left: its processes and its node.
func (c *cluster) cleanLeftovers(ctx context.Context) error {
	realnode.KillProcesses(c.o.controlPlaneMarks()...)
	c.cleanNode(ctx)
	return nil
}

// network makes the Pods' bridge with the node's address, and the CNI configuration on it.
func (c *cluster) network(ctx context.Context) error {
	_ = realnode.Run(ctx, "ip", "link", "del", bridge)
	addr := fmt.Sprintf("%s/%d", c.o.nodeIP(), c.o.PodCIDR.Bits())
	for _, args := range [][]string{{"link", "add", bridge, "type", "bridge"}, {"addr", "add", addr, "dev", bridge}, {"link", "set", bridge, "up"}} {
		if err := realnode.Run(ctx, "ip", args...); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.o.path("cni"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.o.path("cni", "10-butler.conflist"), []byte(c.o.cniConfig()), 0o644)
}

// startControlPlane starts etcd, kube-apiserver (until it is ready), kube-controller-manager
// and kube-scheduler.
func (c *cluster) startControlPlane(ctx context.Context) error {
	start := time.Now()
	if err := c.procs.start(c.o.etcd(c.ports)); err != nil {
		return err
	}
	etcdHealth := fmt.Sprintf("http://127.0.0.1:%d/health", c.ports.etcd)
	if err := c.procs.WaitFor(ctx, "etcd", 30*time.Second, func(ctx context.Context) bool { return httpOK(ctx, etcdHealth) }); err != nil {
		return err
	}
	if err := c.procs.start(c.o.kubeAPIServer(c.ports)); err != nil {
		return err
	}
	if err := c.procs.WaitFor(ctx, "kube-apiserver", 120*time.Second, c.readyz); err != nil {
		return err
	}
	for _, comp := range []component{c.o.controllerManager(c.ports), c.o.scheduler(c.ports)} {
		if err := c.procs.start(comp); err != nil {
			return err
		}
	}
	c.log("control plane serving in %d s", int(time.Since(start).Seconds()))
	return nil
}

// healthClient asks etcd's /health: a hung request must not outlast a poll.
var healthClient = &http.Client{Timeout: 2 * time.Second}

func httpOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *cluster) readyz(ctx context.Context) bool {
	_, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// startContainerd starts the node's containerd and imports the pause image and IMAGES.
func (c *cluster) startContainerd(ctx context.Context) error {
	c.nodeStart = time.Now()
	if err := os.MkdirAll(c.o.containerdDir(), 0o755); err != nil {
		return err
	}
	config := c.o.containerdConfig(!realnode.CanLowerOOMScore())
	if err := os.WriteFile(c.o.path("containerd", "config.toml"), []byte(config), 0o644); err != nil {
		return err
	}
	if err := c.procs.start(c.o.containerd()); err != nil {
		return err
	}
	if err := c.procs.WaitFor(ctx, "containerd", 30*time.Second, func(ctx context.Context) bool {
		return realnode.Run(ctx, "ctr", "--address", c.o.containerdSock(), "version") == nil
	}); err != nil {
		return err
	}
	start := time.Now()
	if err := realnode.ImportImages(ctx, c.o.containerdSock(), append([]string{c.pauseArchive}, c.o.Images...)); err != nil {
		return err
	}
	out, _ := exec.CommandContext(ctx, "ctr", "--address", c.o.containerdSock(), "-n", "k8s.io", "images", "ls", "-q").Output()
	var names []string
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasPrefix(name, "sha256:") {
			names = append(names, name)
		}
	}
	c.log("images imported in %d s: %s", int(time.Since(start).Seconds()), strings.Join(names, " "))
	return nil
}

// startNode starts the kubelet (in a cgroup root of its own) and kube-proxy, until the node is Ready.
func (c *cluster) startNode(ctx context.Context) error {
	if err := realnode.CreateCgroup(kubeletCgrp); err != nil {
		return fmt.Errorf("the kubelet's cgroup %s: %w", kubeletCgrp, err)
	}
	if err := os.MkdirAll(c.o.kubeletDir(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(c.o.path("kubelet-config.yaml"), []byte(c.o.kubeletConfig(c.ports)), 0o644); err != nil {
		return err
	}
	for _, comp := range []component{c.o.kubelet(), c.o.kubeProxy(c.ports)} {
		if err := c.procs.start(comp); err != nil {
			return err
		}
	}
	if err := c.procs.WaitFor(ctx, "the node to be Ready", 180*time.Second, c.nodeReady); err != nil {
		return err
	}
	c.log("node Ready in %d s", int(time.Since(c.nodeStart).Seconds()))
	return nil
}

func (c *cluster) nodeReady(ctx context.Context) bool {
	n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// publish writes cluster.env, then admin.kubeconfig: a script waiting for the latter finds both.
func (c *cluster) publish(context.Context) error {
	env := fmt.Sprintf("NODE_IP=%s\nETCD_URL=%s\nKUBE_APISERVER_URL=%s\n", c.o.nodeIP(), c.o.etcdURL(c.ports), c.o.kubeAPIServerURL(c.ports))
	if err := os.WriteFile(c.o.ClusterEnv(), []byte(env), 0o644); err != nil {
		return err
	}
	return os.Rename(c.o.bootKubeconfig(), c.o.AdminKubeconfig())
}

func (c *cluster) banner() {
	tag, _ := exec.Command("git", "-C", c.o.Root, "describe", "--tags", "--always", "--dirty").Output()
	fmt.Fprintf(os.Stderr, `
One-node cluster is up (state and logs in %[1]s):
  kube-apiserver  %[2]s
  node            %[3]s (%[4]s), Pods in %[5]s on %[6]s, Services in %[7]s

  export KUBECONFIG=%[8]s
  helm install butler charts/butler-apiserver -n butler-system --create-namespace \
    --set-string image.tag=%[9]s --set image.pullPolicy=Never

Ctrl-C stops everything and cleans up.
`, c.o.Dir, c.o.kubeAPIServerURL(c.ports), node, c.o.nodeIP(), c.o.PodCIDR, bridge, c.o.ServiceCIDR,
		c.o.AdminKubeconfig(), strings.TrimSpace(string(tag)))
}

// supervise waits until ctx ends or a process exits.
func (c *cluster) supervise(ctx context.Context) error {
	for {
		if name := c.procs.Exited(); name != "" {
			return fmt.Errorf("%s exited; see %s", name, c.procs.LogFile(name))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// stop stops everything in order and removes what the cluster made, whatever fails: the node
// first, the control plane next, the bridge last (kube-apiserver serves on its address).
func (c *cluster) stop(ctx context.Context) {
	for _, f := range []string{c.o.AdminKubeconfig(), c.o.bootKubeconfig(), c.o.ClusterEnv()} {
		_ = os.Remove(f)
	}
	c.log("stopping")
	c.procs.stop("kube-proxy")
	c.procs.stop("kubelet")
	c.cleanNode(ctx)
	for _, name := range []string{"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"} {
		c.procs.stop(name)
	}
	_ = realnode.Run(ctx, "ip", "link", "del", bridge)
	c.log("stopped and cleaned up")
}
