// Package etcdtest runs an embedded etcd for a unit test: the datastore, snapshot and other
// packages that talk to etcd share this one start instead of each writing its own.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// Start runs an etcd on free loopback ports until the test ends and returns its client URL.
// With tls, clients connect over https and must present a certificate tls.TrustedCAFile signs
// (the local provider runs its datastores so); without, over plain http.
func Start(t testing.TB, tls *transport.TLSInfo) url.URL {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = filepath.Join(t.TempDir(), "data")
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	if tls != nil {
		client.Scheme = "https"
		cfg.ClientTLSInfo = *tls
		cfg.ClientTLSInfo.ClientCertAuth = true
	}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not start")
	}
	return client
}

// Client starts a plain-http etcd (Start) and connects to it, closed when the test ends.
func Client(t testing.TB) *clientv3.Client {
	t.Helper()
	u := Start(t, nil)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{u.String()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
