package localplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// plane is one run of the plane.
type plane struct {
	o     Options
	log   func(format string, args ...any)
	ports *ports
	procs *procs
	ca    *pki.KeyPair
	kube  *kube
}

// Run starts the plane, supervises it until ctx ends or one of its processes stays gone for
// longer than RestartGrace, then stops everything in order. A start that fails stops what it
// started the same way. It returns the error that ended the plane (logged before the stop, so
// that it reads first); ctx's error when ctx ended it.
func Run(ctx context.Context, o Options, log func(format string, args ...any)) error {
	pl := &plane{o: o, log: log, ports: newPorts(o.FixedPorts, o.TenantPorts)}
	pl.procs = &procs{Group: process.Group{LogDir: o.logsDir()}, o: o, log: log, ports: pl.ports}
	lock, err := pl.prepare(ctx)
	if err != nil {
		log("%v", err)
		return err
	}
	defer lock.Close()
	err = pl.start(ctx)
	if err == nil {
		pl.banner()
		err = pl.supervise(ctx)
	}
	if ctx.Err() == nil {
		log("%v", err)
	}
	pl.stop()
	return err
}

// prepare builds what is missing, makes the certificates, takes LOCAL_DIR's lock and stops
// what an earlier run left.
func (pl *plane) prepare(ctx context.Context) (*os.File, error) {
	if err := pl.ensureBinaries(ctx); err != nil {
		return nil, err
	}
	for _, dir := range []string{pl.o.pkiDir(), pl.o.logsDir(), pl.o.runDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	var err error
	if pl.ca, err = ensureCertificates(pl.o.pkiDir()); err != nil {
		return nil, fmt.Errorf("certificates in %s: %w", pl.o.pkiDir(), err)
	}
	_ = os.Remove(pl.o.AdminKubeconfig())
	lock, err := pl.o.lock()
	if err != nil {
		return nil, err
	}
	pl.o.sweep("left by an earlier run", pl.log)
	return lock, nil
}

// ensureBinaries builds the binaries BIN lacks, and butler-localprovider always (seconds when
// cached: a stale one would test old code).
func (pl *plane) ensureBinaries(ctx context.Context) error {
	missing := func(names ...string) bool {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(pl.o.Bin, n)); err != nil {
				return true
			}
		}
		return false
	}
	if missing("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd") {
		pl.log("building kube-apiserver, kube-controller-manager, kube-scheduler and etcd (the first time takes minutes)")
		if err := pl.run(ctx, filepath.Join(pl.o.Root, "hack", "build-kube.sh")); err != nil {
			return err
		}
	}
	if missing("capi-manager") {
		pl.log("building the Cluster API manager (the first time takes minutes)")
		if err := pl.run(ctx, filepath.Join(pl.o.Root, "hack", "build-capi.sh")); err != nil {
			return err
		}
	}
	if apiserver := filepath.Join(pl.o.Bin, "butler-apiserver"); missing(filepath.Base(apiserver)) {
		if err := pl.goBuild(ctx, apiserver); err != nil {
			return err
		}
	}
	provider := filepath.Join(pl.o.Bin, "butler-localprovider")
	if err := pl.goBuild(ctx, provider); err != nil {
		if missing(filepath.Base(provider)) {
			return fmt.Errorf("butler-localprovider does not build: %w", err)
		}
		pl.log("butler-localprovider does not build now; running the one built before")
	}
	return nil
}

// goBuild builds bin from ./cmd/<its name> as the Makefile builds this module (static,
// -trimpath), so that the build cache serves it.
func (pl *plane) goBuild(ctx context.Context, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+filepath.Base(bin))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	cmd.Dir, cmd.Stdout, cmd.Stderr = pl.o.Root, os.Stderr, os.Stderr
	return cmd.Run()
}

func (pl *plane) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = pl.o.Root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// start brings the plane up, step by step, and publishes it.
func (pl *plane) start(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		pl.pickPorts,
		pl.startEtcd,
		pl.startKubeAPIServer,
		pl.installCRDs,
		pl.startLocalProvider,
		pl.startCAPIManager,
		pl.startButlerAPIServers,
		pl.waitServing,
		pl.publish,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// components are every process of the plane, for their port variables.
func (pl *plane) components() []component {
	return append([]component{pl.etcd(), pl.kubeAPIServer(), pl.kubeControllerManager(), pl.capiManager(), pl.localProvider()},
		pl.butlerAPIServers()...)
}

func (pl *plane) pickPorts(context.Context) error {
	for _, c := range pl.components() {
		if _, err := pl.ports.pick(c.ports); err != nil {
			return err
		}
	}
	return nil
}

// up launches c and waits until it listens on its ports.
func (pl *plane) up(ctx context.Context, c component) error {
	if err := pl.procs.launch(c); err != nil {
		return err
	}
	return pl.procs.settle(ctx, c)
}

func (pl *plane) startEtcd(ctx context.Context) error {
	if err := pl.up(ctx, pl.etcd()); err != nil {
		return err
	}
	return pl.procs.WaitFor(ctx, "etcd", 30*time.Second, httpOK(pl.url("http", "ETCD_PORT")+"/health"))
}

// startKubeAPIServer starts kube-apiserver, writes the kubeconfigs (they name its port, final
// now), and launches kube-controller-manager.
func (pl *plane) startKubeAPIServer(ctx context.Context) error {
	if err := pl.up(ctx, pl.kubeAPIServer()); err != nil {
		return err
	}
	server := pl.url("https", "KUBE_APISERVER_PORT")
	clients := []struct{ file, cert, user string }{
		{pl.o.bootKubeconfig(), "admin", "admin"},
		{pl.o.kubeconfig("kube-controller-manager"), "kube-controller-manager", "kube-controller-manager"},
	}
	for _, name := range []string{pl.butlerAPIServers()[0].name, pl.localProvider().name, pl.capiManager().name} {
		clients = append(clients, struct{ file, cert, user string }{pl.o.kubeconfig(name), name + "-client", name})
	}
	for _, c := range clients {
		if err := writeKubeconfig(c.file, pl.o.pkiDir(), c.cert, c.user, server, pl.ca); err != nil {
			return err
		}
	}
	var err error
	if pl.kube, err = newKube(pl.o.bootKubeconfig()); err != nil {
		return err
	}
	if err := pl.procs.WaitFor(ctx, "kube-apiserver", 120*time.Second, pl.kube.readyz); err != nil {
		return err
	}
	return pl.procs.launch(pl.kubeControllerManager())
}

// installCRDs applies the external CRDs the lifecycle controllers write and read (Cluster API,
// Steward, the providers, ours: artifacts/crds/README.md), established before butler-apiserver
// starts its controllers.
func (pl *plane) installCRDs(ctx context.Context) error {
	files, err := manifestsIn(filepath.Join(pl.o.Root, "artifacts", "crds"))
	if err != nil {
		return err
	}
	crds, err := pl.kube.applyFiles(ctx, files...)
	if err != nil {
		return err
	}
	return pl.procs.WaitFor(ctx, "the CRDs to be established", 60*time.Second, func(ctx context.Context) bool { return pl.kube.established(ctx, crds) })
}

// startLocalProvider launches the local provider: tenant control planes (a kube-apiserver,
// kube-controller-manager and kube-scheduler process each, on the provider's own datastore etcd,
// never the plane's) and local machines.
func (pl *plane) startLocalProvider(ctx context.Context) error {
	if err := pl.kube.apply(ctx, []*unstructured.Unstructured{clusterAdmin(localProviderUser)}); err != nil {
		return err
	}
	return pl.procs.launch(pl.localProvider())
}

// startCAPIManager launches the Cluster API core manager (Cluster, MachineDeployment, MachineSet,
// Machine, ... controllers), as a management cluster runs it.
func (pl *plane) startCAPIManager(ctx context.Context) error {
	if err := pl.kube.apply(ctx, []*unstructured.Unstructured{clusterAdmin(capiManagerUser)}); err != nil {
		return err
	}
	if err := copyWebhookCerts(pl.o.pkiDir(), pl.webhookCertDir()); err != nil {
		return err
	}
	return pl.procs.launch(pl.capiManager())
}

// startButlerAPIServers applies the manifests a platform admin applies (only the Service differs:
// an ExternalName to loopback), launches the replicas, and once every process listens on its
// ports (or was moved to free ones) points the APIService at the first replica.
func (pl *plane) startButlerAPIServers(ctx context.Context) error {
	deploy := func(name string) string { return filepath.Join(pl.o.Root, "artifacts", "deploy", name) }
	if err := pl.kube.applyDeclared(ctx, deploy("namespace.yaml"), deploy("rbac.yaml"), deploy("clusterroles.yaml"),
		filepath.Join(pl.o.Root, "artifacts", "local", "service-externalname.yaml"), deploy("apiservice.yaml")); err != nil {
		return err
	}
	replicas := pl.butlerAPIServers()
	for _, c := range replicas {
		if err := pl.procs.launch(c); err != nil {
			return err
		}
	}
	for _, c := range append([]component{pl.kubeControllerManager(), pl.capiManager()}, replicas...) {
		if err := pl.procs.settle(ctx, c); err != nil {
			return err
		}
	}
	return pl.kube.pointAPIService(ctx, pl.ca.CertPEM, pl.ports.get(replicas[0].ports[0]))
}

// waitServing waits until the butler API answers through kube-apiserver, and the Cluster API
// manager is ready.
func (pl *plane) waitServing(ctx context.Context) error {
	for _, w := range []struct {
		what    string
		timeout time.Duration
		ok      func(context.Context) bool
	}{
		{"the APIService to be Available", 120 * time.Second, pl.kube.apiServiceAvailable},
		{"discovery to list the butler resources", 60 * time.Second, pl.kube.discoveryListsButler},
		{"a List of tenantclusters through kube-apiserver", 60 * time.Second, pl.kube.listsTenantClusters},
		{"the Cluster API manager", 120 * time.Second, httpOK(pl.url("http", "CAPI_HEALTH_PORT") + "/readyz")},
	} {
		if err := pl.procs.WaitFor(ctx, w.what, w.timeout, w.ok); err != nil {
			return err
		}
	}
	return nil
}

// publish writes the ports chosen (plane.env, for scripts and tests that drive the plane), then
// admin.kubeconfig, which says the plane serves.
func (pl *plane) publish(context.Context) error {
	var env strings.Builder
	for _, c := range pl.components() {
		for _, v := range c.ports {
			fmt.Fprintf(&env, "%s=%d\n", v, pl.ports.get(v))
		}
	}
	if err := os.WriteFile(pl.o.PlaneEnv(), []byte(env.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(pl.o.bootKubeconfig(), pl.o.AdminKubeconfig())
}

func (pl *plane) banner() {
	fmt.Printf(`
Management plane is up (state and logs in %[1]s; ports in %[2]s):
  kube-apiserver    %[3]s
  butler-apiserver  %[4]s  (APIService %[5]s: Available; %[6]d replica(s))
  etcd              %[7]s
  tenants           butler-localprovider, control planes on 127.0.0.1:%[8]s (state in %[1]s/tenants)
  capi-manager      Cluster API core controllers (webhooks on 127.0.0.1:%[9]s)

  export KUBECONFIG=%[10]s
  kubectl get tenantclusters -A

Ctrl-C (or SIGTERM) stops everything.
`, pl.o.Dir, pl.o.PlaneEnv(), pl.url("https", "KUBE_APISERVER_PORT"), pl.url("https", "BUTLER_APISERVER_PORT"),
		butlerAPIService, pl.o.Replicas, pl.url("http", "ETCD_PORT"), pl.o.TenantPorts, pl.port("CAPI_WEBHOOK_PORT"), pl.o.AdminKubeconfig())
}

// supervise runs until ctx ends or a process is gone for longer than RestartGrace: one restarted
// by hand (or by a test) has that long to record its new pid in its pid file.
func (pl *plane) supervise(ctx context.Context) error {
	for {
		for _, name := range pl.procs.Names() {
			if pl.procs.alive(name) {
				continue
			}
			if err := sleep(ctx, pl.o.RestartGrace); err != nil {
				return err
			}
			if !pl.procs.alive(name) {
				return pl.procs.ExitedError(name, "")
			}
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// stop stops every process in order: the local provider first (it stops the tenants'
// kube-apiservers, then their datastore etcd), then the others in the reverse of their start,
// kube-apiserver before etcd (with etcd gone first it hangs on shutdown). Whatever still runs
// after that was not stopped by its parent (a tenant process of a provider that was killed):
// nothing of the plane outlives it.
func (pl *plane) stop() {
	for _, f := range []string{pl.o.AdminKubeconfig(), pl.o.bootKubeconfig(), pl.o.PlaneEnv()} {
		_ = os.Remove(f)
	}
	pl.log("stopping")
	first := pl.localProvider().name
	pl.procs.stop(first)
	names := pl.procs.Names()
	for i := len(names) - 1; i >= 0; i-- {
		if name := names[i]; name != first {
			pl.procs.stop(name)
		}
	}
	pl.o.sweep("not stopped with the plane", pl.log)
	pl.log("stopped")
}
