// Package onenodecluster runs `make cluster`'s one-node Kubernetes cluster on this machine, for
// installing the chart as a platform team would: etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler (hack/build-kube.sh), a kubelet and kube-proxy built the same way, Debian's
// containerd and runc, Debian's CNI plugins and a pause image built from source. Nothing is
// pulled: images come from `make images` and are imported into containerd. Pods and Services
// live only on this machine: the Pods' bridge holds POD_CIDR (the node's address is its first
// address), Services take SERVICE_CIDR, nothing is masqueraded out.
//
// Run writes admin.kubeconfig in its directory once the node is Ready, and runs until its
// context ends or a process exits; then it stops everything and removes what it made: the
// Pods' containers, containerd's state, the kubelet's mounts and cgroups, kube-proxy's and the
// kubelet's iptables rules, the bridge.
package onenodecluster

import (
	"cmp"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Options are the cluster's settings, read from the environment by FromEnv.
type Options struct {
	Root string // the repository: hack/ builds the binaries and the pause image
	Dir  string // CLUSTER_DIR: state, certificates, logs, kubeconfigs
	Bin  string // BIN: the binaries (built when missing)
	// PodCIDR is the Pods' bridge (POD_CIDR); its first address is the node's.
	PodCIDR netip.Prefix
	// ServiceCIDR is SERVICE_CIDR; its first address is the kubernetes Service.
	ServiceCIDR netip.Prefix
	// Images are the image archives imported (IMAGES, split on white space; default
	// _output/images/*.oci.tar). The pause image is imported besides.
	Images []string
	Runc   string // RUNC: runc's binary (default runc on PATH)
}

// FromEnv reads the options from getenv, with root the repository (the defaults are under it).
func FromEnv(root string, getenv func(string) string) (Options, error) {
	o := Options{
		Root: root,
		Dir:  cmp.Or(getenv("CLUSTER_DIR"), filepath.Join(root, "_output", "cluster")),
		Bin:  cmp.Or(getenv("BIN"), filepath.Join(root, "_output", "bin")),
		Runc: getenv("RUNC"),
	}
	for _, dir := range []*string{&o.Root, &o.Dir, &o.Bin} {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return o, err
		}
		*dir = abs
	}
	var err error
	if o.PodCIDR, err = cidr("POD_CIDR", cmp.Or(getenv("POD_CIDR"), "10.244.0.0/24")); err != nil {
		return o, err
	}
	if o.ServiceCIDR, err = cidr("SERVICE_CIDR", cmp.Or(getenv("SERVICE_CIDR"), "10.97.0.0/24")); err != nil {
		return o, err
	}
	if o.PodCIDR.Overlaps(o.ServiceCIDR) {
		return o, fmt.Errorf("POD_CIDR %s and SERVICE_CIDR %s overlap", o.PodCIDR, o.ServiceCIDR)
	}
	o.Images = strings.Fields(getenv("IMAGES"))
	if len(o.Images) == 0 {
		o.Images, _ = filepath.Glob(filepath.Join(root, "_output", "images", "*.oci.tar"))
		if len(o.Images) == 0 {
			o.Images = []string{filepath.Join(root, "_output", "images", "*.oci.tar")}
		}
	}
	return o, nil
}

// cidr reads an IPv4 network with room for the node (or the Service) and more.
func cidr(name, v string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(v)
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		return netip.Prefix{}, fmt.Errorf("%s=%q is not an IPv4 network of at least 4 addresses", name, v)
	}
	return p.Masked(), nil
}

// nodeIP is the node's address: the first of POD_CIDR, on the bridge. kube-apiserver serves
// there, which the kubernetes Service points Pods at.
func (o Options) nodeIP() netip.Addr { return o.PodCIDR.Addr().Next() }

// kubernetesServiceIP is the kubernetes Service's ClusterIP, which kube-apiserver's certificate names.
func (o Options) kubernetesServiceIP() netip.Addr { return o.ServiceCIDR.Addr().Next() }

// The names the cluster gives the host's objects.
const (
	bridge      = "butler0"
	node        = "butler-node"
	cniNetwork  = "butler-cluster"
	kubeletCgrp = "/butler-cluster"
)

// Paths in CLUSTER_DIR.
func (o Options) path(elem ...string) string {
	return filepath.Join(append([]string{o.Dir}, elem...)...)
}
func (o Options) pkiDir() string             { return o.path("pki") }
func (o Options) logsDir() string            { return o.path("logs") }
func (o Options) kubeconfig(n string) string { return o.path(n + ".kubeconfig") }
func (o Options) containerdDir() string      { return o.path("containerd") }
func (o Options) containerdSock() string     { return o.path("containerd", "containerd.sock") }
func (o Options) kubeletDir() string         { return o.path("kubelet") }
func (o Options) podLogsDir() string         { return o.path("pod-logs") }

// AdminKubeconfig is written once the node is Ready, and removed when the cluster stops.
func (o Options) AdminKubeconfig() string { return o.path("admin.kubeconfig") }

// bootKubeconfig is the cluster's own admin kubeconfig while it starts: renamed to
// admin.kubeconfig once the node is Ready, so that a waiting script reads a cluster that serves.
func (o Options) bootKubeconfig() string { return o.path(".admin.kubeconfig.starting") }

// ClusterEnv tells scripts (hack/test-cluster.sh) where things are: NODE_IP, ETCD_URL and
// KUBE_APISERVER_URL, NAME=value a line, while the cluster runs.
func (o Options) ClusterEnv() string { return o.path("cluster.env") }
