package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/wakeproxy"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// tenantRecord is what the state directory remembers of a tenant across provider restarts.
type tenantRecord struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Port      int    `json:"port"`
	// InternalPort is kube-apiserver's port when a wake-on-request listener holds Port.
	InternalPort int `json:"internalPort,omitempty"`
	// ListenAfter is when the listener may take Port, once wake on request was turned on for a
	// tenant that served there (moveBehindListener).
	ListenAfter time.Time `json:"listenAfter,omitempty"`
	// DataStore is the DataStore the tenant's data is in, under DataStorePrefix, readable by the
	// etcd user DataStoreUser only.
	DataStore       string `json:"dataStore,omitempty"`
	DataStoreUser   string `json:"dataStoreUser,omitempty"`
	DataStorePrefix string `json:"dataStorePrefix,omitempty"`
	// CredentialsRotated is the last rotation phase done: Prepared/<id> or Completed/<id>.
	CredentialsRotated string `json:"credentialsRotated,omitempty"`
	// Spare says this is a spare control plane no tenant has claimed yet (UID is its own name).
	Spare bool `json:"spare,omitempty"`
	// FromSpare names the spare a tenant claimed: its directory, and its datastore user and
	// prefix above, stay the tenant's (its kube-apiserver's command line names them).
	FromSpare string `json:"fromSpare,omitempty"`
}

// plane is the running control plane of one tenant: its processes and what is known of them.
type plane struct {
	rec   tenantRecord
	paths tenantPaths
	// listen is the address kube-apiserver listens on (Options.Address).
	listen string
	notify func() // queues the tenant's key

	mu    sync.Mutex
	procs map[string]*process.Process
	// components are those the last ensure asked for: ready needs each of them running.
	components []string
	// version is the Kubernetes version the running kube-apiserver's binary is.
	version string
	// apiServerStarts is how often kube-apiserver was started when it was last seen ready;
	// setupFor is the value of that when the kubeadm setup was last done.
	ready       bool
	readyStarts int
	// readyCh is closed while ready is true (setReadyLocked keeps them together): a connection
	// waiting for a wake passes through the moment the probe sees kube-apiserver serve.
	readyCh chan struct{}
	// apiServerStarted is when ensure last started kube-apiserver (the wake's breakdown).
	apiServerStarted time.Time
	// probed says the probe has answered once since the plane was made: until then its
	// readiness is unknown (processes adopted after a restart may well be serving).
	probed bool
	// answered is the kube-apiserver start the probe last had an answer from, ready or not (0:
	// none): it serves its super-admin from then on.
	answered int
	setupFor int
	probe    context.CancelFunc
	caPool   *x509.CertPool
	caPEM    []byte // what caPool was made of: the probe keeps its connection while it is the same
	// ca is the tenant CA read from its Secret; adminDigest the content last written to
	// <tcp>-admin-kubeconfig.
	ca          *pki.KeyPair
	adminDigest string
	// proxy holds the endpoint's port for a wake-on-request tenant; wakeUntil is when a wake
	// it recorded stops counting as replicas 1 (the replicas come back through Cluster API).
	proxy     *wakeproxy.Proxy
	wakeUntil time.Time
	// storeSetUp is the datastore the tenant's etcd user and role were made in since the plane
	// was made.
	storeSetUp string
	// held: this is the tenant's first start, and users' connections wait until butler's access
	// bindings exist in it (holdFirstStart); heldCh is closed when released. released: no longer.
	held, released bool
	heldCh         chan struct{}
	// gate bounds the kube-apiservers starting at once on this host (nil: no bound).
	gate *startGate
}

// ensure runs specs: a component not running is started, one running another command line is
// replaced, and kube-apiserver's readiness is probed.
func (pl *plane) ensure(ctx context.Context, version string, caPEM []byte, specs []process.Spec) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.procs == nil {
		pl.procs = map[string]*process.Process{}
	}
	if !bytes.Equal(pl.caPEM, caPEM) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		pl.caPool, pl.caPEM = pool, caPEM
	}
	if !pl.stopReplacedLocked(specs) {
		return // the plane was stopped meanwhile
	}
	pl.components = pl.components[:0]
	for _, spec := range specs {
		pl.components = append(pl.components, spec.Component)
		p, ok := pl.procs[spec.Component]
		switch {
		case ok && p.Spec().Hash() == spec.Hash():
			continue
		case ok:
			// Replaced (stopReplacedLocked stopped it): started again at once, as it ran.
		case spec.Component != componentAPIServer && !pl.ready:
			// The controllers' first start waits for kube-apiserver to answer /readyz (the probe
			// queues the tenant then): started beside it they only wait for it, and take CPU
			// its start needs, which was most of create -> control plane Ready on two cores.
			continue
		}
		if spec.Component == componentAPIServer && !pl.gate.acquire(pl) {
			delete(pl.procs, spec.Component) // a replaced one is stopped already
			continue                         // its turn comes (startGate); the controllers wait for it
		}
		pl.procs[spec.Component] = process.Start(ctx, spec, pl.notify)
		if spec.Component == componentAPIServer {
			pl.version = version
			pl.setReadyLocked(false)
			pl.apiServerStarted = time.Now()
			// The start counts are a process's own: this one counts from 1 again, and its
			// version, CA or data (a restore's) needs the join setup whatever the last one had.
			pl.readyStarts, pl.answered, pl.setupFor = 0, 0, 0
		}
	}
	if pl.probe == nil {
		probeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		pl.probe = cancel
		go pl.probeLoop(probeCtx)
	}
}

// stopReplacedLocked stops the processes specs replace (another version, a rotation's
// credentials) before any starts again, in stop's order. One by one in specs' order,
// kube-apiserver went first and drained its controllers' watches, and each controller then
// stopped on its own against a restarting kube-apiserver. pl.mu is held, and released meanwhile:
// false if the plane was stopped then.
func (pl *plane) stopReplacedLocked(specs []process.Spec) bool {
	replaced := map[string]*process.Process{}
	for _, spec := range specs {
		if p, ok := pl.procs[spec.Component]; ok && p.Spec().Hash() != spec.Hash() {
			replaced[spec.Component] = p
		}
	}
	if len(replaced) == 0 {
		return true
	}
	pl.mu.Unlock()
	stopInOrder(replaced, process.StopGrace)
	pl.mu.Lock()
	return pl.procs != nil
}

// address is where kube-apiserver listens: Options.Address, else loopback.
func (pl *plane) address() string {
	if pl.listen == "" {
		return "127.0.0.1"
	}
	return pl.listen
}

// running says whether the plane supervises processes (false once stopped).
func (pl *plane) running() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.procs) > 0
}

// port is the tenant kube-apiserver's port.
func (pl *plane) port() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.rec.Port
}

// apiPort is kube-apiserver's port: the endpoint's, or the internal one behind a listener.
func (pl *plane) apiPort() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.apiPortLocked()
}

func (pl *plane) apiPortLocked() int {
	if pl.rec.InternalPort != 0 {
		return pl.rec.InternalPort
	}
	return pl.rec.Port
}

// behindProxy says whether a wake-on-request listener holds the endpoint's port.
func (pl *plane) behindProxy() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.rec.InternalPort != 0
}

// requestWake makes replicas 0 count as 1 for a while: the listener recorded a wake.
func (pl *plane) requestWake() {
	pl.mu.Lock()
	pl.wakeUntil = time.Now().Add(2 * time.Minute)
	pl.mu.Unlock()
	pl.notify()
}

func (pl *plane) wakeRequested() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return time.Now().Before(pl.wakeUntil)
}

func (pl *plane) clearWake() {
	pl.mu.Lock()
	pl.wakeUntil = time.Time{}
	pl.mu.Unlock()
}

// serving says whether kube-apiserver answers /readyz (the probe's last answer), and returns a
// channel closed once it does.
func (pl *plane) serving() (bool, <-chan struct{}) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.readyCh == nil {
		pl.readyCh = make(chan struct{})
		if pl.ready {
			close(pl.readyCh)
		}
	}
	return pl.ready, pl.readyCh
}

// setReadyLocked sets ready and keeps readyCh closed exactly while it is true. pl.mu is held.
func (pl *plane) setReadyLocked(ready bool) {
	if pl.readyCh == nil {
		pl.readyCh = make(chan struct{})
		if pl.ready {
			close(pl.readyCh)
		}
	}
	switch {
	case ready && !pl.ready:
		close(pl.readyCh)
		pl.gate.release(pl) // started: the next start may go
	case !ready && pl.ready:
		pl.readyCh = make(chan struct{})
	}
	pl.ready = ready
}

func (pl *plane) closeProxy() {
	pl.mu.Lock()
	p := pl.proxy
	pl.proxy = nil
	pl.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// apiServerPortTaken says whether kube-apiserver's last run ended because another process holds
// its port.
func (pl *plane) apiServerPortTaken() bool {
	pl.mu.Lock()
	api := pl.procs[componentAPIServer]
	pl.mu.Unlock()
	if api == nil {
		return false
	}
	if _, running, _ := api.State(); running {
		return false
	}
	return process.LastRunFailedToBind(api.Spec().LogFile)
}

// probedOnce says whether the probe has answered since the plane was made.
func (pl *plane) probedOnce() bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.probed
}

// status says whether kube-apiserver answers /readyz and every process runs, which
// kube-apiserver start that is, and the version it runs.
func (pl *plane) status() (ready bool, apiServerStarts int, version string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if !pl.ready {
		return false, 0, pl.version
	}
	for _, name := range pl.components {
		p := pl.procs[name]
		if p == nil {
			return false, 0, pl.version // not started yet (the controllers wait for /readyz)
		}
		if _, running, _ := p.State(); !running {
			return false, 0, pl.version
		}
	}
	return true, pl.readyStarts, pl.version
}

// answeredStart is the kube-apiserver start the probe last had an answer from, 0 if none.
func (pl *plane) answeredStart() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.answered
}

// markSetUp records that the kubeadm setup was done for this kube-apiserver start.
func (pl *plane) markSetUp(starts int) {
	pl.mu.Lock()
	pl.setupFor = starts
	pl.mu.Unlock()
}

func (pl *plane) setUp(starts int) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.setupFor == starts && starts > 0
}

// probeFailures is how many probes in a row must fail before a serving kube-apiserver counts as
// not ready (the kubelet's readiness default is 3 too). One slow answer on a loaded machine
// flipped the status: 20 tenants starting at once on two cores went Ready and back about ten
// times each, and each flip was status writes and reconciles that loaded the machine more.
const probeFailures = 3

// The probe's intervals. Until kube-apiserver answers at all (connection refused costs it
// nothing) the probe asks every probeListening. Once it answers (500 while its post-start hooks
// run; each answer passes its filters and readiness checks, though etcd's reaches etcd once a
// second at most) the interval doubles up to probeAnswering: 20 tenants starting at once on two
// cores were each asked 50 times a second while CPU was scarcest. A start, and so a waking
// tenant's held connection, is seen ready at most probeAnswering later than at 20 ms.
const (
	probeListening = 20 * time.Millisecond
	probeAnswering = 200 * time.Millisecond
	probeReady     = 2 * time.Second
)

// nextProbeInterval is the wait before the next probe, given the last one: answered says this
// kube-apiserver start has answered once (ready or not).
func nextProbeInterval(last time.Duration, ready, answered bool) time.Duration {
	switch {
	case ready:
		return probeReady
	case !answered:
		return probeListening
	}
	return min(max(2*last, probeListening), probeAnswering)
}

// probeLoop asks kube-apiserver's /readyz on nextProbeInterval's schedule and queues the tenant
// when the answer changes. A process that exits is not ready at once; one that runs stays ready
// until probeFailures probes in a row fail.
func (pl *plane) probeLoop(ctx context.Context) {
	failures := 0
	interval := probeListening
	client := &http.Client{Timeout: 2 * time.Second}
	var transport *http.Transport
	var transportPool *x509.CertPool
	defer func() {
		if transport != nil {
			transport.CloseIdleConnections()
		}
	}()
	for {
		pl.mu.Lock()
		pool := pl.caPool
		api := pl.procs[componentAPIServer]
		wasReady := pl.ready
		url := fmt.Sprintf("https://%s/readyz", endpointString(pl.address(), pl.apiPortLocked()))
		pl.mu.Unlock()
		if transport == nil || pool != transportPool {
			// One kept-alive connection while the CA is the same: a starting kube-apiserver is
			// asked every 20 to 200 ms, and a TLS handshake each time would take CPU it needs.
			if transport != nil {
				transport.CloseIdleConnections()
			}
			transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 1, IdleConnTimeout: 10 * time.Second}
			transportPool = pool
			client.Transport = transport
		}
		ready, running, answered, starts := false, false, false, 0
		if api != nil {
			_, running, starts = api.State()
			if running {
				if resp, err := client.Get(url); err == nil {
					ready, answered = resp.StatusCode == http.StatusOK, true
					_, _ = io.Copy(io.Discard, resp.Body) // read to the end, so the connection is reused
					resp.Body.Close()
				}
			}
		}
		if ready || !running {
			failures = 0
		} else if failures++; wasReady && failures < probeFailures {
			ready = true // not yet: a slow or failed answer of a serving process
		}
		// Only an answer (or its absence) from a running process counts as the first probe: a
		// process being adopted is not running for a moment.
		pl.mu.Lock()
		first := !pl.probed && running
		pl.probed = pl.probed || running
		firstAnswer := answered && pl.answered != starts
		if answered {
			pl.answered = starts
		}
		// A kube-apiserver that answered once and then times out is loaded, not unstarted.
		answeredThisStart := running && starts > 0 && pl.answered == starts
		pl.mu.Unlock()
		if firstAnswer && !ready && !first {
			pl.notify() // the join setup goes in while /readyz waits for the rest
		}
		if ready != wasReady || first {
			pl.mu.Lock()
			pl.setReadyLocked(ready)
			pl.readyStarts = starts
			started := pl.apiServerStarted
			pl.mu.Unlock()
			if ready && !started.IsZero() {
				klog.InfoS("kube-apiserver answers /readyz", "dir", pl.paths.dir, "sinceStart", time.Since(started).Round(time.Millisecond))
			}
			pl.notify()
		}
		interval = nextProbeInterval(interval, ready, answeredThisStart)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// stop stops the processes (the controllers first, kube-apiserver last) and the probe.
func (pl *plane) stop() { pl.stopWithin(process.StopGrace) }

// kill stops the processes at once (SIGKILL): for a restore, which replaces everything they
// would finish on a graceful stop.
func (pl *plane) kill() { pl.stopWithin(0) }

// stopWithin is stop with each process killed after grace.
func (pl *plane) stopWithin(grace time.Duration) {
	pl.mu.Lock()
	procs := pl.procs
	pl.procs = nil
	if pl.probe != nil {
		pl.probe()
		pl.probe = nil
	}
	pl.setReadyLocked(false)
	pl.gate.release(pl)
	var unsupervised []string
	for _, name := range pl.components {
		if procs[name] == nil && name != componentAPIServer {
			unsupervised = append(unsupervised, name)
		}
	}
	pl.mu.Unlock()
	// A controller not yet adopted after a provider restart (it waits for /readyz) still runs.
	var unadopted []int
	for _, name := range unsupervised {
		if rec, ok := process.ReadPidRecord(pl.paths.pidFile(name)); ok && process.Alive(rec.PID, pl.paths.dir) {
			unadopted = append(unadopted, rec.PID)
		}
	}
	stopInOrder(procs, grace, unadopted...)
}

// stopInOrder stops procs (by component) and the unadopted controllers' pids: the controllers
// together, then kube-apiserver, so that its shutdown has no watch or request of theirs to drain.
func stopInOrder(procs map[string]*process.Process, grace time.Duration, unadopted ...int) {
	var wg sync.WaitGroup
	for name, p := range procs {
		if name != componentAPIServer {
			wg.Add(1)
			go func() { defer wg.Done(); p.StopWithin(grace) }()
		}
	}
	for _, pid := range unadopted {
		wg.Add(1)
		go func() { defer wg.Done(); process.Terminate(pid, grace) }()
	}
	wg.Wait()
	if p := procs[componentAPIServer]; p != nil {
		p.StopWithin(grace)
	}
}

// stopRecorded stops the processes recorded in a tenant directory that no plane supervises (a
// tenant deleted while the provider was down).
func stopRecorded(paths tenantPaths) {
	for _, c := range []string{componentScheduler, componentControllerManager, componentAPIServer} {
		if rec, ok := process.ReadPidRecord(paths.pidFile(c)); ok && process.Alive(rec.PID, paths.dir) {
			process.Terminate(rec.PID, process.StopGrace)
		}
		_ = os.Remove(paths.pidFile(c))
	}
}

// readRecord reads a tenant directory's record.
func readRecord(dir string) (tenantRecord, error) {
	var rec tenantRecord
	data, err := os.ReadFile(filepath.Join(dir, "tenant.json"))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, err
	}
	if rec.UID == "" || rec.Port == 0 {
		return rec, errors.New("incomplete tenant record")
	}
	return rec, nil
}

func writeRecord(paths tenantPaths, rec tenantRecord) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(paths.dir, 0o700); err != nil {
		return err
	}
	tmp := paths.record() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, paths.record())
}
