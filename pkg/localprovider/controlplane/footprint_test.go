package controlplane

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// TestTenantFootprint starts BUTLER_FOOTPRINT_N (3) awake tenants the way this provider starts
// them (process.Start of procSpec: the command lines of apiServerArgs, controllerManagerArgs and
// schedulerArgs, tenantEnv's environment; credentials from pki.EnsureTenant and
// writeKubeconfigs; the join objects of setUpTenant) on one datastore as startDataStore starts it
// (TLS, auth, an etcd user per tenant), holds them idle for BUTLER_FOOTPRINT_IDLE (2m) and prints
// what each costs: the PSS (/proc/<pid>/smaps_rollup: shared pages divided among the processes
// mapping them) of each process, the datastore's PSS growth divided among the tenants, and the
// CPU each used over the idle window. It is a measurement, not a test: it runs only when
// BUTLER_FOOTPRINT_BIN names a directory with kube-apiserver, kube-controller-manager,
// kube-scheduler and butler-localprovider (its etcd). BUTLER_FOOTPRINT_BASELINE=1 starts the
// processes with Go's defaults (no tenantEnv), as before issue 40, or with
// BUTLER_FOOTPRINT_BASELINE_ENV's environment (a cut against main's settings; the datastore's:
// BUTLER_FOOTPRINT_BASELINE_ETCD_ENV). BUTLER_FOOTPRINT_PAIRS=k runs
// k pairs of both, the order alternating, and appends each pair to BUTLER_FOOTPRINT_PAIRS_OUT
// (the pairs file of figure P7m, test/bench). BUTLER_FOOTPRINT_ENV adds to the tenant
// processes' environment and BUTLER_FOOTPRINT_ETCD_ENV to the datastore's, for experiments;
// BUTLER_FOOTPRINT_READYZ=1 prints when each of kube-apiserver's readiness checks first passed;
// BUTLER_FOOTPRINT_READYZ_EVERY=1m asks every tenant's /readyz each minute while they idle.
func TestTenantFootprint(t *testing.T) {
	bin := os.Getenv("BUTLER_FOOTPRINT_BIN")
	if bin == "" {
		t.Skip("a measurement: set BUTLER_FOOTPRINT_BIN (see the comment)")
	}
	n := envInt("BUTLER_FOOTPRINT_N", 3)
	idle := 2 * time.Minute
	if v := os.Getenv("BUTLER_FOOTPRINT_IDLE"); v != "" {
		var err error
		if idle, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	pairs := envInt("BUTLER_FOOTPRINT_PAIRS", 0)
	if pairs == 0 {
		footprint(t, bin, n, idle, os.Getenv("BUTLER_FOOTPRINT_BASELINE") == "1")
		return
	}
	// The pairs give each tenant's memory, or with BUTLER_FOOTPRINT_MEASURE=ready the seconds
	// from its processes' start to kube-apiserver's /readyz (the tenants start one after the other),
	// or with BUTLER_FOOTPRINT_MEASURE=busy the CPU seconds the first tenant's kube-apiserver took
	// for busyWork, or with busy-datastore the datastore's (BUTLER_FOOTPRINT_BUSY=1 prints both
	// beside the memory).
	measure := func(baseline bool) float64 {
		r := footprint(t, bin, n, idle, baseline)
		switch os.Getenv("BUTLER_FOOTPRINT_MEASURE") {
		case "ready":
			return r.ready
		case "busy":
			return r.busyCPU
		case "busy-datastore":
			return r.busyDataStoreCPU
		}
		return r.mib
	}
	out := os.Getenv("BUTLER_FOOTPRINT_PAIRS_OUT")
	for k := range pairs {
		subjectFirst := k%2 == 0
		var subject, base float64
		if subjectFirst {
			subject, base = measure(false), measure(true)
		} else {
			base, subject = measure(true), measure(false)
		}
		line := fmt.Sprintf("%.2f\t%.2f\t%v\ttenants awake\t%d\t%d\n", subject, base, subjectFirst, n, n)
		fmt.Print("FOOTPRINT pair " + line)
		if out != "" {
			f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteString(line)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// footprintResult is the mean over the tenants of one run: mib is a tenant's memory (the PSS of
// its three processes and its share of the datastore's PSS growth), ready the seconds from its
// processes' start to kube-apiserver's /readyz, busyCPU the first tenant's kube-apiserver's CPU
// seconds for busyWork (after the memory is measured), busyDataStoreCPU the datastore's.
type footprintResult struct{ mib, ready, busyCPU, busyDataStoreCPU float64 }

// footprint runs n tenants for idle and returns what they cost.
func footprint(t *testing.T, bin string, n int, idle time.Duration, baseline bool) footprintResult {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ds, stopDS := footprintDataStore(t, ctx, bin, filepath.Join(dir, "datastore"), baseline)
	defer stopDS()
	time.Sleep(5 * time.Second)
	dsBefore := procMem(ds.Process.Pid)

	var tenants []*footprintTenant
	for i := range n {
		ft := startFootprintTenant(t, ctx, bin, dir, ds, i, baseline)
		tenants = append(tenants, ft)
		defer ft.stop()
	}
	cpu0 := map[int]float64{}
	time.Sleep(30 * time.Second) // past the start's own work
	for _, ft := range tenants {
		for _, p := range ft.procs {
			cpu0[pidOf(p)] = cpuSeconds(pidOf(p))
		}
	}
	cpuDS0 := cpuSeconds(ds.Process.Pid)
	window := idle - 30*time.Second
	if prof := os.Getenv("BUTLER_FOOTPRINT_PPROF"); prof != "" && window > 20*time.Second {
		// The last 20 s of the window: where the first tenant's idle kube-apiserver spends its CPU.
		time.Sleep(window - 20*time.Second)
		tenants[0].fetch(t, "profile?seconds=20", filepath.Join(prof, "cpu-0.pb.gz"))
	} else if every, _ := time.ParseDuration(os.Getenv("BUTLER_FOOTPRINT_READYZ_EVERY")); every > 0 {
		holdAnswering(t, tenants, window, every)
	} else {
		time.Sleep(window)
	}

	if prof := os.Getenv("BUTLER_FOOTPRINT_PPROF"); prof != "" {
		for i, ft := range tenants {
			ft.heapProfile(t, filepath.Join(prof, fmt.Sprintf("heap-%d.pb.gz", i)))
			ft.goMetrics(i)
		}
	}
	dsAfter := procMem(ds.Process.Pid)
	dsShare := float64(dsAfter.pss-dsBefore.pss) / float64(n)
	fmt.Printf("FOOTPRINT baseline=%v n=%d idle=%s datastore PSS %.1f -> %.1f MiB (share %.1f MiB each), anon %.1f -> %.1f MiB, cpu %.2f%% of a core\n",
		baseline, n, idle, mibf(dsBefore.pss), mibf(dsAfter.pss), dsShare/(1<<20), mibf(dsBefore.anon), mibf(dsAfter.anon), 100*(cpuSeconds(ds.Process.Pid)-cpuDS0)/window.Seconds())
	var r footprintResult
	for i, ft := range tenants {
		var total, anon, cpu float64
		for _, p := range ft.procs {
			pid := pidOf(p)
			m := procMem(pid)
			used := cpuSeconds(pid) - cpu0[pid]
			total += float64(m.pss)
			anon += float64(m.anon)
			cpu += used
			_, _, starts := p.State()
			fmt.Printf("FOOTPRINT tenant=%d %s pss=%.1f rss=%.1f anon=%.1f MiB cpu=%.2f%% starts=%d\n", i, p.Spec().Component, mibf(m.pss), mibf(m.rss), mibf(m.anon), 100*used/window.Seconds(), starts)
		}
		fmt.Printf("FOOTPRINT tenant=%d baseline=%v ready=%.2fs total_pss=%.1f anon=%.1f with_datastore=%.1f MiB cpu=%.2f%%\n", i, baseline, ft.ready.Seconds(), total/(1<<20), anon/(1<<20), (total+dsShare)/(1<<20), 100*cpu/window.Seconds())
		r.mib += (total + dsShare) / (1 << 20) / float64(n)
		r.ready += ft.ready.Seconds() / float64(n)
	}
	if os.Getenv("BUTLER_FOOTPRINT_BUSY") == "1" || strings.HasPrefix(os.Getenv("BUTLER_FOOTPRINT_MEASURE"), "busy") {
		// The first tenant busy, the others idle.
		pid := pidOf(tenants[0].procs[0])
		cpu, cpuDS, start := cpuSeconds(pid), cpuSeconds(ds.Process.Pid), time.Now()
		if err := tenants[0].busyWork(); err != nil {
			t.Errorf("busy work: %v", err)
		}
		r.busyCPU, r.busyDataStoreCPU = cpuSeconds(pid)-cpu, cpuSeconds(ds.Process.Pid)-cpuDS
		fmt.Printf("FOOTPRINT tenant=0 baseline=%v busy: kube-apiserver %.2f CPU s, datastore %.2f CPU s in %.2f s\n",
			baseline, r.busyCPU, r.busyDataStoreCPU, time.Since(start).Seconds())
	}
	return r
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func mibf(b int64) float64 { return float64(b) / (1 << 20) }

type memInfo struct{ pss, rss, anon int64 }

// procMem reads a process's smaps_rollup.
func procMem(pid int) memInfo {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return memInfo{}
	}
	var m memInfo
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Pss:":
			m.pss = v << 10
		case "Rss:":
			m.rss = v << 10
		case "Anonymous:":
			m.anon = v << 10
		}
	}
	return m
}

// cpuSeconds is a process's user and system time.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100
}

type footprintDS struct {
	*exec.Cmd
	creds *datastore.Credentials
}

// footprintDataStore starts the provider's datastore as startDataStore does: TLS, client
// certificates, auth on, tenantEnv's environment (the baseline's: Go's defaults, or
// BUTLER_FOOTPRINT_BASELINE_ETCD_ENV).
func footprintDataStore(t *testing.T, ctx context.Context, bin, dir string, baseline bool) (*footprintDS, func()) {
	d := &localDataStore{name: "footprint", dir: dir}
	d.rec.ClientPort, d.rec.PeerPort = freePort(t), freePort(t)
	if err := os.MkdirAll(d.pki(), 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := ensureCAFiles(d.pki(), "datastore-ca footprint")
	if err != nil {
		t.Fatal(err)
	}
	loopback := []net.IP{net.IPv4(127, 0, 0, 1)}
	if _, err := pki.EnsureLeaf(d.pki(), "server", ca, pki.Request{CommonName: "etcd-footprint", DNSNames: []string{"localhost"}, IPs: loopback, Usage: pki.ServerAuth}); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.EnsureLeaf(d.pki(), "peer", ca, pki.Request{CommonName: "etcd-peer-footprint", DNSNames: []string{"localhost"}, IPs: loopback, Usage: pki.PeerAuth}); err != nil {
		t.Fatal(err)
	}
	root, err := pki.EnsureLeaf(d.pki(), "root", ca, pki.Request{CommonName: datastore.RootUser, Usage: pki.ClientAuth})
	if err != nil {
		t.Fatal(err)
	}
	creds := &datastore.Credentials{Spec: datastore.Spec{Name: d.name, Driver: datastore.DriverEtcd, Endpoints: []string{d.endpoint()}}, CA: ca, Root: root}
	env := tenantEnv(componentEtcd)
	if baseline {
		env = strings.Fields(os.Getenv("BUTLER_FOOTPRINT_BASELINE_ETCD_ENV"))
	}
	env = append(env, strings.Fields(os.Getenv("BUTLER_FOOTPRINT_ETCD_ENV"))...)
	cmd := footprintCmd(t, filepath.Join(bin, "butler-localprovider"), append([]string{EtcdCommand}, d.args()...), env, filepath.Join(dir, "etcd.log"))
	rc, err := creds.Connect(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := retryFor(ctx, time.Minute, func() error {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return datastore.EnableAuth(actx, rc)
	}); err != nil {
		t.Fatal(err)
	}
	ds := &footprintDS{Cmd: cmd, creds: creds}
	return ds, func() { rc.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func footprintCmd(t *testing.T, binary string, args, env []string, log string) *exec.Cmd {
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

type footprintTenant struct {
	procs  []*process.Process
	ready  time.Duration
	port   int
	client *http.Client
}

func (ft *footprintTenant) stop() {
	for _, p := range ft.procs {
		p.StopWithin(time.Second)
	}
}

func pidOf(p *process.Process) int {
	pid, _, _ := p.State()
	return pid
}

func startFootprintTenant(t *testing.T, ctx context.Context, bin, dir string, ds *footprintDS, i int, baseline bool) *footprintTenant {
	name := fmt.Sprintf("tenant-%d", i)
	spec := tenantSpec{Namespace: "footprint", Name: name, UID: fmt.Sprintf("uid-%d", i), Version: "v1.36.3",
		ServiceCIDR: defaultServiceCIDR, PodCIDR: defaultPodCIDR, ClusterDomain: defaultClusterDomain, CgroupDriver: "systemd"}
	spec.DataStoreSchema, spec.DataStoreUser = spec.UID, spec.Namespace+"_"+spec.Name
	paths := tenantPaths{dir: filepath.Join(dir, name)}
	if err := os.MkdirAll(paths.pki(), 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	serviceIP, _ := firstServiceIP(spec.ServiceCIDR)
	certs, _, err := pki.EnsureTenant(paths.pki(), ca, pki.TenantOptions{Name: "footprint/" + name, ServiceIP: serviceIP,
		ClusterDomain: spec.ClusterDomain, CertSANs: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	endpoint := endpointString("127.0.0.1", port)
	kc, err := (&Controller{}).writeKubeconfigs(name, endpoint, endpoint, paths, certs)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeAdmissionConfig(paths); err != nil {
		t.Fatal(err)
	}
	tenant := datastore.NewTenant(spec.DataStoreUser, spec.DataStoreSchema)
	rc, err := ds.creds.Connect(ds.creds.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := datastore.EnsureTenant(ctx, rc, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.creds.ClientCertificate(paths.pki(), dataStoreClientStem, tenant); err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteFile(filepath.Join(paths.pki(), dataStoreCAFile), ds.creds.CA.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	args := planeArgs{Spec: spec, Paths: paths, Address: "127.0.0.1", Port: port, Etcd: etcdConn{
		URLs: ds.creds.URLs(), Prefix: etcdPrefix(tenant.Prefix), CAFile: filepath.Join(paths.pki(), dataStoreCAFile),
		CertFile: pki.CertPath(paths.pki(), dataStoreClientStem), KeyFile: pki.KeyPath(paths.pki(), dataStoreClientStem)}}
	ft := &footprintTenant{port: port}
	cert, err := tls.X509KeyPair(certs.SuperAdmin.CertPEM, certs.SuperAdmin.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ft.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}}
	start := time.Now()
	bins, _, msg := kubebuild.NewVersions(spec.Version, bin, dir, nil).Get(spec.Version)
	if msg != "" {
		t.Fatal(msg)
	}
	var specs []process.Spec
	for _, spec := range []process.Spec{
		(&Controller{}).procSpec(componentAPIServer, bins, apiServerArgs(args), paths),
		(&Controller{}).procSpec(componentControllerManager, bins, controllerManagerArgs(args), paths),
		(&Controller{}).procSpec(componentScheduler, bins, schedulerArgs(args), paths),
	} {
		if baseline {
			// Go's defaults, or the environment of the settings a cut is measured against.
			spec.Env = strings.Fields(os.Getenv("BUTLER_FOOTPRINT_BASELINE_ENV"))
		}
		if extra := os.Getenv("BUTLER_FOOTPRINT_ENV"); extra != "" {
			spec.Env = append(spec.Env, strings.Fields(extra)...)
		}
		if extra := os.Getenv("BUTLER_FOOTPRINT_ARGS_" + strings.ReplaceAll(spec.Component, "-", "_")); extra != "" {
			spec.Args = mergeArgs(spec.Args, strings.Fields(extra))
		}
		specs = append(specs, spec)
	}
	// As plane.ensure: the controllers start once kube-apiserver answers /readyz.
	ft.procs = append(ft.procs, process.Start(ctx, specs[0], func() {}))
	// Each check of /readyz?verbose is timed from the start to its first "ok", and the serving
	// from the start to the first answer: where kube-apiserver's start goes.
	checks := map[string]time.Duration{}
	for {
		resp, err := ft.client.Get(fmt.Sprintf("https://%s/readyz?verbose", endpoint))
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if _, ok := checks["(serving)"]; !ok {
				checks["(serving)"] = time.Since(start)
			}
			for line := range strings.SplitSeq(string(body), "\n") {
				if name, ok := strings.CutPrefix(line, "[+]"); ok {
					name = strings.TrimSuffix(name, " ok")
					if _, seen := checks[name]; !seen {
						checks[name] = time.Since(start)
					}
				}
			}
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("%s not ready after 5m (log %s)", name, paths.log(componentAPIServer))
		}
		time.Sleep(50 * time.Millisecond)
	}
	ft.ready = time.Since(start)
	for _, spec := range specs[1:] {
		ft.procs = append(ft.procs, process.Start(ctx, spec, func() {}))
	}
	if os.Getenv("BUTLER_FOOTPRINT_READYZ") == "1" {
		printReadyz(name, checks)
	}
	if err := (&Controller{}).setUpTenant(ctx, spec, endpoint, certs.Trust, kc.superAdminSvc); err != nil {
		t.Fatal(err)
	}
	return ft
}

// holdAnswering asks every tenant's /readyz each interval for the window, and fails the test
// for each round in which one did not answer ready.
func holdAnswering(t *testing.T, tenants []*footprintTenant, window, every time.Duration) {
	end := time.Now().Add(window)
	for round := 1; time.Until(end) > 0; round++ {
		time.Sleep(min(every, time.Until(end)))
		ready, slowest := 0, time.Duration(0)
		for _, ft := range tenants {
			start := time.Now()
			resp, err := ft.client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", ft.port))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ready++
				}
			}
			slowest = max(slowest, time.Since(start))
		}
		fmt.Printf("FOOTPRINT readyz round %d: %d of %d ready, slowest answer %.2fs\n", round, ready, len(tenants), slowest.Seconds())
		if ready != len(tenants) {
			t.Errorf("round %d: %d of %d tenants answered /readyz ready", round, ready, len(tenants))
		}
	}
}

// fetch writes kube-apiserver's /debug/pprof/<path> to file.
func (ft *footprintTenant) fetch(t *testing.T, path, file string) {
	client := *ft.client
	client.Timeout = time.Minute
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/%s", ft.port, path))
	if err != nil {
		t.Log(err)
		return
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Log(err)
	}
}

func (ft *footprintTenant) heapProfile(t *testing.T, file string) {
	for path, to := range map[string]string{"heap": file, "goroutine?debug=1": strings.Replace(file, "heap-", "goroutines-", 1) + ".txt"} {
		resp, err := ft.client.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/%s", ft.port, path))
		if err != nil {
			t.Log(err)
			return
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Log(err)
		}
	}
}

// goMetrics prints kube-apiserver's Go memory statistics.
func (ft *footprintTenant) goMetrics(i int) {
	resp, err := ft.client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", ft.port))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(data), "\n") {
		for _, m := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes",
			"go_memstats_stack_inuse_bytes", "go_memstats_next_gc_bytes", "go_memstats_sys_bytes", "go_goroutines ", "go_memstats_heap_alloc_bytes",
			"go_memstats_mspan_inuse_bytes", "go_memstats_other_sys_bytes", "go_memstats_gc_sys_bytes", "go_memstats_buck_hash_sys_bytes"} {
			if strings.HasPrefix(line, m) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				fmt.Printf("FOOTPRINT tenant=%d go %s %.1f MiB (%.0f)\n", i, f[0], v/(1<<20), v)
			}
		}
	}
}

// printReadyz prints when each of kube-apiserver's readiness checks first passed, in order.
func printReadyz(tenant string, checks map[string]time.Duration) {
	names := slices.SortedFunc(maps.Keys(checks), func(a, b string) int { return cmp.Compare(checks[a], checks[b]) })
	for _, n := range names {
		fmt.Printf("FOOTPRINT %s readyz %6.2fs %s\n", tenant, checks[n].Seconds(), n)
	}
}

// busyWork is a busy tenant's requests, one after the other: 300 ConfigMaps of 4 KiB created,
// listed 20 times (1.2 MB each) and deleted.
func (ft *footprintTenant) busyWork() error {
	base := fmt.Sprintf("https://127.0.0.1:%d/api/v1/namespaces/default/configmaps", ft.port)
	do := func(method, url, body string, want int) error {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := ft.client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: %s", method, url, resp.Status)
		}
		return nil
	}
	value := strings.Repeat("x", 4096)
	for i := range 300 {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"busy-%d"},"data":{"v":%q}}`, i, value)
		if err := do(http.MethodPost, base, body, http.StatusCreated); err != nil {
			return err
		}
	}
	for range 20 {
		if err := do(http.MethodGet, base, "", http.StatusOK); err != nil {
			return err
		}
	}
	for i := range 300 {
		if err := do(http.MethodDelete, fmt.Sprintf("%s/busy-%d", base, i), "", http.StatusOK); err != nil {
			return err
		}
	}
	return nil
}
