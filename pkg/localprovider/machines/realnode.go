package machines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/realnode"
)

// Node types of a LocalMachine (spec.nodeType): kwok (the default) registers a Node the
// tenant's kwok keeps Ready; real boots a kubelet that runs the pods.
const (
	NodeTypeKwok = "kwok"
	NodeTypeReal = "real"
)

// RealNodesOptions configure the real nodes.
type RealNodesOptions struct {
	// BinDir holds the kubelet (hack/build-kube.sh kubelet kube-proxy).
	BinDir string
	// Images are OCI archives imported into every node's containerd (the pause image first).
	Images []string
	// Bridge is the host's bridge the nodes' network namespaces are plugged into, Prefix its
	// network (the host takes the first address).
	Bridge string
	Prefix netip.Prefix
	// RunDir keeps the nodes' sockets and address leases (a short path).
	RunDir string
}

// RealNodes runs the real nodes of this host: per node a network namespace on the bridge, a
// containerd and a kubelet in it, under a cgroup of its own.
type RealNodes struct {
	opts RealNodesOptions
	// freeSpace is the space left for an unprivileged writer on the file system of path
	// (statfs; tests replace it).
	freeSpace func(path string) (uint64, error)
	// salt makes the nodes' ids differ between providers of one host (their state directories).
	salt   string
	bridge *bridgeNet
	// exited is called with a node's key when one of its processes exits.
	exited func(key string)
	// starts start a booted node's kubelet and kube-proxy, by name (tests replace them).
	starts map[string]func(ctx context.Context, key string, n *realNode, spec BootSpec) error

	mu    sync.Mutex
	base  context.Context
	nodes map[string]*realNode
}

type nodeProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
	// stopping says the provider stops it to start it again (Restart): its exit is no NodeDown.
	stopping bool
}

type realNode struct {
	layout nodeLayout
	ip     netip.Addr
	cancel context.CancelFunc
	procs  map[string]*nodeProc
	// down says which process exited, and how, once one did.
	down string
	// cluster and podCIDR place the node among its tenant cluster's nodes for pod routes.
	cluster, podCIDR string
	// serving says whether a serving certificate of this boot's kubelet was approved;
	// kubeletStarted is when that kubelet started (a request made before is an earlier one's).
	serving        bool
	kubeletStarted time.Time
	// restarting are the processes a restart stopped and has not started again yet, in order
	// (a port of theirs was taken): Resume starts them.
	restarting []string
	wg         sync.WaitGroup
}

// NewRealNodes returns the runner of the provider whose state is in stateDir; exited is told
// when a node's process exits.
func NewRealNodes(opts RealNodesOptions, stateDir string, exited func(key string)) *RealNodes {
	r := &RealNodes{opts: opts, salt: stateDir, freeSpace: statfsFree, exited: exited, base: context.Background(), nodes: map[string]*realNode{},
		bridge: &bridgeNet{name: opts.Bridge, prefix: opts.Prefix, leases: filepath.Join(opts.RunDir, "leases")}}
	r.starts = map[string]func(context.Context, string, *realNode, BootSpec) error{"kubelet": r.startKubelet, "kube-proxy": r.startKubeProxy}
	return r
}

func (r *RealNodes) setBase(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = ctx
}

// nodeID is a short name for the machine key, unique on this host in practice: it names the
// netns, the host's veth (at most 15 bytes) and the cgroup.
func (r *RealNodes) nodeID(key string) string {
	sum := sha256.Sum256([]byte(r.salt + "\x00" + key))
	return hex.EncodeToString(sum[:])[:10]
}

func (r *RealNodes) layout(key, machineDir string) nodeLayout {
	id := r.nodeID(key)
	return nodeLayout{id: id, dir: filepath.Join(machineDir, "node"), run: filepath.Join(r.opts.RunDir, id)}
}

// Address is the bridge address the node of key holds (leased now if it holds none).
func (r *RealNodes) Address(key string) (netip.Addr, error) {
	return r.bridge.lease(r.nodeID(key))
}

// Status says whether the node of key was booted by this process and, if so, what is down.
func (r *RealNodes) Status(key string) (booted bool, down string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[key]
	if !ok {
		return false, ""
	}
	return true, n.down
}

// BootSpec is what a node boots with: its state directory (the join's credentials are there),
// the endpoint the kubelet dials, and what the kubelet registers.
type BootSpec struct {
	// Cluster is the node's tenant cluster (namespace/name): its nodes route pods to each other
	// and sleep together.
	Cluster       string
	MachineDir    string
	Endpoint      string
	NodeName      string
	ProviderID    string
	ClusterDNS    []string
	ClusterDomain string
}

// Boot starts the node of key: netns, containerd with the images, kubelet. A node booted
// already is left as it is. Whatever fails is cleaned up before the error returns.
func (r *RealNodes) Boot(ctx context.Context, key string, spec BootSpec) (err error) {
	r.mu.Lock()
	if _, ok := r.nodes[key]; ok {
		r.mu.Unlock()
		return nil
	}
	base := r.base
	r.mu.Unlock()
	if err := r.Preflight(key, spec.MachineDir); err != nil {
		return err
	}
	l := r.layout(key, spec.MachineDir)
	ip, err := r.bridge.lease(l.id)
	if err != nil {
		return err
	}
	nodeCtx, cancel := context.WithCancel(base)
	n := &realNode{layout: l, ip: ip, cancel: cancel, procs: map[string]*nodeProc{}, cluster: spec.Cluster}
	defer func() {
		if err == nil {
			return
		}
		if isNoSpace(err) {
			err = outOfSpace(err, map[string]string{"the machine's state directory": spec.MachineDir, "the nodes' run directory": l.run})
		}
		r.stopNode(ctx, key, n)
	}()
	// A node of this machine left by a provider that was killed goes first.
	cleanNode(ctx, l)
	if err := r.startNetwork(ctx, nodeCtx, n, spec.Endpoint); err != nil {
		return fmt.Errorf("the node's network: %w", err)
	}
	if err := r.startContainerd(ctx, key, n); err != nil {
		return err
	}
	if err := r.startKubelet(ctx, key, n, spec); err != nil {
		return err
	}
	if err := r.startKubeProxy(ctx, key, n, spec); err != nil {
		return err
	}
	if err := writeBootSpec(spec); err != nil {
		return err
	}
	r.mu.Lock()
	r.nodes[key] = n
	r.mu.Unlock()
	klog.FromContext(ctx).Info("Real node booted", "node", spec.NodeName, "address", ip, "netns", l.netnsName())
	return nil
}

// Preflight says what the node of key lacks to boot, before it takes anything (an address, a
// join, a state directory): the node images, the kubelet and kube-proxy, and space (ErrNoSpace).
func (r *RealNodes) Preflight(key, machineDir string) error {
	for _, archive := range r.opts.Images {
		if _, err := os.Stat(archive); err != nil {
			return fmt.Errorf("the node image %s: %w (hack/build-node-images.sh builds it)", archive, err)
		}
	}
	for _, bin := range []string{"kubelet", "kube-proxy"} {
		if _, err := os.Stat(filepath.Join(r.opts.BinDir, bin)); err != nil {
			return fmt.Errorf("no %s: %w (hack/build-kube.sh kubelet kube-proxy builds it)", bin, err)
		}
	}
	return r.checkSpace(machineDir, r.layout(key, machineDir).run)
}

// bootSpecFile keeps, in the machine's state directory, what its node booted with.
const bootSpecFile = "node.json"

func writeBootSpec(spec BootSpec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(spec.MachineDir, bootSpecFile), data, 0o600)
}

// readBootSpec is what a node's first boot recorded in machineDir.
func readBootSpec(machineDir string) (BootSpec, error) {
	var spec BootSpec
	data, err := os.ReadFile(filepath.Join(machineDir, bootSpecFile))
	if err != nil {
		return spec, fmt.Errorf("the node's boot record: %w", err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return spec, fmt.Errorf("the node's boot record: %w", err)
	}
	spec.MachineDir = machineDir
	return spec, nil
}

// Reboot boots the node of key again with what its first boot recorded in machineDir.
func (r *RealNodes) Reboot(ctx context.Context, key, machineDir string) error {
	spec, err := readBootSpec(machineDir)
	if err != nil {
		return err
	}
	return r.Boot(ctx, key, spec)
}

func (r *RealNodes) startNetwork(ctx, nodeCtx context.Context, n *realNode, endpoint string) error {
	if err := r.bridge.ensure(ctx); err != nil {
		return err
	}
	if err := r.bridge.plug(ctx, n.layout, n.ip, endpoint); err != nil {
		return err
	}
	if isLoopbackEndpoint(endpoint) {
		if err := forwardEndpoint(nodeCtx, n.layout, endpoint, endpoint); err != nil {
			return err
		}
	}
	return forwardEndpoint(nodeCtx, n.layout, r.APIAddress(endpoint), endpoint)
}

// APIAddress is where every node serves its tenant's API whose endpoint is endpoint (host:port)
// to its pods: the nodes' API address, at the endpoint's port.
func (r *RealNodes) APIAddress(endpoint string) string {
	_, port, _ := net.SplitHostPort(endpoint)
	return net.JoinHostPort(r.bridge.apiIP().String(), port)
}

func (r *RealNodes) startContainerd(ctx context.Context, key string, n *realNode) error {
	l := n.layout
	for _, d := range []string{l.containerdDir(), l.cniDir(), l.run, l.podLogsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	files := map[string]string{
		l.containerdConfig():                             containerdConfig(l, !realnode.CanLowerOOMScore()),
		filepath.Join(l.containerdDir(), "cni.template"): renderCNITemplate(l),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	if err := r.start(key, n, "containerd", "containerd", "--config", l.containerdConfig()); err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, func() bool {
		return run(ctx, "ctr", "--address", l.containerdSock(), "version") == nil
	}); err != nil {
		return fmt.Errorf("containerd did not answer: %s", lastLine(l.log("containerd")))
	}
	return realnode.ImportImages(ctx, l.containerdSock(), r.opts.Images)
}

func (r *RealNodes) startKubelet(ctx context.Context, key string, n *realNode, spec BootSpec) error {
	l := n.layout
	if err := checkPorts(ctx, l, "the kubelet", kubeletAddresses(n.ip.String())); err != nil {
		return err
	}
	if err := realnode.CreateCgroup(l.cgroupRoot()); err != nil {
		return fmt.Errorf("the node's cgroup: %w", err)
	}
	config := kubeletConfig(l, n.ip.String(), filepath.Join(spec.MachineDir, caFile), spec.ProviderID, spec.ClusterDNS, spec.ClusterDomain)
	if err := os.WriteFile(l.kubeletConfig(), []byte(config), 0o600); err != nil {
		return err
	}
	r.mu.Lock()
	n.kubeletStarted = time.Now()
	r.mu.Unlock()
	return r.start(key, n, "kubelet", filepath.Join(r.opts.BinDir, "kubelet"), kubeletArgs(l, spec, n.ip.String())...)
}

// kubeletArgs are the kubelet's flags. Every directory it writes is the node's, removed with it:
// its root and certificate directories are flags (their defaults are the host's /var/lib/kubelet
// and /var/lib/kubelet/pki, whatever the root), its pods' logs are in its configuration.
func kubeletArgs(l nodeLayout, spec BootSpec, nodeIP string) []string {
	return []string{"--config", l.kubeletConfig(),
		"--kubeconfig", filepath.Join(spec.MachineDir, kubeconfigFile), "--root-dir", l.kubeletDir(), "--cert-dir", l.kubeletCertDir(),
		"--hostname-override", spec.NodeName, "--node-ip", nodeIP}
}

// startKubeProxy runs kube-proxy (iptables mode) in the node's namespace with the node's own
// credentials (the tenant binds system:node-proxier to the nodes: ProxyBinding), so its rules
// are the namespace's and go with it. It leaves the host-wide conntrack table size alone.
func (r *RealNodes) startKubeProxy(ctx context.Context, key string, n *realNode, spec BootSpec) error {
	if err := checkPorts(ctx, n.layout, "kube-proxy", kubeProxyAddresses()); err != nil {
		return err
	}
	return r.start(key, n, "kube-proxy", filepath.Join(r.opts.BinDir, "kube-proxy"),
		"--kubeconfig", filepath.Join(spec.MachineDir, kubeconfigFile), "--hostname-override", spec.NodeName,
		"--proxy-mode", "iptables", "--iptables-localhost-nodeports=false", "--conntrack-max-per-core", "0",
		"--healthz-bind-address", loopbackAddress(proxyHealthzPort), "--metrics-bind-address", loopbackAddress(proxyMetricsPort))
}

// start runs a process of the node in its network namespace, in a session of its own, its
// output in the node's log; its exit is recorded and reported.
func (r *RealNodes) start(key string, n *realNode, name string, command string, args ...string) error {
	logFile, err := os.OpenFile(n.layout.log(name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command("nsenter", append([]string{"--net=" + n.layout.netnsPath(), "--", command}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &nodeProc{cmd: cmd, done: make(chan struct{})}
	r.mu.Lock()
	n.procs[name] = p
	r.mu.Unlock()
	n.wg.Add(1)
	go r.waitProc(key, n, name, p, logFile)
	return nil
}

// waitProc waits for the node's process name to exit and records it. An exit the provider did
// not ask for puts the node down and brings its machine back at once (NodeDown); one it asked
// for (a stop, a failed boot's cleanup, a restart) does not: a failed boot is tried again after
// the joins' backoff, not the moment its cleanup stopped containerd.
func (r *RealNodes) waitProc(key string, n *realNode, name string, p *nodeProc, logFile io.Closer) {
	defer n.wg.Done()
	err := p.cmd.Wait()
	close(p.done)
	logFile.Close()
	r.mu.Lock()
	down := n.down == "" && n.cancel != nil && !p.stopping
	if down {
		n.down = fmt.Sprintf("%s exited (%v): %s", name, err, lastLine(n.layout.log(name)))
	}
	r.mu.Unlock()
	if down && r.exited != nil {
		r.exited(key)
	}
}

// Restart starts the kubelet and kube-proxy of the node of key again, as an operator restarts a
// node's kubelet once its credentials changed: both read the node's kubeconfig (its client
// certificate and the CAs it trusts) only when they start. The kubelet's serving certificate
// goes too, so that it asks for one of the cluster's current CA (a rotation's new one) instead of
// serving one the tenant's kube-apiserver will stop trusting. What does not start (a port
// another socket took while it was stopped) is started by Resume. A node not booted here, or
// down, is left alone.
//
// A rotation restarts a node twice, on purpose: when prepared (its new client certificate, and a
// serving certificate of the new CA, both needed before the kube-apiserver trusts no other CA)
// and when completed (the CAs it trusts: its kubeconfig holds them as data, read at start, so
// it would trust servers of the previous CA until it restarts). Once would need the kubelet
// and kube-proxy to reload the kubeconfig's files (client-go's ClientsAllowCARotation).
func (r *RealNodes) Restart(ctx context.Context, key, machineDir string) error {
	spec, err := readBootSpec(machineDir)
	if err != nil {
		return err
	}
	r.mu.Lock()
	n, ok := r.nodes[key]
	ok = ok && n.down == ""
	var procs []*nodeProc
	if ok {
		for _, name := range []string{"kube-proxy", "kubelet"} {
			if p := n.procs[name]; p != nil {
				p.stopping = true
				procs = append(procs, p)
			}
		}
		n.restarting = []string{"kubelet", "kube-proxy"}
		n.serving = false
	}
	r.mu.Unlock()
	if !ok {
		return nil
	}
	for _, p := range procs {
		p.terminate(10 * time.Second)
	}
	served, _ := filepath.Glob(filepath.Join(n.layout.kubeletCertDir(), "kubelet-server-*"))
	for _, f := range served {
		_ = os.Remove(f)
	}
	return r.resume(ctx, key, n, spec)
}

// Resume starts what a restart of the node of key stopped and could not start again; resumed
// says whether it did so now.
func (r *RealNodes) Resume(ctx context.Context, key, machineDir string) (resumed bool, err error) {
	r.mu.Lock()
	n, ok := r.nodes[key]
	ok = ok && n.down == "" && len(n.restarting) > 0
	r.mu.Unlock()
	if !ok {
		return false, nil
	}
	spec, err := readBootSpec(machineDir)
	if err != nil {
		return false, err
	}
	return true, r.resume(ctx, key, n, spec)
}

// resume starts the node's restarting processes in order, each once it started no more one.
func (r *RealNodes) resume(ctx context.Context, key string, n *realNode, spec BootSpec) error {
	for {
		r.mu.Lock()
		if len(n.restarting) == 0 {
			r.mu.Unlock()
			break
		}
		name := n.restarting[0]
		r.mu.Unlock()
		if err := r.starts[name](ctx, key, n, spec); err != nil {
			return err
		}
		r.mu.Lock()
		n.restarting = n.restarting[1:]
		r.mu.Unlock()
	}
	klog.FromContext(ctx).Info("Real node's kubelet and kube-proxy restarted with its new credentials", "node", spec.NodeName)
	return nil
}

// setServing records that the serving certificate of the node of key was approved.
func (r *RealNodes) setServing(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.nodes[key]; ok {
		n.serving = true
	}
}

// kubeletSince is when the kubelet of the node of key started (zero when not booted here).
func (r *RealNodes) kubeletSince(key string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.nodes[key]; ok {
		return n.kubeletStarted
	}
	return time.Time{}
}

// serving says whether a serving certificate of this boot of the node of key was approved.
func (r *RealNodes) serving(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[key]
	return ok && n.serving
}

// SetPodCIDR records the pod CIDR the tenant allocated to the node of key and routes it from
// its cluster's other nodes, and theirs from it.
func (r *RealNodes) SetPodCIDR(ctx context.Context, key, cidr string) error {
	r.mu.Lock()
	n, ok := r.nodes[key]
	if !ok || n.podCIDR == cidr {
		r.mu.Unlock()
		return nil
	}
	n.podCIDR = cidr
	cluster := n.cluster
	r.mu.Unlock()
	return r.syncRoutes(ctx, cluster)
}

// syncRoutes sets, in each node of cluster, a route to every other node's pod CIDR through that
// node's address on the bridge.
func (r *RealNodes) syncRoutes(ctx context.Context, cluster string) error {
	r.mu.Lock()
	var members []*realNode
	for _, n := range r.nodes {
		if n.cluster == cluster && n.down == "" {
			members = append(members, n)
		}
	}
	r.mu.Unlock()
	for _, n := range members {
		routes := map[string]string{}
		for _, m := range members {
			if m != n && m.podCIDR != "" {
				routes[m.podCIDR] = m.ip.String()
			}
		}
		if err := setPodRoutes(ctx, n.layout, routes); err != nil {
			return fmt.Errorf("routes of node %s: %w", n.layout.netnsName(), err)
		}
	}
	return nil
}

// Stop stops the node of key and removes everything it made: processes, mounts, network
// namespaces (its pods' and its own, with their veths and iptables rules), cgroups, logs'
// links, its address and its state.
func (r *RealNodes) Stop(ctx context.Context, key, machineDir string) {
	r.mu.Lock()
	n, ok := r.nodes[key]
	delete(r.nodes, key)
	r.mu.Unlock()
	if !ok {
		n = &realNode{layout: r.layout(key, machineDir)}
	}
	r.stopNode(ctx, key, n)
	if n.cluster != "" {
		if err := r.syncRoutes(ctx, n.cluster); err != nil {
			klog.FromContext(ctx).Info("Removing the routes to a stopped node", "err", err)
		}
	}
}

// StopCluster stops every node of cluster (namespace/name) and removes what they made, as Stop;
// their machines' credentials and boot records stay, so they boot again (Reboot) on the wake.
func (r *RealNodes) StopCluster(ctx context.Context, cluster string) {
	r.mu.Lock()
	stopping := map[string]*realNode{}
	for key, n := range r.nodes {
		if n.cluster == cluster {
			stopping[key] = n
			delete(r.nodes, key)
		}
	}
	r.mu.Unlock()
	for key, n := range stopping {
		r.stopNode(ctx, key, n)
	}
}

// StopAll stops every node (the provider is stopping).
func (r *RealNodes) StopAll(ctx context.Context) {
	r.mu.Lock()
	nodes := r.nodes
	r.nodes = map[string]*realNode{}
	r.mu.Unlock()
	for key, n := range nodes {
		r.stopNode(ctx, key, n)
	}
}

func (r *RealNodes) stopNode(ctx context.Context, key string, n *realNode) {
	r.mu.Lock()
	cancel := n.cancel
	n.cancel = nil // what exits from now on is being stopped, not down
	var procs []*nodeProc
	for _, name := range []string{"kube-proxy", "kubelet", "containerd"} {
		if p := n.procs[name]; p != nil {
			procs = append(procs, p)
		}
	}
	r.mu.Unlock()
	for _, p := range procs {
		p.terminate(10 * time.Second)
	}
	n.wg.Wait()
	if cancel != nil {
		cancel()
	}
	cleanNode(ctx, n.layout)
	r.bridge.release(ctx, n.layout.id)
	_ = os.RemoveAll(n.layout.dir)
	_ = os.RemoveAll(n.layout.run)
	klog.FromContext(ctx).Info("Real node stopped and cleaned up", "machine", key, "netns", n.layout.netnsName())
}

// terminate sends SIGTERM to the process and SIGKILL after grace, and waits for its end.
func (p *nodeProc) terminate(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// Release frees the address of the node of key unless this process booted it: a real machine
// that failed to join or boot holds no address between its tries.
func (r *RealNodes) Release(ctx context.Context, key string) {
	r.mu.Lock()
	_, booted := r.nodes[key]
	r.mu.Unlock()
	if !booted {
		r.bridge.release(ctx, r.nodeID(key))
	}
}
