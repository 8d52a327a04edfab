package controlplane

// Spare control planes. A new tenant's create -> Ready is mostly its kube-apiserver's first
// start (2.6 s of 3.2 s on two cores; its RBAC bootstrap alone waits a second before its first
// try). With Options.SpareControlPlanes > 0 the provider keeps that many kube-apiservers started
// ahead, each with its own state directory, CA and certificates, datastore user and prefix, and
// port, on the command line a tenant of spareShape would have. A new tenant of that shape claims
// a Ready one: <state>/<uid> becomes a link to the spare's directory, and the spare's port,
// datastore user and prefix and CA become the tenant's, so its kube-apiserver's command line and
// credentials stay the spare's and it is not restarted; only its controllers start. The pool is
// then refilled in the background.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// spare is one spare control plane: its plane, and the key of the TenantControlPlane that
// claimed it (its processes' changes queue that from then on).
type spare struct {
	pl  *plane
	key atomic.Pointer[string]
	// start (re)starts its kube-apiserver: again when the start gate gives it its turn, which
	// notify says on turn while no tenant has claimed it.
	start func()
	turn  chan struct{}
}

func (sp *spare) notify(c *Controller) func() {
	return func() {
		if key := sp.key.Load(); key != nil {
			c.tcpQueue.Add(*key)
			return
		}
		select {
		case sp.turn <- struct{}{}:
		default:
		}
	}
}

// sparePool holds the spares not yet claimed, starting or Ready.
type sparePool struct {
	want   int
	mu     sync.Mutex
	spares []*spare
	// refill is signalled by a claim.
	refill chan struct{}
}

func newSparePool(want int) *sparePool {
	return &sparePool{want: want, refill: make(chan struct{}, 1)}
}

// take removes and returns a Ready spare on dataStore ("": on any), nil if there is none.
func (p *sparePool) take(dataStore string) *spare {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, sp := range p.spares {
		ready, _, _ := sp.pl.status()
		sp.pl.mu.Lock()
		on := sp.pl.rec.DataStore
		sp.pl.mu.Unlock()
		if ready && (dataStore == "" || dataStore == on) {
			p.spares = slices.Delete(p.spares, i, i+1)
			return sp
		}
	}
	return nil
}

func (p *sparePool) put(sp *spare) {
	p.mu.Lock()
	p.spares = append(p.spares, sp)
	p.mu.Unlock()
}

// remove takes sp out of the pool; false if it is not there (claimed meanwhile).
func (p *sparePool) remove(sp *spare) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.spares, sp)
	if i < 0 {
		return false
	}
	p.spares = slices.Delete(p.spares, i, i+1)
	return true
}

// takeAll empties the pool (nil for none).
func (p *sparePool) takeAll() []*spare {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	all := p.spares
	p.spares = nil
	return all
}

func (p *sparePool) short() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.spares) < p.want
}

func (p *sparePool) claimed() {
	select {
	case p.refill <- struct{}{}:
	default:
	}
}

const (
	// refillAfter is how long a refill waits after a claim: the claiming tenant's controllers
	// and join setup (0.6 s) have the CPU first, not a kube-apiserver's start beside them.
	refillAfter = 3 * time.Second
	// spareRetry is the wait after a spare failed to start (a full datastore, say).
	spareRetry = 10 * time.Second
)

// spareStartWait bounds the wait for one spare to answer /readyz before it is discarded and
// another starts (a variable for tests).
var spareStartWait = time.Minute

// keepSpares keeps Options.SpareControlPlanes spares until ctx is done. They start one at a
// time, each once the last answers /readyz: a kube-apiserver's start is CPU the machine's
// tenants share.
func (c *Controller) keepSpares(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("spares")
	ctx = klog.NewContext(ctx, logger)
	for {
		if !c.spares.short() {
			select {
			case <-ctx.Done():
				return
			case <-c.spares.refill:
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(refillAfter):
			}
			continue
		}
		sp, err := c.startSpare(ctx)
		if err != nil {
			logger.Error(err, "Starting a spare control plane failed; trying again", "after", spareRetry)
			select {
			case <-ctx.Done():
				return
			case <-time.After(spareRetry):
			}
			continue
		}
		switch awaitSpare(ctx, sp) {
		case spareCancelled:
			return
		case spareStuck:
			// A spare that never serves would hold its place in the pool for good, and every
			// create would start cold; it goes, and another is started.
			if c.spares.remove(sp) {
				logger.Info("A spare control plane did not answer /readyz in time; discarding it", "spare", sp.pl.rec.UID, "waited", spareStartWait)
				c.discardSpare(ctx, sp.pl)
			}
		}
	}
}

// spareOutcome is how awaitSpare's wait ended.
type spareOutcome int

const (
	spareReady spareOutcome = iota
	spareStuck
	spareCancelled
)

// awaitSpare waits until the spare's kube-apiserver answers /readyz (spareReady), or
// spareStartWait after it last started (spareStuck), starting it when the start gate gives it
// its turn (a spare takes its turn as a tenant does); spareCancelled once ctx is done.
func awaitSpare(ctx context.Context, sp *spare) spareOutcome {
	_, ready := sp.pl.serving()
	deadline := time.Now().Add(spareStartWait)
	for {
		select {
		case <-ctx.Done():
			return spareCancelled
		case <-ready:
			return spareReady
		case <-sp.turn:
			sp.start()
		case <-time.After(min(startSlotRetry, spareStartWait)):
			if sp.pl.gate.waits(sp.pl) {
				sp.start()
				deadline = time.Now().Add(spareStartWait)
			} else if time.Now().After(deadline) {
				return spareStuck
			}
		}
	}
}

// spareShape is the tenant a spare is started as: the version in --bin-dir, and what the
// TenantControlPlane of a TenantCluster that sets nothing asks (its defaulted service and pod
// CIDRs, cluster.local, no SANs, admission plugins or extra arguments). id names the spare's
// datastore user and prefix.
func (c *Controller) spareShape(id string) tenantSpec {
	return tenantSpec{Name: id, UID: id, Version: normalizeVersion(c.opts.PinnedVersion),
		ServiceCIDR: v1alpha1.DefaultServiceCIDR, PodCIDR: v1alpha1.DefaultPodCIDR, ClusterDomain: defaultClusterDomain,
		AdmissionPlugins: slices.Clone(defaultAdmissionControllers), DataStoreSchema: id, DataStoreUser: id, Replicas: 1}
}

// defaultAdmissionControllers is the TenantControlPlane CRD's default of
// spec.kubernetes.admissionControllers, which a TenantCluster that sets nothing gets
// (TestDefaultAdmissionControllersAreTheCRDs keeps them equal).
var defaultAdmissionControllers = []string{"CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction",
	"DefaultIngressClass", "DefaultStorageClass", "DefaultTolerationSeconds", "LimitRanger", "MutatingAdmissionWebhook",
	"NamespaceLifecycle", "PersistentVolumeClaimResize", "Priority", "ResourceQuota", "RuntimeClass", "ServiceAccount",
	"StorageObjectInUseProtection", "TaintNodesByCondition", "ValidatingAdmissionWebhook"}

// spareCAName is a spare's CA's name: its tenant is not known when it is made, so it has
// kubeadm's.
const spareCAName = "kubernetes"

// startSpare makes one spare and starts its kube-apiserver; it is in the pool from then on,
// claimable once Ready. What fails on the way is removed again.
func (c *Controller) startSpare(ctx context.Context) (*spare, error) {
	bins, state, msg := c.versions.Get(normalizeVersion(c.opts.PinnedVersion))
	if state != kubebuild.Ready {
		return nil, errors.New(msg)
	}
	id := fmt.Sprintf("spare-%08x", rand.Uint32())
	port, err := c.ports.Allocate(id)
	if err != nil {
		return nil, err
	}
	sp := &spare{turn: make(chan struct{}, 1)}
	sp.pl = &plane{rec: tenantRecord{Name: id, UID: id, Port: port, Spare: true},
		paths: tenantPaths{dir: filepath.Join(c.opts.StateDir, id)}, listen: c.opts.Address, notify: sp.notify(c), gate: c.starts}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("spare", id))
	if err := c.prepareSpare(ctx, sp, c.spareShape(id), bins); err != nil {
		c.discardSpare(ctx, sp.pl)
		return nil, err
	}
	c.spares.put(sp)
	klog.FromContext(ctx).Info("Started a spare control plane", "port", port, "dir", sp.pl.paths.dir)
	return sp, nil
}

// prepareSpare makes a spare's record, CA, certificates and datastore user and prefix, and
// starts its kube-apiserver as startProcesses would a tenant's of spec. Its controllers wait
// for a tenant: the controller manager's command line names the cluster.
func (c *Controller) prepareSpare(ctx context.Context, sp *spare, spec tenantSpec, bins kubebuild.Binaries) error {
	pl := sp.pl
	if err := writeRecord(pl.paths, pl.rec); err != nil {
		return err
	}
	ca, err := pki.NewCA(spareCAName)
	if err != nil {
		return err
	}
	pl.ca = ca
	certs, _, err := pki.EnsureTenant(pl.paths.pki(), ca, tenantOptions(spec.Name, spec, pl.address()))
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if err := writeAdmissionConfig(pl.paths); err != nil {
		return err
	}
	etcd, err := c.ensureTenantStore(ctx, spec, "", pl)
	if err != nil {
		return err
	}
	args := planeArgs{Spec: spec, Paths: pl.paths, Address: pl.address(), Port: pl.apiPort(), Etcd: etcd, Rotating: certs.Rotating()}
	api := c.procSpec(componentAPIServer, bins, apiServerArgs(args), pl.paths)
	api.Credentials = credentialsDigest(certs)
	sp.start = func() { pl.ensure(ctx, spec.Version, certs.Trust, []process.Spec{api}) }
	sp.start()
	return nil
}

// discardSpare stops a spare and removes it: its processes, datastore user and prefix, port and
// directory.
func (c *Controller) discardSpare(ctx context.Context, pl *plane) {
	pl.mu.Lock()
	rec := pl.rec
	pl.mu.Unlock()
	if err := c.removeTenant(ctx, rec, pl.paths, pl); err != nil {
		klog.FromContext(ctx).Error(err, "Removing a spare control plane failed", "spare", rec.UID)
	}
}

// claimSpare gives a new TenantControlPlane of the spares' shape a Ready spare (spareMismatch
// says who may take one). Its CA goes into Secret <tcp>-ca first, created, so that a tenant with
// a CA never takes one. A claim that fails leaves the spare in the pool, or discards it once its
// CA may be the tenant's; the tenant then starts cold, as without spares.
func (c *Controller) claimSpare(ctx context.Context, r *tcpRun) (bool, error) {
	if c.spares == nil || !c.newTenant(string(r.tcp.GetUID())) {
		return false, nil
	}
	logger := klog.FromContext(ctx)
	spec, err := parseTenantSpec(r.tcp)
	if err != nil {
		return false, nil // findPlane says why
	}
	if why := spareMismatch(r.tcp, spec, c.spareShape("")); why != "" {
		logger.Info("Starting cold, not from a spare control plane", "why", why)
		return false, nil
	}
	sp := c.spares.take(spec.DataStore)
	if sp == nil {
		logger.Info("No spare control plane is Ready; starting cold")
		return false, nil
	}
	if _, err := c.createCASecret(ctx, r.tcp, sp.pl.ca); err != nil {
		if apierrors.IsAlreadyExists(err) {
			c.spares.put(sp) // the tenant has a CA of its own: it starts cold on it
		} else {
			c.discardSpare(ctx, sp.pl) // the Secret may have been written nonetheless
		}
		logger.Info("Starting cold, not from a spare control plane", "why", err.Error())
		return false, nil
	}
	if err := c.adoptSpare(ctx, r.tcp, sp); err != nil {
		logger.Error(err, "Claiming a spare control plane failed; starting cold on its CA")
		_ = os.Remove(filepath.Join(c.opts.StateDir, string(r.tcp.GetUID()))) // the link, if made: newTenant found nothing there
		c.discardSpare(ctx, sp.pl)
		return false, nil
	}
	r.paths = sp.pl.paths
	c.spares.claimed()
	return false, nil
}

// newTenant says whether nothing of the TenantControlPlane uid is here yet: no plane, no state
// directory or link.
func (c *Controller) newTenant(uid string) bool {
	c.mu.Lock()
	pl := c.planes[uid]
	c.mu.Unlock()
	if pl != nil {
		return false
	}
	_, err := os.Lstat(filepath.Join(c.opts.StateDir, uid))
	return errors.Is(err, fs.ErrNotExist)
}

// spareMismatch says why a new TenantControlPlane may not take a spare of shape ("" if it may).
// It may when everything a spare's kube-apiserver was started with is what it would be started
// with: the version, its command line (network, admission plugins, extra arguments) and its
// serving certificate's names. A status already written, a restore, a wake-on-request listener,
// replicas other than 1, or its own datastore schema or user each start it cold.
func spareMismatch(tcp *unstructured.Unstructured, spec, shape tenantSpec) string {
	st := publishedStatus(tcp)
	annotations := tcp.GetAnnotations()
	switch {
	case st.ControlPlaneEndpoint != "" || st.Storage != nil:
		return "its status names an endpoint or a datastore already"
	case annotations[v1alpha1.RestoreFromAnnotation] != "":
		return "it is restored from a snapshot"
	case annotations[hibernation.WakeOnRequestAnnotation] == "true":
		return "it wakes on request, behind a listener"
	case spec.Replicas != 1:
		return fmt.Sprintf("replicas is %d", spec.Replicas)
	case spec.Version != shape.Version:
		return "version " + spec.Version + ", the spares' is " + shape.Version
	case spec.DataStoreSchema != spec.UID || spec.DataStoreUser != spec.Namespace+"_"+spec.Name:
		return "it names its datastore schema or user"
	case spec.ServiceCIDR != shape.ServiceCIDR || spec.ClusterDomain != shape.ClusterDomain || !slices.Equal(spec.CertSANs, shape.CertSANs):
		return "its network or certificate SANs differ from the spares'"
	case !slices.Equal(apiServerArgs(planeArgs{Spec: spec}), apiServerArgs(planeArgs{Spec: shape})):
		return "its kube-apiserver arguments differ from the spares'"
	}
	return ""
}

// adoptSpare makes sp the tenant tcp's: its record names the tenant (and the spare, whose
// datastore user and prefix it keeps), <state>/<uid> links to its directory, its port and its
// place on the datastore are the tenant's, and its processes' changes queue the tenant.
func (c *Controller) adoptSpare(ctx context.Context, tcp *unstructured.Unstructured, sp *spare) error {
	pl, uid := sp.pl, string(tcp.GetUID())
	pl.mu.Lock()
	rec := pl.rec
	pl.mu.Unlock()
	id := rec.UID
	rec.Namespace, rec.Name, rec.UID, rec.Spare, rec.FromSpare = tcp.GetNamespace(), tcp.GetName(), uid, false, id
	if err := writeRecord(pl.paths, rec); err != nil {
		return err
	}
	if err := c.linkTenant(uid, filepath.Base(pl.paths.dir)); err != nil {
		return err
	}
	if !c.ports.Transfer(rec.Port, id, uid) {
		return fmt.Errorf("port %d is not the spare's", rec.Port)
	}
	pl.mu.Lock()
	pl.rec = rec
	pl.mu.Unlock()
	key := tcp.GetNamespace() + "/" + tcp.GetName()
	sp.key.Store(&key)
	c.mu.Lock()
	delete(c.placed, id)
	c.placed[uid] = rec.DataStore
	c.planes[uid] = pl
	c.mu.Unlock()
	klog.FromContext(ctx).Info("Claimed a spare control plane: its kube-apiserver serves already", "spare", id, "port", rec.Port, "dir", pl.paths.dir)
	return nil
}

// linkTenant makes <state>/<uid> a link to the state directory name (a claimed spare's), in
// one rename.
func (c *Controller) linkTenant(uid, name string) error {
	link := filepath.Join(c.opts.StateDir, uid)
	if target, err := os.Readlink(link); err == nil && target == name {
		return nil
	}
	tmp := link + ".link"
	_ = os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// pathsOf is the state directory of the TenantControlPlane uid: <state>/<uid>, or the claimed
// spare's directory it links to (its processes' command lines name that one).
func (c *Controller) pathsOf(uid string) tenantPaths {
	link := filepath.Join(c.opts.StateDir, uid)
	if target, err := os.Readlink(link); err == nil {
		return tenantPaths{dir: filepath.Join(c.opts.StateDir, filepath.Base(target))}
	}
	return tenantPaths{dir: link}
}
