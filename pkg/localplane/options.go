// Package localplane runs the local management plane of `make run` and the tests: etcd,
// kube-apiserver (front proxy configured), kube-controller-manager, the Cluster API manager,
// butler-apiserver aggregated through an APIService (N replicas) and butler-localprovider, each a
// process on loopback with its state, certificates and logs in one directory. Run starts them in
// order, writes admin.kubeconfig once the butler API answers, and supervises them until its
// context ends or a process stays gone; then it stops everything in order.
package localplane

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
)

// Options are the plane's settings, read from the environment by FromEnv (the contract the
// tests, the benchmarks and docs/development/planes.md rely on).
type Options struct {
	Root            string // the repository: artifacts/, hack/ and the Go sources to build
	Dir             string // LOCAL_DIR: state, certificates, logs, kubeconfigs
	Bin             string // BIN: the binaries
	KubeVersionsDir string // KUBE_VERSIONS_DIR
	NodeImagesDir   string // NODE_IMAGES_DIR
	// FixedPorts are the port variables the environment set: never picked again.
	FixedPorts map[string]int
	// ButlerAPIServerArgs and LocalProviderArgs are extra flags (BUTLER_APISERVER_ARGS,
	// BUTLER_LOCALPROVIDER_ARGS, split on white space as the shell did).
	ButlerAPIServerArgs, LocalProviderArgs []string
	Replicas                               int              // BUTLER_APISERVER_REPLICAS
	RestartGrace                           time.Duration    // RESTART_GRACE: how long a process may be gone
	TenantPorts                            localports.Range // TENANT_PORT_RANGE
	// ControllerManagerQPS is kube-controller-manager's --kube-api-qps (burst twice that).
	ControllerManagerQPS int
}

// fixablePorts are the port variables the environment may set.
var fixablePorts = []string{"ETCD_PORT", "ETCD_PEER_PORT", "KUBE_APISERVER_PORT", "KUBE_CONTROLLER_MANAGER_PORT", "BUTLER_APISERVER_PORT"}

// FromEnv reads the options from getenv, with root the repository (the defaults are under it).
func FromEnv(root string, getenv func(string) string) (Options, error) {
	o := Options{
		Root:                 root,
		Dir:                  orDefault(getenv("LOCAL_DIR"), filepath.Join(root, "_output", "local")),
		Bin:                  orDefault(getenv("BIN"), filepath.Join(root, "_output", "bin")),
		KubeVersionsDir:      orDefault(getenv("KUBE_VERSIONS_DIR"), filepath.Join(root, "_output", "kube-versions")),
		NodeImagesDir:        orDefault(getenv("NODE_IMAGES_DIR"), filepath.Join(root, "_output", "node-images")),
		FixedPorts:           map[string]int{},
		ButlerAPIServerArgs:  strings.Fields(getenv("BUTLER_APISERVER_ARGS")),
		LocalProviderArgs:    strings.Fields(getenv("BUTLER_LOCALPROVIDER_ARGS")),
		Replicas:             1,
		RestartGrace:         3 * time.Second,
		TenantPorts:          localports.Tenants,
		ControllerManagerQPS: 300,
	}
	for _, dir := range []*string{&o.Root, &o.Dir, &o.Bin, &o.KubeVersionsDir, &o.NodeImagesDir} {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return o, err
		}
		*dir = abs
	}
	return o, o.readNumbers(getenv)
}

// readNumbers reads the numeric settings: ports, replicas, the grace, the tenants' range, QPS.
func (o *Options) readNumbers(getenv func(string) string) error {
	for _, name := range fixablePorts {
		if v := getenv(name); v != "" {
			port, err := strconv.Atoi(v)
			if err != nil || port <= 0 || port > 65535 {
				return fmt.Errorf("%s=%q is not a port", name, v)
			}
			o.FixedPorts[name] = port
		}
	}
	var err error
	if o.Replicas, err = positive("BUTLER_APISERVER_REPLICAS", getenv, o.Replicas); err != nil {
		return err
	}
	if o.ControllerManagerQPS, err = positive("KUBE_CONTROLLER_MANAGER_QPS", getenv, o.ControllerManagerQPS); err != nil {
		return err
	}
	if v := getenv("RESTART_GRACE"); v != "" {
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || s < 0 {
			return fmt.Errorf("RESTART_GRACE=%q is not a number of seconds", v)
		}
		o.RestartGrace = time.Duration(s * float64(time.Second))
	}
	if v := getenv("TENANT_PORT_RANGE"); v != "" {
		if o.TenantPorts, err = localports.ParseRange(v); err != nil {
			return fmt.Errorf("TENANT_PORT_RANGE: %w", err)
		}
	}
	return nil
}

func positive(name string, getenv func(string) string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q is not a positive number", name, v)
	}
	return n, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Paths in LOCAL_DIR.
func (o Options) pkiDir() string             { return filepath.Join(o.Dir, "pki") }
func (o Options) logsDir() string            { return filepath.Join(o.Dir, "logs") }
func (o Options) runDir() string             { return filepath.Join(o.Dir, "run") }
func (o Options) kubeconfig(n string) string { return filepath.Join(o.Dir, n+".kubeconfig") }

// AdminKubeconfig is written once the plane serves, and removed when it stops.
func (o Options) AdminKubeconfig() string { return filepath.Join(o.Dir, "admin.kubeconfig") }

// bootKubeconfig is the plane's own admin kubeconfig while it starts: renamed to
// admin.kubeconfig once the plane serves, so that a waiting test reads a plane that answers.
func (o Options) bootKubeconfig() string { return filepath.Join(o.Dir, ".admin.kubeconfig.starting") }

// PlaneEnv holds the ports chosen, NAME=port a line, while the plane runs.
func (o Options) PlaneEnv() string { return filepath.Join(o.Dir, "plane.env") }
