package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/localplane"
)

// plane is a management plane (cmd/butler-localplane), in a directory of its own.
type plane struct {
	dir        string
	etcdPort   int
	butlerPort int
	up         *localplane.Plane

	// kube is the admin through kube-apiserver; direct is the same admin certificate
	// straight to butler-apiserver's port, trusting the CA that signed its serving certificate.
	kube, direct *rest.Config
}

// startPlane runs the local plane with LOCAL_DIR=dir (and env) and waits for admin.kubeconfig.
func startPlane(root, dir, butlerArgs string, env ...string) (*plane, error) {
	up, err := localplane.Start(root, dir, 10*time.Minute, append([]string{"BUTLER_APISERVER_ARGS=" + butlerArgs}, env...)...)
	if err != nil {
		return nil, fmt.Errorf("%w:\n%s", err, up.Output())
	}
	p := &plane{dir: dir, up: up, etcdPort: up.Ports["ETCD_PORT"], butlerPort: up.Ports["BUTLER_APISERVER_PORT"]}
	if p.kube, err = clientcmd.BuildConfigFromFlags("", up.Kubeconfig); err != nil {
		p.stop()
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		p.stop()
		return nil, err
	}
	p.direct = rest.CopyConfig(p.kube)
	p.direct.Host = "https://127.0.0.1:" + strconv.Itoa(p.butlerPort)
	p.direct.CAData, p.direct.CAFile = ca, ""
	return p, nil
}

// stop stops the plane (it stops its processes in order, and any of the plane's or its
// tenants' that outlived their parent); anything still running after that is killed and said.
func (p *plane) stop() {
	if err := p.up.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: the plane: %v\n", err)
	}
	if left := localplane.Leftovers(p.up.Root, p.dir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d processes outlived the plane; killing them: %v\n", len(left), left)
		localplane.Kill(left)
	}
}

// pid finds the process of the plane running the named binary: its first argument ends in
// /name and its command line mentions the plane's directory.
func (p *plane) pid(name string) (int, error) {
	// "binary subcommand" names a process by its first argument too; a bare binary name, the
	// process started with flags only.
	bin, sub, _ := strings.Cut(name, " ")
	pids, err := scanProcesses(func(args []string, cmdline string) bool {
		first := ""
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			first = args[1]
		}
		return filepath.Base(args[0]) == bin && first == sub && strings.Contains(cmdline, p.dir)
	})
	if err != nil {
		return 0, err
	}
	if len(pids) == 0 {
		return 0, fmt.Errorf("no %s process of the plane in %s", name, p.dir)
	}
	return pids[0], nil
}

// planeProcesses are the processes the local plane starts, and the tenants' datastore the local
// provider runs (its etcd subcommand).
var planeProcesses = []string{"etcd", "kube-apiserver", "kube-controller-manager", "capi-manager", "butler-apiserver", "butler-localprovider",
	"butler-localprovider etcd"}

// processes finds every process of planeProcesses.
func (p *plane) processes() (map[string]int, error) {
	out := map[string]int{}
	for _, name := range planeProcesses {
		pid, err := p.pid(name)
		if err != nil {
			return nil, err
		}
		out[name] = pid
	}
	return out, nil
}

// tenantProcesses finds the tenants' processes butler-localprovider runs (kube-apiserver,
// kube-controller-manager, kube-scheduler), by their command lines, which name files in the
// tenant's state directory LOCAL_DIR/tenants/<TenantControlPlane UID>: the pids of each UID.
func (p *plane) tenantProcesses() (map[string][]int, error) {
	state := filepath.Join(p.dir, "tenants") + "/"
	out := map[string][]int{}
	_, err := scanProcesses(func(args []string, cmdline string) bool {
		_, after, ok := strings.Cut(cmdline, state)
		if !ok {
			return false
		}
		uid, _, _ := strings.Cut(after, "/")
		return uid != "" && !strings.ContainsAny(uid, "\x00 =")
	}, func(pid int, cmdline string) {
		_, after, _ := strings.Cut(cmdline, state)
		uid, _, _ := strings.Cut(after, "/")
		out[uid] = append(out[uid], pid)
	})
	return out, err
}

// scanProcesses returns the pids of the processes whose argument list matches, and gives each
// to the optional found.
func scanProcesses(match func(args []string, cmdline string) bool, found ...func(pid int, cmdline string)) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		cmdline := string(data)
		if !match(strings.Split(strings.TrimRight(cmdline, "\x00"), "\x00"), cmdline) {
			continue
		}
		pids = append(pids, pid)
		for _, f := range found {
			f(pid, cmdline)
		}
	}
	return pids, nil
}

// meminfo reads one field of /proc/meminfo, in bytes.
func meminfo(field string) int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && name == field {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func memAvailable() int64 { return meminfo("MemAvailable") }
func memTotal() int64     { return meminfo("MemTotal") }

// memory is what /proc/<pid>/status says of a process's resident memory.
type memory struct {
	rss  int64 // VmRSS
	file int64 // RssFile: pages of mapped files, mostly the binary itself
	peak int64 // VmHWM: the highest VmRSS so far
	// pss is the proportional set size (/proc/<pid>/smaps_rollup): each shared page divided
	// among the processes that map it, so a sum over processes counts the binaries' shared
	// pages once, where a sum of VmRSS counts them once per process. 0 when unreadable.
	pss int64
}

// residentMemory reads VmRSS, RssFile and VmHWM from /proc/<pid>/status.
func residentMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), ":")
		field := map[string]*int64{"VmRSS": &m.rss, "RssFile": &m.file, "VmHWM": &m.peak}[name]
		if !ok || field == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
		}
		*field = kb * 1024
	}
	if m.rss == 0 {
		return memory{}, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	if rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		m.pss = pssOf(string(rollup))
	}
	return m, s.Err()
}

// pssOf reads the Pss line of an smaps_rollup, in bytes (0 without one).
func pssOf(rollup string) int64 {
	for line := range strings.SplitSeq(rollup, "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// cpuTime is the CPU time (user + system) a process has used, from /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	_, after, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(after)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, data)
	}
	// utime and stime, fields 14 and 15 of stat, in clock ticks (USER_HZ, 100 on Linux).
	var ticks int64
	for _, f := range fields[11:13] {
		t, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += t
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// httpClient returns an HTTP client for config with a connection of its own: a Proxy function
// keeps client-go from sharing a cached transport, so each client is its own TCP+TLS connection.
func httpClient(config *rest.Config) (*http.Client, error) {
	c := rest.CopyConfig(config)
	c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	c.QPS, c.Burst = -1, 0
	return rest.HTTPClientFor(c)
}

// get reads a whole response and returns its size (after transparent gzip decoding, as a
// client-go client sees it).
func get(ctx context.Context, c *http.Client, url, accept string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return io.Copy(io.Discard, resp.Body)
}

// send sends a request with a body, asking for JSON, and fails unless the status is want.
func send(ctx context.Context, c *http.Client, method, url, contentType string, body []byte, want int) error {
	return sendAs(ctx, c, method, url, contentType, contentJSON, body, want)
}

// sendAs is send asking for accept.
func sendAs(ctx context.Context, c *http.Client, method, url, contentType, accept string, body []byte, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", accept)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(out.String()))
	}
	return nil
}

// unthrottledClients are clients of the management cluster with no client-side rate limit: the
// bench's own requests (a Steward stand-in's among them) must not be what is measured.
func (p *plane) unthrottledClients() (clientset.Interface, kubernetes.Interface, dynamic.Interface) {
	config := rest.CopyConfig(p.kube)
	config.QPS, config.Burst = -1, 0
	return clientset.NewForConfigOrDie(config), kubernetes.NewForConfigOrDie(config), dynamic.NewForConfigOrDie(config)
}
