package app

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
)

// startEmbeddedEtcd runs a one-member etcd in dir, listening on loopback only, and returns its
// client URL and a function that stops it. The API server must stop first: a server whose etcd
// vanished hangs in shutdown. Its ports are picked outside the kernel's ephemeral range, and
// picked again if another process binds one first.
func startEmbeddedEtcd(dir string) (string, func(), error) {
	const attempts = 5
	for attempt := 1; ; attempt++ {
		url, stop, err := startEmbeddedEtcdOnce(dir)
		if err == nil || !localports.InUse(err) || attempt == attempts {
			return url, stop, err
		}
		klog.InfoS("An embedded etcd port was taken; trying others", "err", err)
	}
}

func startEmbeddedEtcdOnce(dir string) (string, func(), error) {
	clientPort, err := localports.Free()
	if err != nil {
		return "", nil, err
	}
	peerPort, err := localports.Free()
	if err != nil {
		return "", nil, err
	}
	if peerPort == clientPort {
		return "", nil, fmt.Errorf("picked port %d twice: address already in use", clientPort)
	}
	cfg := embed.NewConfig()
	cfg.Name = "butler"
	cfg.Dir = filepath.Join(dir, "etcd")
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"

	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		etcd.Close()
		return "", nil, fmt.Errorf("embedded etcd in %s did not become ready in 60s", cfg.Dir)
	}
	klog.InfoS("Embedded etcd ready", "dir", cfg.Dir, "url", clientURL.String())

	go func() {
		if err, ok := <-etcd.Err(); ok && err != nil {
			klog.ErrorS(err, "Embedded etcd failed")
		}
	}()
	return clientURL.String(), etcd.Close, nil
}
