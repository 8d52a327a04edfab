package localplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The plane's processes and their command lines. The args functions read the ports when a
// process is launched, as a process started again after a port was taken gets new ones.

func (pl *plane) etcd() component {
	return component{name: "etcd", ports: []string{"ETCD_PORT", "ETCD_PEER_PORT"}, args: func() []string {
		client, peer := pl.url("http", "ETCD_PORT"), pl.url("http", "ETCD_PEER_PORT")
		return []string{filepath.Join(pl.o.Bin, "etcd"), "--name", "local", "--data-dir", filepath.Join(pl.o.Dir, "etcd"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "local=" + peer, "--listen-metrics-urls", "", "--log-level", "warn"}
	}}
}

func (pl *plane) kubeAPIServer() component {
	return component{name: "kube-apiserver", ports: []string{"KUBE_APISERVER_PORT"}, args: func() []string {
		pkiFile := func(name string) string { return filepath.Join(pl.o.pkiDir(), name) }
		return []string{filepath.Join(pl.o.Bin, "kube-apiserver"),
			"--etcd-servers", pl.url("http", "ETCD_PORT"),
			"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", pl.port("KUBE_APISERVER_PORT"),
			"--endpoint-reconciler-type", "none",
			"--tls-cert-file", pkiFile("kube-apiserver.crt"), "--tls-private-key-file", pkiFile("kube-apiserver.key"),
			"--client-ca-file", pkiFile("ca.crt"),
			"--authorization-mode", "RBAC",
			"--service-cluster-ip-range", "10.96.0.0/16",
			"--service-account-issuer", "https://kubernetes.default.svc",
			"--service-account-key-file", pkiFile("sa.pub"), "--service-account-signing-key-file", pkiFile("sa.key"),
			"--requestheader-client-ca-file", pkiFile("front-proxy-ca.crt"),
			"--requestheader-allowed-names", "front-proxy-client",
			"--requestheader-username-headers", "X-Remote-User",
			"--requestheader-group-headers", "X-Remote-Group",
			"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
			"--proxy-client-cert-file", pkiFile("front-proxy-client.crt"), "--proxy-client-key-file", pkiFile("front-proxy-client.key"),
			"--cert-dir", filepath.Join(pl.o.Dir, "kube-apiserver")}
	}}
}

// kubeControllerManager: the namespace controller empties a deleted namespace with a List and a
// DeleteCollection per namespaced kind served (artifacts/crds alone adds 44): at the default 20
// requests/s and 10 namespaces at a time, 200 deleted tenant namespaces took minutes.
// kube-apiserver shares itself by API Priority and Fairness.
func (pl *plane) kubeControllerManager() component {
	return component{name: "kube-controller-manager", ports: []string{"KUBE_CONTROLLER_MANAGER_PORT"}, args: func() []string {
		kc := pl.o.kubeconfig("kube-controller-manager")
		return []string{filepath.Join(pl.o.Bin, "kube-controller-manager"),
			"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
			"--bind-address", "127.0.0.1", "--secure-port", pl.port("KUBE_CONTROLLER_MANAGER_PORT"),
			"--leader-elect=false", "--use-service-account-credentials",
			"--service-account-private-key-file", filepath.Join(pl.o.pkiDir(), "sa.key"),
			"--root-ca-file", filepath.Join(pl.o.pkiDir(), "ca.crt"),
			"--kube-api-qps", strconv.Itoa(pl.o.ControllerManagerQPS), "--kube-api-burst", strconv.Itoa(2 * pl.o.ControllerManagerQPS),
			"--concurrent-namespace-syncs", "20",
			"--controllers", "namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller," +
				"clusterrole-aggregation-controller,root-ca-certificate-publisher-controller"}
	}}
}

func (pl *plane) capiManager() component {
	return component{name: "capi-manager", ports: []string{"CAPI_WEBHOOK_PORT", "CAPI_HEALTH_PORT", "CAPI_DIAGNOSTICS_PORT"}, args: func() []string {
		return []string{filepath.Join(pl.o.Bin, "capi-manager"),
			"--kubeconfig", pl.o.kubeconfig("capi-manager"), "--leader-elect=false",
			"--webhook-port", pl.port("CAPI_WEBHOOK_PORT"), "--webhook-cert-dir", pl.webhookCertDir(),
			"--health-addr", "127.0.0.1:" + pl.port("CAPI_HEALTH_PORT"),
			"--diagnostics-address", "127.0.0.1:" + pl.port("CAPI_DIAGNOSTICS_PORT"), "--insecure-diagnostics"}
	}}
}

func (pl *plane) webhookCertDir() string {
	return filepath.Join(pl.o.Dir, "capi-manager", "webhook-certs")
}

// butlerAPIServers are the replicas: butler-apiserver, then butler-apiserver-1, ... on ports of
// their own (BUTLER_APISERVER_1_PORT, ...). The APIService reaches the first; the others stand
// by for the workers' Lease, as the replicas of a Deployment do.
func (pl *plane) butlerAPIServers() []component {
	var replicas []component
	for i := range pl.o.Replicas {
		// Named after the binary, as its kubeconfig is.
		bin := filepath.Join(pl.o.Bin, "butler-apiserver")
		name, portVar := filepath.Base(bin), "BUTLER_APISERVER_PORT"
		if i > 0 {
			name, portVar = fmt.Sprintf("%s-%d", name, i), fmt.Sprintf("BUTLER_APISERVER_%d_PORT", i)
		}
		replicas = append(replicas, component{name: name, ports: []string{portVar}, args: func() []string {
			kc := pl.o.kubeconfig(filepath.Base(bin))
			return append([]string{bin,
				"--etcd-servers", pl.url("http", "ETCD_PORT"),
				"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
				"--bind-address", "127.0.0.1", "--secure-port", pl.port(portVar),
				"--tls-cert-file", filepath.Join(pl.o.pkiDir(), "butler-apiserver-serving.crt"),
				"--tls-private-key-file", filepath.Join(pl.o.pkiDir(), "butler-apiserver-serving.key"),
				"--data-dir", filepath.Join(pl.o.Dir, name), "--snapshot-dir", filepath.Join(pl.o.Dir, "snapshots")},
				pl.o.ButlerAPIServerArgs...)
		}})
	}
	return replicas
}

// localProvider runs the tenants' control planes as processes (state in LOCAL_DIR/tenants) and
// the local machines.
func (pl *plane) localProvider() component {
	bin := filepath.Join(pl.o.Bin, "butler-localprovider")
	return component{name: filepath.Base(bin), args: func() []string {
		return append([]string{bin,
			"--kubeconfig", pl.o.kubeconfig(filepath.Base(bin)),
			"--bin-dir", pl.o.Bin, "--state-dir", filepath.Join(pl.o.Dir, "tenants"),
			"--kube-versions-dir", pl.o.KubeVersionsDir, "--snapshot-dir", filepath.Join(pl.o.Dir, "snapshots"),
			"--port-range", pl.o.TenantPorts.String(),
			"--node-bin-dir", pl.o.Bin, "--node-images", nodeImages(pl.o.NodeImagesDir)},
			pl.o.LocalProviderArgs...)
	}}
}

// nodeImages are the images every real node imports: pause, echo and CoreDNS
// (hack/build-node-images.sh), and Flux's two controllers when hack/build-flux-images.sh built
// them (a tenant's spec.addons.gitops).
func nodeImages(dir string) string {
	list := []string{filepath.Join(dir, "pause.oci.tar"), filepath.Join(dir, "echo.oci.tar"), filepath.Join(dir, "coredns.oci.tar")}
	for _, flux := range []string{"flux-source-controller.oci.tar", "flux-kustomize-controller.oci.tar"} {
		if _, err := os.Stat(filepath.Join(dir, flux)); err == nil {
			list = append(list, filepath.Join(dir, flux))
		}
	}
	return strings.Join(list, ",")
}

func (pl *plane) port(name string) string { return strconv.Itoa(pl.ports.get(name)) }

func (pl *plane) url(scheme, portVar string) string {
	return scheme + "://127.0.0.1:" + pl.port(portVar)
}
