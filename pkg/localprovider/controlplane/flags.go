package controlplane

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// Components of a tenant control plane, also their file stems in the state directory.
const (
	componentAPIServer         = kubebuild.APIServer
	componentControllerManager = kubebuild.ControllerManager
	componentScheduler         = kubebuild.Scheduler
)

// tenantPaths is the layout of one tenant's state directory.
type tenantPaths struct{ dir string }

func (p tenantPaths) pki() string                     { return filepath.Join(p.dir, "pki") }
func (p tenantPaths) cert(stem string) string         { return pki.CertPath(p.pki(), stem) }
func (p tenantPaths) key(stem string) string          { return pki.KeyPath(p.pki(), stem) }
func (p tenantPaths) pkiFile(name string) string      { return filepath.Join(p.pki(), name) }
func (p tenantPaths) kubeconfig(name string) string   { return filepath.Join(p.dir, name+".conf") }
func (p tenantPaths) log(component string) string     { return filepath.Join(p.dir, component+".log") }
func (p tenantPaths) pidFile(component string) string { return filepath.Join(p.dir, component+".pid") }
func (p tenantPaths) record() string                  { return filepath.Join(p.dir, "tenant.json") }
func (p tenantPaths) admissionConfig() string         { return filepath.Join(p.dir, "admission.yaml") }

// planeArgs is what the command lines of one tenant's processes are made of.
type planeArgs struct {
	Spec  tenantSpec
	Paths tenantPaths
	// Address is where kube-apiserver listens and what it advertises.
	Address string
	Port    int
	Etcd    etcdConn
	// Rotating says a rotation of the CA and service-account key is prepared: both CAs and
	// both keys are trusted (pki.CABundle, pki.PreviousServiceAccountPublic).
	Rotating bool
}

// apiServerArgs is kube-apiserver's command line: kubeadm's flags, on loopback (or Address), with the tenant's
// data under its prefix of its datastore, reached over TLS with the tenant's own client
// certificate (its etcd user may read and write that prefix only). It never compacts: etcd's
// Compact is not scoped to a user, so the datastore's owner does it. The Endpoints reconciler is off: Endpoints cannot hold a
// loopback address, which is where this kube-apiserver listens.
func apiServerArgs(a planeArgs) []string {
	p := a.Paths
	admission := []string{"NodeRestriction"}
	for _, plugin := range a.Spec.AdmissionPlugins {
		if plugin != "NodeRestriction" {
			admission = append(admission, plugin)
		}
	}
	args := []string{
		"--etcd-servers=" + strings.Join(a.Etcd.URLs, ","),
		"--etcd-prefix=" + a.Etcd.Prefix,
		"--etcd-cafile=" + a.Etcd.CAFile,
		"--etcd-certfile=" + a.Etcd.CertFile,
		"--etcd-keyfile=" + a.Etcd.KeyFile,
		"--etcd-compaction-interval=0",
		"--bind-address=" + a.Address,
		"--advertise-address=" + a.Address,
		fmt.Sprintf("--secure-port=%d", a.Port),
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + p.cert("apiserver"),
		"--tls-private-key-file=" + p.key("apiserver"),
		"--client-ca-file=" + p.pkiFile(pki.CACert),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=" + strings.Join(admission, ","),
		"--admission-control-config-file=" + p.admissionConfig(),
		"--enable-bootstrap-token-auth=true",
		"--allow-privileged=true",
		"--service-cluster-ip-range=" + a.Spec.ServiceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc." + a.Spec.ClusterDomain,
		"--service-account-key-file=" + p.pkiFile(pki.ServiceAccountPublic),
		"--service-account-signing-key-file=" + p.pkiFile(pki.ServiceAccountPrivate),
		"--kubelet-client-certificate=" + p.cert("apiserver-kubelet-client"),
		"--kubelet-client-key=" + p.key("apiserver-kubelet-client"),
		// A real node's kubelet serves with a certificate of the tenant CA (a CSR the provider
		// approves for the node's own name and address only): logs, exec and port-forward verify it.
		"--kubelet-certificate-authority=" + p.pkiFile(pki.CACert),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--requestheader-client-ca-file=" + p.pkiFile(pki.FrontProxyCACert),
		"--requestheader-allowed-names=" + pki.FrontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.cert("front-proxy-client"),
		"--proxy-client-key-file=" + p.key("front-proxy-client"),
		"--cert-dir=" + filepath.Join(p.dir, "apiserver"),
		// No watch cache: each of its ~65 caches (one per resource) holds its own etcd watch and a
		// goroutine that wakes every second for bookmarks, which a tenant of a few objects and a
		// few watchers (its controllers, its nodes) does not need. Reads are then etcd's
		// consistent reads and watches etcd's, WatchList's initial events included. An idle
		// tenant took a quarter less CPU and 6 MiB less memory (docs/concepts/local-provider.md);
		// a TenantControlPlane's extraArgs may turn it back on.
		"--watch-cache=false",
		// On SIGTERM, answer 429 with Retry-After until the requests in flight are done, then
		// close every connection within 2 s. Without it the HTTP server waits up to the request
		// timeout (60 s) for connections holding watches, and every stop hit stopGrace's SIGKILL.
		"--shutdown-send-retry-after=true",
	}
	if a.Rotating {
		args = replaceFlag(args, "--client-ca-file=", p.pkiFile(pki.CABundle))
		args = replaceFlag(args, "--kubelet-certificate-authority=", p.pkiFile(pki.CABundle))
		args = append(args, "--service-account-key-file="+p.pkiFile(pki.PreviousServiceAccountPublic))
	}
	return mergeArgs(args, withoutFlag(a.Spec.APIServerArgs, admissionConfigFlag))
}

// admissionConfigFlag is kept as this provider writes it: butler's StewardControlPlane names a
// file in a volume of Steward's Pod (the same external.PodSecurityAdmission), which a host
// process has not got.
const admissionConfigFlag = "admission-control-config-file"

// withoutFlag is args without the flag name.
func withoutFlag(args []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return flagName(a) == name })
}

// SigningDuration is the longest a certificate the tenant's kube-controller-manager signs lives
// (--cluster-signing-duration, its default said here): a CSR's spec.expirationSeconds may ask
// for less, never for more. A node asking for ten years gets this.
const SigningDuration = 365 * 24 * time.Hour

// controllerManagerArgs is kube-controller-manager's command line. It signs node client
// certificates with the tenant CA (the kubelet TLS bootstrap), runs the bootstrap-token signer
// and cleaner kubeadm enables, and serves nothing (--secure-port=0): its health is that of its
// process, and a tenant needs no more ports than its API.
func controllerManagerArgs(a planeArgs) []string {
	p := a.Paths
	conf := p.kubeconfig("controller-manager")
	args := []string{
		"--kubeconfig=" + conf,
		"--secure-port=0",
		"--leader-elect=false",
		"--cluster-name=" + a.Spec.Name,
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--use-service-account-credentials=true",
		"--cluster-signing-cert-file=" + p.pkiFile(pki.CACert),
		"--cluster-signing-key-file=" + p.pkiFile(pki.CAKey),
		"--cluster-signing-duration=" + SigningDuration.String(),
		"--root-ca-file=" + p.pkiFile(pki.CACert),
		"--service-account-private-key-file=" + p.pkiFile(pki.ServiceAccountPrivate),
		"--service-cluster-ip-range=" + a.Spec.ServiceCIDR,
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + a.Spec.PodCIDR,
	}
	if a.Rotating {
		// Pods trust both CAs (kube-root-ca.crt): the server keeps the previous CA's certificate
		// until the rotation completes.
		args = replaceFlag(args, "--root-ca-file=", p.pkiFile(pki.CABundle))
	}
	return mergeArgs(args, a.Spec.ControllerManagerArgs)
}

// schedulerArgs is kube-scheduler's command line; like the controller manager it serves nothing.
func schedulerArgs(a planeArgs) []string {
	conf := a.Paths.kubeconfig("scheduler")
	args := []string{
		"--kubeconfig=" + conf,
		"--secure-port=0",
		"--leader-elect=false",
	}
	return mergeArgs(args, a.Spec.SchedulerArgs)
}

// tenantEnv is the Go runtime's settings of a tenant's component, added to the provider's
// environment. An idle tenant is mostly garbage collector headroom: with GOGC's default of 100
// the heap may grow to twice what is live before a collection, and the runtime keeps those pages.
// A lower GOGC keeps the heap closer to what is live, scaling with it (a memory limit would not:
// it starves a tenant that grows); the price is more frequent collections. At 25 against 50 an
// idle tenant's kube-apiserver held 19 MiB less, with no CPU difference measurable idle or busy
// (TestTenantFootprint, 3 pairs).
//
// The datastore's etcd, shared by up to --datastore-max-tenants tenants, runs at GOGC=50: its
// memory per tenant is mostly each kube-apiserver's connections and watch streams. At 50 its share
// of an awake tenant was 3 MiB less, and a busy tenant's writes cost it no more CPU
// (TestTenantFootprint, 3 pairs each).
//
// The controller manager runs on one P (GOMAXPROCS=1): idle, it is dozens of tickers (a workqueue's
// metrics every 500 ms each, the attach-detach reconciler every 100 ms) whose every wake-up another
// P spins to steal from. On one P an idle tenant's took a fifth less CPU (0.44% of a core against
// 0.56%, TestTenantFootprint, pairs); it is not on the way to Ready, and its work is mostly waiting
// on kube-apiserver.
func tenantEnv(component string) []string {
	switch component {
	case componentControllerManager:
		return []string{"GOGC=25", "GOMAXPROCS=1"}
	case componentAPIServer, componentScheduler:
		return []string{"GOGC=25"}
	case componentEtcd:
		return []string{"GOGC=50"}
	}
	return nil
}

// tenantNice is the nice value of a tenant's processes: when the machine's CPU is short they
// yield to the management plane's (kube-apiserver, butler-apiserver, etcd, this provider), as
// pods of tenants yield to a management cluster's system-critical ones. Every process here runs
// in a session of its own, which the kernel's autogroup shares the CPU between equally: at 70
// awake tenants, 210 sessions of theirs left butler-apiserver too little to answer
// kube-apiserver's discovery in time, and its API went unavailable while ten more started
// (bench -capacity, P7). The datastore's etcd, which every tenant waits on, keeps 0.
const tenantNice = 10

// replaceFlag sets the value of the flag prefix ("--name=") in args.
func replaceFlag(args []string, prefix, value string) []string {
	for i, a := range args {
		if strings.HasPrefix(a, prefix) {
			args[i] = prefix + value
		}
	}
	return args
}

// mergeArgs applies extra "--flag=value" arguments over args: a flag given in both takes the
// extra value in place; new flags are appended in their order.
func mergeArgs(args, extra []string) []string {
	out := append([]string(nil), args...)
	index := map[string]int{}
	for i, a := range out {
		index[flagName(a)] = i
	}
	for _, e := range extra {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !strings.HasPrefix(e, "-") {
			e = "--" + e
		}
		if i, ok := index[flagName(e)]; ok {
			out[i] = e
			continue
		}
		index[flagName(e)] = len(out)
		out = append(out, e)
	}
	return out
}

func flagName(arg string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name
}
