package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// componentEtcd is the datastore's process (and its file stem).
const componentEtcd = "etcd"

// EtcdCommand is the first argument that makes butler-localprovider run as etcd: the datastore
// is this binary, so its etcd is the version this module links (v3.7), whatever etcd --bin-dir
// holds for the management plane.
const EtcdCommand = "etcd"

// dataStoreRecord is what the datastore's directory remembers across provider restarts: its
// ports, which its published endpoint and every tenant's kube-apiserver name.
type dataStoreRecord struct {
	Name       string `json:"name"`
	ClientPort int    `json:"clientPort"`
	PeerPort   int    `json:"peerPort"`
}

// localDataStore is the etcd this provider runs as a datastore for its tenants, with TLS and
// authentication on: its clients present a certificate of its CA, whose CN is their etcd user.
// It is published as a Steward DataStore, and the tenants reach it only through that object
// (as they would a datastore run by anyone else).
type localDataStore struct {
	name  string
	dir   string
	rec   dataStoreRecord
	proc  *process.Process
	creds *datastore.Credentials
	root  *clientv3.Client
	// compactor compacts it; snapshots hold it off while they stream.
	compactor *datastore.Compactor
}

func (d *localDataStore) pki() string      { return filepath.Join(d.dir, "pki") }
func (d *localDataStore) endpoint() string { return endpointString("127.0.0.1", d.rec.ClientPort) }
func (d *localDataStore) secretName() string {
	return "datastore-" + d.name
}

// startDataStore starts (or adopts) the datastore's etcd, turns its authentication on, publishes
// it and compacts it until ctx ends. It returns once the datastore serves.
func (c *Controller) startDataStore(ctx context.Context) (*localDataStore, error) {
	name := c.opts.DataStoreName
	d := &localDataStore{name: name, dir: filepath.Join(c.opts.DataStoresDir, name)}
	if err := os.MkdirAll(d.pki(), 0o700); err != nil {
		return nil, err
	}
	if err := c.dataStorePorts(d); err != nil {
		return nil, err
	}
	ca, err := ensureCAFiles(d.pki(), "datastore-ca "+name)
	if err != nil {
		return nil, err
	}
	loopback := []net.IP{net.IPv4(127, 0, 0, 1)}
	if _, err := pki.EnsureLeaf(d.pki(), "server", ca, pki.Request{CommonName: "etcd-" + name, DNSNames: []string{"localhost"}, IPs: loopback, Usage: pki.ServerAuth}); err != nil {
		return nil, err
	}
	if _, err := pki.EnsureLeaf(d.pki(), "peer", ca, pki.Request{CommonName: "etcd-peer-" + name, DNSNames: []string{"localhost"}, IPs: loopback, Usage: pki.PeerAuth}); err != nil {
		return nil, err
	}
	root, err := pki.EnsureLeaf(d.pki(), "root", ca, pki.Request{CommonName: datastore.RootUser, Usage: pki.ClientAuth})
	if err != nil {
		return nil, err
	}
	d.creds = &datastore.Credentials{Spec: datastore.Spec{Name: name, Driver: datastore.DriverEtcd, Endpoints: []string{d.endpoint()}}, CA: ca, Root: root}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	d.proc = process.Start(ctx, d.procSpec(self), func() {})
	if err := c.serveDataStore(ctx, d); err != nil {
		d.stop() // the next try starts it again
		return nil, err
	}
	klog.FromContext(ctx).Info("Datastore serving", "name", name, "endpoint", d.endpoint(), "dir", d.dir)
	d.compactor = &datastore.Compactor{Client: d.root, Interval: c.opts.CompactionInterval}
	go d.compactor.Run(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("datastore", name)))
	return d, nil
}

// serveDataStore connects as root, turns authentication on (before anything is published: no
// tenant ever sees the datastore without it) and publishes the datastore.
func (c *Controller) serveDataStore(ctx context.Context, d *localDataStore) error {
	var err error
	if d.root, err = d.creds.Connect(d.creds.Root); err != nil {
		return err
	}
	if err := retryFor(ctx, time.Minute, func() error {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return datastore.EnableAuth(actx, d.root)
	}); err != nil {
		return fmt.Errorf("datastore %s at %s: %w (log %s)", d.name, d.endpoint(), err, d.proc.Spec().LogFile)
	}
	return c.publishDataStore(ctx, d)
}

// procSpec is the datastore's etcd process: binary, the provider's own executable.
func (d *localDataStore) procSpec(binary string) process.Spec {
	return process.Spec{
		Component: componentEtcd, Binary: binary, Args: append([]string{EtcdCommand}, d.args()...), Env: tenantEnv(componentEtcd),
		LogFile: filepath.Join(d.dir, "etcd.log"), PidFile: filepath.Join(d.dir, "etcd.pid"), Owner: d.dir,
	}
}

// args is etcd's command line: TLS on both the client and the peer port, and a client
// certificate of the datastore's CA required on each (its CN is the etcd user). No
// auto-compaction: the owner compacts (datastore.Compactor).
func (d *localDataStore) args() []string {
	client := "https://" + d.endpoint()
	peer := "https://" + endpointString("127.0.0.1", d.rec.PeerPort)
	p := d.pki()
	return []string{
		"--name=" + d.name,
		"--data-dir=" + filepath.Join(d.dir, "data"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + d.name + "=" + peer,
		"--client-cert-auth", "--trusted-ca-file=" + filepath.Join(p, pki.CACert),
		"--cert-file=" + pki.CertPath(p, "server"), "--key-file=" + pki.KeyPath(p, "server"),
		"--peer-client-cert-auth", "--peer-trusted-ca-file=" + filepath.Join(p, pki.CACert),
		"--peer-cert-file=" + pki.CertPath(p, "peer"), "--peer-key-file=" + pki.KeyPath(p, "peer"),
		"--log-level=warn",
	}
}

// dataStorePorts gives the datastore the ports recorded in its directory, or two new ones from
// the tenants' range (outside the kernel's ephemeral range, as the tenants' own).
func (c *Controller) dataStorePorts(d *localDataStore) error {
	owner := "datastore/" + d.name
	file := filepath.Join(d.dir, "datastore.json")
	if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &d.rec) == nil &&
		d.rec.ClientPort != 0 && d.rec.PeerPort != 0 &&
		c.ports.Claim(d.rec.ClientPort, owner) && c.ports.Claim(d.rec.PeerPort, owner+"/peer") {
		return nil
	}
	var err error
	d.rec = dataStoreRecord{Name: d.name}
	if d.rec.ClientPort, err = c.ports.Allocate(owner); err != nil {
		return err
	}
	if d.rec.PeerPort, err = c.ports.Allocate(owner + "/peer"); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(d.rec, "", "  ")
	return pki.WriteFile(file, data, 0o644)
}

// publishDataStore applies the Secret with the datastore's CA and root client certificate and
// the DataStore that names them: the contract through which the tenants' control planes (this
// provider's, or a Steward's) find it.
func (c *Controller) publishDataStore(ctx context.Context, d *localDataStore) error {
	ns := c.opts.DataStoreSecretNamespace
	secret := corev1ac.Secret(d.secretName(), ns).WithType(corev1.SecretTypeOpaque).
		WithData(datastore.SecretData(d.creds.CA, d.creds.Root))
	if _, err := c.deps.Kube.CoreV1().Secrets(ns).Apply(ctx, secret, external.LocalProvider.ApplyOptions()); err != nil {
		return fmt.Errorf("Secret %s/%s: %w", ns, d.secretName(), err)
	}
	obj := datastore.Object(d.name, []string{d.endpoint()}, ns, d.secretName())
	if _, err := external.LocalProvider.Apply(ctx, c.deps.Dynamic.Resource(datastore.GVR), obj); err != nil {
		return fmt.Errorf("DataStore %s: %w", d.name, err)
	}
	return nil
}

// stop stops the datastore's etcd; its tenants' kube-apiservers must be stopped before.
func (d *localDataStore) stop() {
	if d.root != nil {
		_ = d.root.Close()
	}
	d.proc.Stop()
}

// ensureCAFiles reads the CA in dir (ca.crt, ca.key) or makes it.
func ensureCAFiles(dir, commonName string) (*pki.KeyPair, error) {
	return pki.EnsureCA(dir, "ca", commonName)
}

// retryFor calls f every 100ms until it succeeds, ctx ends or timeout passes.
func retryFor(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
