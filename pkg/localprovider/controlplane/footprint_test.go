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
// BUTLER_FOOTPRINT_ARGS_<component> and BUTLER_FOOTPRINT_SUBJECT_ARGS_<component> add flags
// (experimentArgs), BUTLER_FOOTPRINT_SUBJECT_ENV and _SUBJECT_ETCD_ENV environment to the
// subject's runs only. BUTLER_FOOTPRINT_PPROF=dir writes the CPU profiles of the first tenant's
// processes and the datastore over the window's last BUTLER_FOOTPRINT_PPROF_SECONDS (20) there.
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
	// beside the memory), or with BUTLER_FOOTPRINT_MEASURE=cpu an idle tenant's CPU (% of a core:
	// its three processes and its share of the datastore's).
	measure := func(baseline bool) float64 {
		r := footprint(t, bin, n, idle, baseline)
		switch os.Getenv("BUTLER_FOOTPRINT_MEASURE") {
		case "ready":
			return r.ready
		case "busy":
			return r.busyCPU
		case "busy-datastore":
			return r.busyDataStoreCPU
		case "cpu":
			return r.cpu
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
// seconds for busyWork (after the memory is measured), busyDataStoreCPU the datastore's, cpu
// the percent of a core its processes and its share of the datastore's used over the idle window.
type footprintResult struct{ mib, ready, busyCPU, busyDataStoreCPU, cpu float64 }

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
	cpu0 := map[int]cpuSample{}
	time.Sleep(30 * time.Second) // past the start's own work
	for _, ft := range tenants {
		for _, p := range ft.procs {
			cpu0[pidOf(p)] = cpuOf(pidOf(p))
		}
	}
	dsPid := ds.Process.Pid
	cpu0[dsPid] = cpuOf(dsPid)
	window := idle - 30*time.Second
	if prof := os.Getenv("BUTLER_FOOTPRINT_PPROF"); prof != "" && window > 20*time.Second {
		// The end of the window: where the first tenant's idle processes spend their CPU.
		seconds := min(envInt("BUTLER_FOOTPRINT_PPROF_SECONDS", 20), int(window.Seconds())-1)
		time.Sleep(window - time.Duration(seconds)*time.Second)
		tenants[0].cpuProfiles(t, ds, prof, seconds, map[bool]string{true: "baseline", false: "subject"}[baseline])
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
	dsAfter := procMem(dsPid)
	dsShare := float64(dsAfter.pss-dsBefore.pss) / float64(n)
	dsCPU := cpuOf(dsPid).minus(cpu0[dsPid])
	fmt.Printf("FOOTPRINT baseline=%v n=%d idle=%s datastore PSS %.1f -> %.1f MiB (share %.1f MiB each), anon %.1f -> %.1f MiB, cpu %s\n",
		baseline, n, idle, mibf(dsBefore.pss), mibf(dsAfter.pss), dsShare/(1<<20), mibf(dsBefore.anon), mibf(dsAfter.anon), dsCPU.per(window))
	var r footprintResult
	byComponent := map[string]cpuSample{}
	for i, ft := range tenants {
		var total, anon, cpu float64
		for _, p := range ft.procs {
			pid := pidOf(p)
			m := procMem(pid)
			used := cpuOf(pid).minus(cpu0[pid])
			total += float64(m.pss)
			anon += float64(m.anon)
			cpu += used.seconds()
			byComponent[p.Spec().Component] = byComponent[p.Spec().Component].plus(used)
			_, _, starts := p.State()
			fmt.Printf("FOOTPRINT tenant=%d %s pss=%.1f rss=%.1f anon=%.1f MiB cpu %s starts=%d\n", i, p.Spec().Component, mibf(m.pss), mibf(m.rss), mibf(m.anon), used.per(window), starts)
		}
		fmt.Printf("FOOTPRINT tenant=%d baseline=%v ready=%.2fs total_pss=%.1f anon=%.1f with_datastore=%.1f MiB cpu=%.2f%%\n", i, baseline, ft.ready.Seconds(), total/(1<<20), anon/(1<<20), (total+dsShare)/(1<<20), 100*cpu/window.Seconds())
		r.mib += (total + dsShare) / (1 << 20) / float64(n)
		r.ready += ft.ready.Seconds() / float64(n)
		r.cpu += 100 * (cpu + dsCPU.seconds()/float64(n)) / window.Seconds() / float64(n)
	}
	for _, c := range slices.Sorted(maps.Keys(byComponent)) {
		fmt.Printf("FOOTPRINT baseline=%v mean %s cpu %s\n", baseline, c, byComponent[c].scaled(1/float64(n)).per(window))
	}
	fmt.Printf("FOOTPRINT baseline=%v idle tenant cpu=%.2f%% of a core (its processes and 1/%d of the datastore's)\n", baseline, r.cpu, n)
	if os.Getenv("BUTLER_FOOTPRINT_BUSY") == "1" || strings.HasPrefix(os.Getenv("BUTLER_FOOTPRINT_MEASURE"), "busy") {
		// The first tenant busy, the others idle.
		pid := pidOf(tenants[0].procs[0])
		cpu, cpuDS, start := cpuSeconds(pid), cpuSeconds(dsPid), time.Now()
		if err := tenants[0].busyWork(); err != nil {
			t.Errorf("busy work: %v", err)
		}
		r.busyCPU, r.busyDataStoreCPU = cpuSeconds(pid)-cpu, cpuSeconds(dsPid)-cpuDS
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
func cpuSeconds(pid int) float64 { return cpuOf(pid).seconds() }

// cpuSample is a process's user and system seconds and its threads' context switches (how often
// it woke), at one time or between two.
type cpuSample struct{ user, sys, switches float64 }

// cpuOf reads /proc/<pid>/stat and its threads' status.
func cpuOf(pid int) cpuSample {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuSample{}
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	c := cpuSample{user: u / 100, sys: k / 100}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, task := range tasks {
		status, _ := os.ReadFile(task)
		for line := range strings.SplitSeq(string(status), "\n") {
			if name, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(name, "ctxt_switches") {
				n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				c.switches += n
			}
		}
	}
	return c
}

func (c cpuSample) seconds() float64 { return c.user + c.sys }
func (c cpuSample) minus(o cpuSample) cpuSample {
	return cpuSample{c.user - o.user, c.sys - o.sys, c.switches - o.switches}
}
func (c cpuSample) plus(o cpuSample) cpuSample {
	return cpuSample{c.user + o.user, c.sys + o.sys, c.switches + o.switches}
}
func (c cpuSample) scaled(f float64) cpuSample {
	return cpuSample{c.user * f, c.sys * f, c.switches * f}
}

// per is the sample over a window: percent of a core (user + system) and context switches a second.
func (c cpuSample) per(window time.Duration) string {
	w := window.Seconds()
	return fmt.Sprintf("%.2f%% (user %.2f%% sys %.2f%%) %.0f switches/s", 100*c.seconds()/w, 100*c.user/w, 100*c.sys/w, c.switches/w)
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
	env = append(env, experimentEnv("BUTLER_FOOTPRINT_ETCD_ENV", "BUTLER_FOOTPRINT_SUBJECT_ETCD_ENV", baseline)...)
	if os.Getenv("BUTLER_FOOTPRINT_PPROF") != "" {
		env = append(env, "ETCD_ENABLE_PPROF=true")
	}
	args := mergeArgs(d.args(), experimentArgs(componentEtcd, baseline))
	cmd := footprintCmd(t, filepath.Join(bin, "butler-localprovider"), append([]string{EtcdCommand}, args...), env, filepath.Join(dir, "etcd.log"))
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
	// debugPorts are the controller manager's and scheduler's serving ports when they are
	// profiled (BUTLER_FOOTPRINT_PPROF, the first tenant only), by component.
	debugPorts map[string]int
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
	ft := &footprintTenant{port: port, debugPorts: map[string]int{}}
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
		spec.Env = append(spec.Env, experimentEnv("BUTLER_FOOTPRINT_ENV", "BUTLER_FOOTPRINT_SUBJECT_ENV", baseline)...)
		spec.Env = append(spec.Env, experimentEnv("BUTLER_FOOTPRINT_ENV_"+envName(spec.Component), "BUTLER_FOOTPRINT_SUBJECT_ENV_"+envName(spec.Component), baseline)...)
		spec.Args = mergeArgs(spec.Args, experimentArgs(spec.Component, baseline))
		if os.Getenv("BUTLER_FOOTPRINT_PPROF") != "" && i == 0 && spec.Component != componentAPIServer {
			// Served on loopback, its profile to anyone, to be profiled: this tenant's figures are
			// not quite an unprofiled one's.
			ft.debugPorts[spec.Component] = freePort(t)
			spec.Args = mergeArgs(spec.Args, []string{fmt.Sprintf("--secure-port=%d", ft.debugPorts[spec.Component]),
				"--bind-address=127.0.0.1", "--cert-dir=" + filepath.Join(paths.dir, spec.Component),
				"--authorization-always-allow-paths=/healthz,/readyz,/livez,/debug/pprof/profile"})
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

// experimentArgs are the flags BUTLER_FOOTPRINT_ARGS_<component> adds to a component's command
// line in every run (kube_apiserver, kube_controller_manager, kube_scheduler, etcd), and
// BUTLER_FOOTPRINT_SUBJECT_ARGS_<component> in the subject's runs only: a cut of flags measured
// against main's. BUTLER_FOOTPRINT_ENV_<component> and BUTLER_FOOTPRINT_SUBJECT_ENV_<component>
// do the same for one component's environment.
func experimentArgs(component string, baseline bool) []string {
	name := envName(component)
	args := strings.Fields(os.Getenv("BUTLER_FOOTPRINT_ARGS_" + name))
	if !baseline {
		args = append(args, strings.Fields(os.Getenv("BUTLER_FOOTPRINT_SUBJECT_ARGS_"+name))...)
	}
	return args
}

// envName is component as it is spelled in a variable's name: kube_controller_manager.
func envName(component string) string { return strings.ReplaceAll(component, "-", "_") }

// experimentEnv is the environment the variable all names adds in every run, and subject in the
// subject's runs only.
func experimentEnv(all, subject string, baseline bool) []string {
	env := strings.Fields(os.Getenv(all))
	if !baseline {
		env = append(env, strings.Fields(os.Getenv(subject))...)
	}
	return env
}

// cpuProfiles writes the CPU profiles over the same seconds of the tenant's kube-apiserver,
// controller manager and scheduler (served for it) and of the datastore's etcd (ETCD_ENABLE_PPROF)
// to dir, their names ending in run.
func (ft *footprintTenant) cpuProfiles(t *testing.T, ds *footprintDS, dir string, seconds int, run string) {
	path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds)
	urls := map[string]string{componentAPIServer: fmt.Sprintf("https://127.0.0.1:%d%s", ft.port, path)}
	for component, port := range ft.debugPorts {
		urls[component] = fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
	}
	root, err := tls.X509KeyPair(ds.creds.Root.CertPEM, ds.creds.Root.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	etcdClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{root}}}}
	done := make(chan struct{})
	fetch := func(client *http.Client, url, file string) {
		defer func() { done <- struct{}{} }()
		c := *client
		c.Timeout = time.Duration(seconds)*time.Second + time.Minute
		resp, err := c.Get(url)
		if err != nil {
			t.Log(err)
			return
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Logf("%s: %s %s", url, resp.Status, data)
			return
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Log(err)
		}
	}
	for component, url := range urls {
		go fetch(ft.client, url, filepath.Join(dir, "cpu-0-"+component+"-"+run+".pb.gz"))
	}
	go fetch(etcdClient, "https://"+ds.creds.Spec.Endpoints[0]+path, filepath.Join(dir, "cpu-etcd-"+run+".pb.gz"))
	for range len(urls) + 1 {
		<-done
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
