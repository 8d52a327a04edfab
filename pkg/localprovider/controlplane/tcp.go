package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/worker"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubeadm"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// reconcileTCP brings one TenantControlPlane's processes, Secrets and status in line, as the
// named steps of tcpSteps in order; a step that settles the status or fails ends the pass.
func (c *Controller) reconcileTCP(ctx context.Context, key string) error {
	obj, exists, err := c.tcps.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	tcp := obj.(*unstructured.Unstructured).DeepCopy()
	if (!ownedBySCP(tcp) && !slices.Contains(tcp.GetFinalizers(), Finalizer)) || c.opts.external(tcp) {
		return nil // not one of ours
	}
	uid := string(tcp.GetUID())
	paths := tenantPaths{dir: filepath.Join(c.opts.StateDir, uid)}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("uid", uid))

	if tcp.GetDeletionTimestamp() != nil {
		return c.deleteTCP(ctx, tcp, paths)
	}
	if !slices.Contains(tcp.GetFinalizers(), Finalizer) {
		if tcp, err = c.addFinalizer(ctx, tcp); err != nil {
			return err
		}
	}
	r := &tcpRun{tcp: tcp, paths: paths}
	for _, step := range c.tcpSteps() {
		if done, err := step(ctx, r); done || err != nil {
			return err
		}
	}
	return nil
}

// tcpRun is what one pass of reconcileTCP learns, step by step.
type tcpRun struct {
	tcp   *unstructured.Unstructured
	paths tenantPaths
	spec  tenantSpec
	pl    *plane
	// published is the endpoint in the status (empty until kube-apiserver first served);
	// endpoint is the one clients use now, apiEndpoint kube-apiserver's own address.
	published, endpoint, apiEndpoint string
	bins                             kubebuild.Binaries
	rotated                          string
	certs                            *pki.Tenant
	kubeconfigs                      tenantKubeconfigs
	etcd                             etcdConn
	credentialsTook, dataStoreTook   time.Duration
	starts                           int // kube-apiserver's starts, as awaitReadiness read them
}

// tcpStep is one step of reconcileTCP: done ends the pass (the status is settled, or err).
type tcpStep func(ctx context.Context, r *tcpRun) (done bool, err error)

func (c *Controller) tcpSteps() []tcpStep {
	return []tcpStep{c.findPlane, c.applyReplicas, c.ensureAPIPort, c.ensureBinaries,
		c.prepareTenant, c.restoreData, c.startProcesses, c.awaitReadiness, c.reportServing}
}

// deleteTCP stops a deleted TenantControlPlane's processes, removes its data and files, and
// lets it go.
func (c *Controller) deleteTCP(ctx context.Context, tcp *unstructured.Unstructured, paths tenantPaths) error {
	if !slices.Contains(tcp.GetFinalizers(), Finalizer) {
		return nil
	}
	uid := string(tcp.GetUID())
	rec, err := readRecord(paths.dir)
	if err != nil {
		rec = tenantRecord{Namespace: tcp.GetNamespace(), Name: tcp.GetName(), UID: uid}
	}
	if rec.DataStore == "" {
		rec = recordFromStatus(tcp, rec)
	}
	c.mu.Lock()
	pl := c.planes[uid]
	c.mu.Unlock()
	if err := c.removeTenant(ctx, rec, paths, pl); err != nil {
		return err
	}
	return c.removeFinalizer(ctx, tcp)
}

// findPlane reads the spec and finds (or places) the tenant's plane and its wake listener.
func (c *Controller) findPlane(ctx context.Context, r *tcpRun) (bool, error) {
	spec, err := parseTenantSpec(r.tcp)
	if err != nil {
		return true, c.setTCPStatus(ctx, r.tcp, tcpState{versionStatus: statusNotReady, reason: "InvalidSpec", message: err.Error()})
	}
	pl, err := c.plane(ctx, r.tcp, r.paths)
	if err != nil {
		return true, c.setTCPStatus(ctx, r.tcp, tcpState{versionStatus: statusNotReady, reason: "NoPort", message: err.Error()})
	}
	r.spec, r.pl = spec, pl
	// The endpoint is published (status, and from there CAPI's controlPlaneEndpoint and every
	// kubeconfig) once kube-apiserver first serves; before that, a port another process took is
	// exchanged for another, after that never.
	r.published = publishedEndpoint(r.tcp)
	if err := c.ensureWakeProxy(ctx, r.tcp, pl); err != nil {
		return true, c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, pendingStatus(r.tcp, spec.Version), "PortTaken", err.Error()))
	}
	return false, nil
}

// applyReplicas is the control plane switch (Steward's and Kamaji's replicas): 0 stops the
// processes and keeps the data, the port and the published endpoint, so that a start serves
// where it did; one host cannot run more than one.
func (c *Controller) applyReplicas(ctx context.Context, r *tcpRun) (bool, error) {
	tcp, pl := r.tcp, r.pl
	if r.spec.Replicas > 0 {
		pl.clearWake()
	}
	switch {
	case r.spec.Replicas == 0 && !pl.wakeRequested():
		// A wake the listener recorded in the TenantCluster starts the processes before the
		// replicas come back through Cluster API: the client waits meanwhile.
		pl.stop()
		if r.published == "" && pl.behindProxy() {
			return true, c.readyUnstarted(ctx, tcp, r.spec, pl)
		}
		if tcpVersion(tcp) == "" && tcp.GetAnnotations()[external.LocalProviderReasonAnnotation] == "NeverStarted" {
			// Readied without starting and still never run: nothing stopped (nor an Event of it).
			return true, c.setTCPStatus(ctx, tcp, neverStarted(r.published, tcp))
		}
		return true, c.setTCPStatus(ctx, tcp, tcpState{endpoint: r.published, versionStatus: statusSleeping, runningVersion: tcpVersion(tcp),
			adminSecret: tcpAdminSecret(tcp), replicas: 0, reason: "Stopped",
			message: "stopped: replicas is 0; its data and its endpoint are kept, and replicas 1 starts it again"})
	case r.spec.Replicas > 1:
		// What runs keeps running (none after a stop); nothing more is started.
		s := unavailableState(tcp, r.published, statusNotReady, "ReplicasUnsupported",
			fmt.Sprintf("replicas is %d, but the local provider runs one kube-apiserver per tenant on this machine: ask for 1 (or 0 to stop it)", r.spec.Replicas))
		if !pl.running() {
			s.replicas = 0
		}
		return true, c.setTCPStatus(ctx, tcp, s)
	}
	return false, nil
}

// ensureAPIPort moves a port another process took while nothing was published, and says so
// when it is the published one's (which never changes).
func (c *Controller) ensureAPIPort(ctx context.Context, r *tcpRun) (bool, error) {
	pl := r.pl
	if pl.apiServerPortTaken() {
		if r.published == "" || pl.behindProxy() {
			if err := c.movePort(ctx, pl); err != nil {
				return true, c.setTCPStatus(ctx, r.tcp, tcpState{versionStatus: statusNotReady, reason: "NoPort", message: err.Error()})
			}
		} else {
			return true, c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, pendingStatus(r.tcp, r.spec.Version), "PortTaken",
				fmt.Sprintf("another process holds port %d of the published endpoint %s; kube-apiserver keeps trying it (a published endpoint never changes)", pl.port(), r.published)))
		}
	}
	r.endpoint = endpointString(pl.address(), pl.port())
	// Behind a wake-on-request listener kube-apiserver serves on an internal port that only
	// management-side clients use.
	r.apiEndpoint = endpointString(pl.address(), pl.apiPort())
	return false, nil
}

// ensureBinaries finds the binaries of the asked version, built or being built.
func (c *Controller) ensureBinaries(ctx context.Context, r *tcpRun) (bool, error) {
	bins, state, msg := c.versions.Get(r.spec.Version)
	switch state {
	case kubebuild.Building:
		return true, c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, pendingStatus(r.tcp, r.spec.Version), "BuildingKubernetes", msg))
	case kubebuild.Failed:
		return true, c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, statusNotReady, "KubernetesVersionUnavailable", msg))
	}
	r.bins = bins
	return false, nil
}

// prepareTenant rotates what a rotation asks, then makes the credentials (the CA Secret, the
// certificates) and the tenant's place on its datastore (its etcd user and role) at once: they
// need nothing of each other.
func (c *Controller) prepareTenant(ctx context.Context, r *tcpRun) (bool, error) {
	rotated, err := c.rotateCredentials(ctx, r.tcp, r.pl)
	if err != nil {
		return true, err
	}
	r.rotated = rotated
	began := time.Now()
	var (
		credentialsErr error
		wg             sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.certs, r.kubeconfigs, credentialsErr = c.ensureCredentials(ctx, r.tcp, r.spec, r.pl, r.endpoint, r.apiEndpoint)
		r.credentialsTook = time.Since(began)
	}()
	r.etcd, err = c.ensureTenantStore(ctx, r.tcp, r.spec, r.pl)
	r.dataStoreTook = time.Since(began)
	wg.Wait()
	if err != nil {
		if serr := c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, pendingStatus(r.tcp, r.spec.Version), "DataStoreUnavailable", err.Error())); serr != nil {
			return true, errors.Join(serr, credentialsErr)
		}
		return true, errors.Join(err, credentialsErr)
	}
	return credentialsErr != nil, credentialsErr
}

// restoreData runs an asked restore onto a fresh generation of the tenant's data, and points
// kube-apiserver at the generation in use.
func (c *Controller) restoreData(ctx context.Context, r *tcpRun) (bool, error) {
	pl := r.pl
	if rs := c.restorer; rs != nil {
		pl.mu.Lock()
		dataStore, prefix := pl.rec.DataStore, pl.rec.DataStorePrefix
		pl.mu.Unlock()
		store, err := c.tenantStore(ctx, dataStore, prefix)
		if err != nil {
			return true, err
		}
		root := datastore.RootOf(prefix)
		n, _ := datastore.GenerationOf(root, prefix)
		store.Fresh = datastore.Generation(root, n+1)
		store.SwitchToFresh = func(ctx context.Context) error { return c.switchData(ctx, pl, store, store.Fresh) }
		pending, message, err := rs.Restore(ctx, r.tcp, store, pl.kill)
		if err != nil || pending {
			if serr := c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, statusNotReady, "Restoring", message)); serr != nil {
				return true, serr
			}
			return true, err
		}
	}
	pl.mu.Lock()
	r.etcd.Prefix = etcdPrefix(pl.rec.DataStorePrefix) // a restore may have switched it
	pl.mu.Unlock()
	return false, nil
}

// startProcesses starts (or keeps) kube-apiserver, kube-controller-manager and kube-scheduler
// with today's arguments and credentials, and publishes the admin kubeconfig.
func (c *Controller) startProcesses(ctx context.Context, r *tcpRun) (bool, error) {
	spec, pl := r.spec, r.pl
	args := planeArgs{Spec: spec, Paths: r.paths, Address: pl.address(), Port: pl.apiPort(), Etcd: r.etcd, Rotating: r.certs.Rotating()}
	if !pl.running() {
		msg := "Starting the control plane"
		if spec.Replicas == 0 {
			msg += ": a request woke it"
		}
		// With where a start's time went before kube-apiserver's own.
		klog.FromContext(ctx).Info(msg, "version", spec.Version,
			"credentials", r.credentialsTook.Round(time.Millisecond), "dataStore", r.dataStoreTook.Round(time.Millisecond))
	}
	if tcpVersion(r.tcp) == "" && r.published != "" && pl.behindProxy() {
		pl.holdFirstStart() // readied asleep, never started (readyUnstarted)
	}
	specs := []process.Spec{
		c.procSpec(componentAPIServer, r.bins, apiServerArgs(args), r.paths),
		c.procSpec(componentControllerManager, r.bins, controllerManagerArgs(args), r.paths),
		c.procSpec(componentScheduler, r.bins, schedulerArgs(args), r.paths),
	}
	for i := range specs {
		specs[i].Credentials = credentialsDigest(r.certs)
	}
	pl.ensure(ctx, spec.Version, r.certs.Trust, specs)
	// The admin kubeconfig is files already written: published while kube-apiserver starts, not
	// one more round trip after it serves.
	return false, c.applyAdminKubeconfig(ctx, r.tcp, pl, r.kubeconfigs)
}

// awaitReadiness waits for kube-apiserver to answer /readyz at the asked version; kubeadm's
// join objects go in as soon as it answers at all.
func (c *Controller) awaitReadiness(ctx context.Context, r *tcpRun) (bool, error) {
	pl, spec := r.pl, r.spec
	ready, starts, version := pl.status()
	r.starts = starts
	if !ready && !pl.probedOnce() {
		// Just started or adopted: the first probe queues this key again. Saying NotReady now
		// would flap a serving tenant's status on every provider restart.
		return true, nil
	}
	if answered := pl.answeredStart(); !ready && answered > 0 && version == spec.Version && !pl.setUp(answered) {
		// The join objects are written as its super-admin (system:masters needs none of the RBAC
		// it is still bootstrapping), and that bootstrap, /readyz's last check, waits a second
		// before its first try. A failure here (kube-public not made yet) leaves them for
		// /readyz. The control plane is Ready only at /readyz, as before.
		if err := c.setUpTenant(ctx, spec, r.endpoint, r.certs.Trust, r.kubeconfigs.superAdminSvc); err != nil {
			klog.FromContext(ctx).V(2).Info("The join setup waits for /readyz", "err", err)
		} else {
			pl.markSetUp(answered)
		}
	}
	if !ready || version != spec.Version {
		return true, c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, pendingStatus(r.tcp, spec.Version), "Starting",
			"waiting for kube-apiserver "+spec.Version+" to answer /readyz and every process to run"))
	}
	return false, nil
}

// reportServing finishes the join setup and a rotation, releases a held first start, and says
// Ready; then it looks again for butler's access bindings, awaited in the tenant.
func (c *Controller) reportServing(ctx context.Context, r *tcpRun) (bool, error) {
	pl, tcp := r.pl, r.tcp
	if !pl.setUp(r.starts) {
		if err := c.setUpTenant(ctx, r.spec, r.endpoint, r.certs.Trust, r.kubeconfigs.superAdminSvc); err != nil {
			return true, fmt.Errorf("join setup in the tenant: %w", err)
		}
		pl.markSetUp(r.starts)
	}
	if err := c.recordRotated(ctx, tcp, pl, r.rotated); err != nil {
		return true, err
	}
	released, err := c.releaseFirstStart(ctx, pl, r.kubeconfigs.superAdminSvc)
	if err != nil {
		return true, err
	}
	if publishedStatus(tcp).KubernetesResources.Version.Status != statusReady {
		klog.FromContext(ctx).Info("Tenant control plane Ready", "version", r.spec.Version, "endpoint", r.endpoint,
			"sinceCreation", time.Since(tcp.GetCreationTimestamp().Time).Round(10*time.Millisecond))
	}
	if err := c.setTCPStatus(ctx, tcp, tcpState{endpoint: r.endpoint, versionStatus: statusReady, runningVersion: r.spec.Version,
		adminSecret: adminKubeconfigName(tcp.GetName()), replicas: 1}); err != nil || released {
		return true, err
	}
	return true, worker.RequeueAfter(accessPoll)
}

// unavailableState is the status of a TenantControlPlane that does not serve its version yet
// (its binaries being built or unbuildable, or its processes starting). An upgrade leaves the
// old version's processes serving meanwhile, so the version they run and the admin kubeconfig
// stay in the status: dropping them would turn an upgrade that waits for a build into a control
// plane being provisioned again.
func unavailableState(tcp *unstructured.Unstructured, endpoint, versionStatus, reason, message string) tcpState {
	return tcpState{endpoint: endpoint, versionStatus: versionStatus, runningVersion: tcpVersion(tcp),
		adminSecret: tcpAdminSecret(tcp), replicas: 1, reason: reason, message: message}
}

// pendingStatus is the status of a TenantControlPlane that is not (yet) at version: Provisioning
// before it ever ran, Upgrading from an older version.
func pendingStatus(tcp *unstructured.Unstructured, version string) string {
	if v := tcpVersion(tcp); v != "" && v != version {
		return statusUpgrading
	}
	if tcpVersion(tcp) == "" {
		return statusProvisioning
	}
	return statusNotReady
}

// publishedStatus is the TenantControlPlane's status as this provider last wrote it, read through
// the contract's mirror; one the mirror cannot read (a field of another type) is as none, which
// this provider then writes anew.
func publishedStatus(tcp *unstructured.Unstructured) steward.TenantControlPlaneStatus {
	typed, err := external.FromUnstructured[steward.TenantControlPlane](tcp)
	if err != nil {
		return steward.TenantControlPlaneStatus{}
	}
	return typed.Status
}

func tcpVersion(tcp *unstructured.Unstructured) string {
	return publishedStatus(tcp).KubernetesResources.Version.Version
}

func tcpAdminSecret(tcp *unstructured.Unstructured) string {
	return publishedStatus(tcp).Kubeconfig.Admin.SecretName
}

func (c *Controller) procSpec(component string, bins kubebuild.Binaries, args []string, paths tenantPaths) process.Spec {
	return process.Spec{Component: component, Binary: bins.Path(component), Args: args, Env: tenantEnv(component),
		LogFile: paths.log(component), PidFile: paths.pidFile(component), Owner: paths.dir}
}

// publishedStorage is the datastore, key prefix (schema) and user the TenantControlPlane's status
// names; "" for what it names not.
func publishedStorage(tcp *unstructured.Unstructured) (name, schema, user string) {
	st := publishedStatus(tcp).Storage
	if st == nil {
		return "", "", ""
	}
	if st.Setup != nil {
		schema, user = st.Setup.Schema, st.Setup.User
	}
	return st.DataStoreName, schema, user
}

// publishedEndpoint is the endpoint in the TenantControlPlane's status, "" before it was first
// published.
func publishedEndpoint(tcp *unstructured.Unstructured) string {
	return publishedStatus(tcp).ControlPlaneEndpoint
}

// movePort gives an unpublished tenant another port: its kube-apiserver could not bind the one
// it had. Its processes are stopped (the controller manager and scheduler read the old port from
// their kubeconfigs once); the next ensure starts them on the new one.
func (c *Controller) movePort(ctx context.Context, pl *plane) error {
	uid := pl.rec.UID
	port, err := c.ports.Allocate(uid)
	if err != nil {
		return err
	}
	pl.stop()
	pl.mu.Lock()
	rec := pl.rec
	old := rec.Port
	if rec.InternalPort != 0 {
		old, rec.InternalPort = rec.InternalPort, port
	} else {
		rec.Port = port
	}
	pl.rec = rec
	pl.mu.Unlock()
	if err := writeRecord(pl.paths, rec); err != nil {
		return err
	}
	c.ports.Release(old, uid)
	klog.FromContext(ctx).Info("Another process holds the tenant's port; moved it, as the endpoint is not yet published", "from", old, "to", port)
	return nil
}

// plane returns the tenant's plane, creating its record (and port) the first time.
func (c *Controller) plane(ctx context.Context, tcp *unstructured.Unstructured, paths tenantPaths) (*plane, error) {
	uid := string(tcp.GetUID())
	c.mu.Lock()
	defer c.mu.Unlock()
	if pl := c.planes[uid]; pl != nil {
		return pl, nil
	}
	rec, err := readRecord(paths.dir)
	if err == nil && rec.InternalPort != 0 && !c.ports.Claim(rec.InternalPort, uid) {
		rec.InternalPort = 0 // another is given with the listener
	}
	if err != nil || rec.UID != uid || !c.ports.Claim(rec.Port, uid) {
		port, err := c.ports.Allocate(uid)
		if err != nil {
			return nil, err
		}
		rec = tenantRecord{Namespace: tcp.GetNamespace(), Name: tcp.GetName(), UID: uid, Port: port}
		if err := writeRecord(paths, rec); err != nil {
			c.ports.Release(port, uid)
			return nil, err
		}
	}
	key := tcp.GetNamespace() + "/" + tcp.GetName()
	pl := &plane{rec: rec, paths: paths, listen: c.opts.Address, notify: func() { c.tcpQueue.Add(key) }}
	c.planes[uid] = pl
	klog.FromContext(ctx).V(2).Info("Tenant control plane", "port", rec.Port, "dir", paths.dir)
	return pl, nil
}

// removeTenant stops the tenant's processes, deletes its etcd prefix and its state directory.
func (c *Controller) removeTenant(ctx context.Context, rec tenantRecord, paths tenantPaths, pl *plane) error {
	logger := klog.FromContext(ctx)
	if pl != nil {
		pl.closeProxy()
		pl.stop()
	} else {
		stopRecorded(paths)
	}
	// kube-apiserver is stopped: nothing writes under the prefix any more.
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.removeTenantStore(dctx, rec); err != nil {
		return err
	}
	if err := os.RemoveAll(paths.dir); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.planes, rec.UID)
	delete(c.placed, rec.UID)
	c.mu.Unlock()
	if rec.Port != 0 {
		c.ports.Release(rec.Port, rec.UID)
	}
	if rec.InternalPort != 0 {
		c.ports.Release(rec.InternalPort, rec.UID)
	}
	logger.Info("Removed the tenant control plane", "tenant", rec.Namespace+"/"+rec.Name)
	return nil
}

func (c *Controller) addFinalizer(ctx context.Context, tcp *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": append(tcp.GetFinalizers(), Finalizer), "resourceVersion": tcp.GetResourceVersion()}})
	return c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(tcp.GetNamespace()).
		Patch(ctx, tcp.GetName(), types.MergePatchType, patch, external.LocalProvider.PatchOptions())
}

func (c *Controller) removeFinalizer(ctx context.Context, tcp *unstructured.Unstructured) error {
	var keep []string
	for _, f := range tcp.GetFinalizers() {
		if f != Finalizer {
			keep = append(keep, f)
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": keep, "resourceVersion": tcp.GetResourceVersion()}})
	_, err := c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(tcp.GetNamespace()).
		Patch(ctx, tcp.GetName(), types.MergePatchType, patch, external.LocalProvider.PatchOptions())
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ensureCA returns the tenant's CA from Secret <tcp>-ca, making both the first time. The Secret
// is created, not applied: of two racing reconciles, one CA wins and the other reads it.
func (c *Controller) ensureCA(ctx context.Context, tcp *unstructured.Unstructured, pl *plane) (*pki.KeyPair, error) {
	pl.mu.Lock()
	ca := pl.ca
	pl.mu.Unlock()
	if ca != nil {
		return ca, nil
	}
	secrets := c.deps.Kube.CoreV1().Secrets(tcp.GetNamespace())
	name := caSecretName(tcp.GetName())
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var newCA *pki.KeyPair
		if newCA, err = pki.NewCA(tcp.GetName()); err != nil {
			return nil, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tcp.GetNamespace(),
				Labels:          map[string]string{clusterv1.ClusterNameLabel: clusterNameOf(tcp)},
				OwnerReferences: []metav1.OwnerReference{ownerReference(tcp)}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"ca.crt": newCA.CertPEM, "ca.key": newCA.KeyPEM, "tls.crt": newCA.CertPEM, "tls.key": newCA.KeyPEM},
		}
		secret, err = secrets.Create(ctx, secret, external.LocalProvider.CreateOptions())
		if apierrors.IsAlreadyExists(err) {
			secret, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("Secret %s: %w", name, err)
	}
	ca, err = pki.Parse(secret.Data["ca.crt"], secret.Data["ca.key"])
	if err != nil {
		return nil, fmt.Errorf("Secret %s holds no usable CA (ca.crt, ca.key): %w", name, err)
	}
	if !bytes.Equal(secret.Data["tls.crt"], secret.Data["ca.crt"]) || !bytes.Equal(secret.Data["tls.key"], secret.Data["ca.key"]) {
		// Cluster API reads the CA as tls.crt/tls.key.
		ac := corev1ac.Secret(name, tcp.GetNamespace()).WithData(map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM})
		if _, err := secrets.Apply(ctx, ac, external.LocalProvider.ApplyOptions()); err != nil {
			return nil, fmt.Errorf("Secret %s: %w", name, err)
		}
	}
	pl.mu.Lock()
	pl.ca = ca
	pl.mu.Unlock()
	return ca, nil
}

// tenantKubeconfigs are the kubeconfigs of a tenant, as files in its state directory.
type tenantKubeconfigs struct {
	// admin and superAdmin name the endpoint; the .svc ones kube-apiserver's own address, for
	// management-side clients (the same unless a wake-on-request listener holds the endpoint).
	admin, superAdmin, adminSvc, superAdminSvc []byte
}

// writeKubeconfigs writes the components' and admins' kubeconfigs where they differ.
func (c *Controller) writeKubeconfigs(cluster, endpoint, apiEndpoint string, paths tenantPaths, certs *pki.Tenant) (tenantKubeconfigs, error) {
	public, internal := "https://"+endpoint, "https://"+apiEndpoint
	var out tenantKubeconfigs
	for _, k := range []struct {
		name, server, user string
		kp                 *pki.KeyPair
		keep               *[]byte
	}{
		{"admin", public, pki.AdminUser, certs.Admin, &out.admin},
		{"super-admin", public, pki.SuperAdminUser, certs.SuperAdmin, &out.superAdmin},
		{"admin-svc", internal, pki.AdminUser, certs.Admin, &out.adminSvc},
		{"super-admin-svc", internal, pki.SuperAdminUser, certs.SuperAdmin, &out.superAdminSvc},
		{"controller-manager", internal, pki.ControllerManager, certs.ControllerManager, nil},
		{"scheduler", internal, pki.Scheduler, certs.Scheduler, nil},
	} {
		data, err := pki.Kubeconfig(cluster, k.server, certs.Trust, k.user, k.kp)
		if err != nil {
			return out, err
		}
		if k.keep != nil {
			*k.keep = data
		}
		if old, err := os.ReadFile(paths.kubeconfig(k.name)); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := pki.WriteFile(paths.kubeconfig(k.name), data, 0o600); err != nil {
			return out, err
		}
	}
	return out, nil
}

// setUpTenant applies kubeadm's join objects in the tenant as its super-admin.
func (c *Controller) setUpTenant(ctx context.Context, spec tenantSpec, endpoint string, caPEM, superAdmin []byte) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(superAdmin)
	if err != nil {
		return err
	}
	cfg.UserAgent = string(external.LocalProvider)
	// The join objects go in one burst (kubeadm.SetUpJoin): client-go's default 5/s, burst 10, would
	// pace its last few.
	cfg.QPS, cfg.Burst = 50, 50
	tenant, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dns := spec.DNSServiceIPs
	if len(dns) == 0 {
		if ip, err := nthServiceIP(spec.ServiceCIDR, 10); err == nil {
			dns = []string{ip.String()}
		}
	}
	return kubeadm.SetUpJoin(ctx, tenant, kubeadm.JoinSetup{
		ClusterName: spec.Name, Endpoint: endpoint, CAPEM: caPEM, Version: spec.Version,
		ServiceCIDR: spec.ServiceCIDR, PodCIDR: spec.PodCIDR, ClusterDomain: spec.ClusterDomain,
		ClusterDNS: dns, CgroupDriver: spec.CgroupDriver,
	})
}

// applyAdminKubeconfig writes Secret <tcp>-admin-kubeconfig when its content changed. The .svc
// keys are, in Steward, for clients inside the management cluster; here they name
// kube-apiserver's own port, which is the endpoint's unless a wake-on-request listener holds it.
func (c *Controller) applyAdminKubeconfig(ctx context.Context, tcp *unstructured.Unstructured, pl *plane, k tenantKubeconfigs) error {
	sum := sha256.New()
	sum.Write(k.admin)
	sum.Write(k.superAdmin)
	sum.Write(k.adminSvc)
	sum.Write(k.superAdminSvc)
	digest := fmt.Sprintf("%x", sum.Sum(nil))
	pl.mu.Lock()
	done := pl.adminDigest == digest
	pl.mu.Unlock()
	if done {
		return nil
	}
	ac := corev1ac.Secret(adminKubeconfigName(tcp.GetName()), tcp.GetNamespace()).
		WithLabels(map[string]string{clusterv1.ClusterNameLabel: clusterNameOf(tcp)}).
		WithOwnerReferences(ownerReferenceAC(tcp)).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{
			"admin.conf": k.admin, "super-admin.conf": k.superAdmin,
			"admin.svc": k.adminSvc, "super-admin.svc": k.superAdminSvc,
		})
	if _, err := c.deps.Kube.CoreV1().Secrets(tcp.GetNamespace()).Apply(ctx, ac, external.LocalProvider.ApplyOptions()); err != nil {
		return fmt.Errorf("Secret %s: %w", adminKubeconfigName(tcp.GetName()), err)
	}
	pl.mu.Lock()
	pl.adminDigest = digest
	pl.mu.Unlock()
	return nil
}

// clusterNameOf is the Cluster a TenantControlPlane belongs to: its cluster-name label, or its
// own name (capi-steward names it after the Cluster).
func clusterNameOf(obj *unstructured.Unstructured) string {
	if n := obj.GetLabels()[clusterv1.ClusterNameLabel]; n != "" {
		return n
	}
	return obj.GetName()
}

func ownerReference(obj *unstructured.Unstructured) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(),
		UID: obj.GetUID(), Controller: &t, BlockOwnerDeletion: &t}
}

func ownerReferenceAC(obj *unstructured.Unstructured) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion(obj.GetAPIVersion()).WithKind(obj.GetKind()).
		WithName(obj.GetName()).WithUID(obj.GetUID()).WithController(true).WithBlockOwnerDeletion(true)
}

// tcpState is what a TenantControlPlane's status is to say.
type tcpState struct {
	endpoint       string
	versionStatus  string
	runningVersion string
	adminSecret    string
	// replicas is how many control planes run (0 stopped, else 1: one per tenant here).
	replicas int64
	// reason and message say why it is not Ready (annotations and an Event).
	reason, message string
	// store is the tenant's record: where its data is, once placed (set by setTCPStatus).
	store tenantRecord
}

// setTCPStatus applies the status (server-side, this provider's fields only) and the reason
// annotations, each only when it differs from what the TenantControlPlane says. A status with
// a reason goes after its annotations, so a reader finds why it is not Ready with it; one
// without goes first: readers wait on the status (a Ready control plane), not on the
// annotations' removal.
func (c *Controller) setTCPStatus(ctx context.Context, tcp *unstructured.Unstructured, s tcpState) error {
	if s.reason == "" {
		if err := c.applyTCPStatus(ctx, tcp, s); err != nil {
			return err
		}
		return c.annotateTCP(ctx, tcp, s)
	}
	if err := c.annotateTCP(ctx, tcp, s); err != nil {
		return err
	}
	return c.applyTCPStatus(ctx, tcp, s)
}

// annotateTCP applies the reason annotations (and makes an Event of a reason) when they differ.
func (c *Controller) annotateTCP(ctx context.Context, tcp *unstructured.Unstructured, s tcpState) error {
	ann := tcp.GetAnnotations()
	if ann[external.LocalProviderReasonAnnotation] == s.reason && ann[external.LocalProviderMessageAnnotation] == s.message {
		return nil
	}
	// Its own field manager: the StewardControlPlane's apply of the spec must not drop them.
	meta := map[string]any{"name": tcp.GetName(), "namespace": tcp.GetNamespace()}
	if s.reason != "" {
		meta["annotations"] = map[string]any{external.LocalProviderReasonAnnotation: s.reason, external.LocalProviderMessageAnnotation: s.message}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenantControlPlaneAPIVersion, "kind": tenantControlPlaneKind, "metadata": meta}}
	client := c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(tcp.GetNamespace())
	if _, err := external.LocalProviderReason.Apply(ctx, client, u); err != nil {
		return fmt.Errorf("annotating TenantControlPlane: %w", err)
	}
	if s.reason != "" {
		eventType := corev1.EventTypeNormal
		if s.versionStatus == statusNotReady {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Event(tcp, eventType, s.reason, s.message)
	}
	return nil
}

// applyTCPStatus applies the status when it differs.
func (c *Controller) applyTCPStatus(ctx context.Context, tcp *unstructured.Unstructured, s tcpState) error {
	c.mu.Lock()
	if pl := c.planes[string(tcp.GetUID())]; pl != nil {
		pl.mu.Lock()
		s.store = pl.rec
		pl.mu.Unlock()
	}
	c.mu.Unlock()
	status := tcpStatus(tcp, s)
	if current, ok := tcp.Object["status"].(map[string]any); ok && subsetEqual(status, current) {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tenantControlPlaneAPIVersion, "kind": tenantControlPlaneKind,
		"metadata": map[string]any{"name": tcp.GetName(), "namespace": tcp.GetNamespace()},
		"status":   status,
	}}
	client := c.deps.Dynamic.Resource(tenantControlPlanes).Namespace(tcp.GetNamespace())
	if _, err := external.LocalProvider.ApplyStatus(ctx, client, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("TenantControlPlane status: %w", err)
	}
	return nil
}

// tcpStatus is the status Steward writes, as far as it means something here: one "replica"
// (the three processes) or none when stopped, the endpoint, the version, the Secrets, and the
// shared etcd schema.
func tcpStatus(tcp *unstructured.Unstructured, s tcpState) map[string]any {
	ready := int64(0)
	if s.versionStatus == statusReady {
		ready = 1
	}
	version := map[string]any{"status": s.versionStatus}
	if s.runningVersion != "" {
		version["version"] = s.runningVersion
	}
	status := map[string]any{
		"kubernetesResources": map[string]any{
			"version": version,
			"deployment": map[string]any{
				"name": tcp.GetName(), "namespace": tcp.GetNamespace(),
				"selector": clusterv1.ClusterNameLabel + "=" + clusterNameOf(tcp),
				"replicas": s.replicas, "readyReplicas": ready, "availableReplicas": ready,
				"updatedReplicas": ready, "unavailableReplicas": s.replicas - ready,
			},
		},
		"certificates": map[string]any{"ca": map[string]any{"secretName": caSecretName(tcp.GetName())}},
	}
	if s.store.DataStore != "" {
		status["storage"] = map[string]any{
			"driver": "etcd", "dataStoreName": s.store.DataStore,
			"setup": map[string]any{"schema": strings.Trim(s.store.DataStorePrefix, "/"), "user": s.store.DataStoreUser},
		}
	}
	if s.endpoint != "" {
		status["controlPlaneEndpoint"] = s.endpoint
	}
	if s.adminSecret != "" {
		status["kubeconfig"] = map[string]any{"admin": map[string]any{"secretName": s.adminSecret}}
	}
	return status
}

// subsetEqual says whether every field of want has the same value in have.
func subsetEqual(want, have map[string]any) bool {
	for k, w := range want {
		h, ok := have[k]
		if !ok {
			return false
		}
		wm, wIsMap := w.(map[string]any)
		hm, hIsMap := h.(map[string]any)
		switch {
		case wIsMap && hIsMap:
			if !subsetEqual(wm, hm) {
				return false
			}
		case wIsMap != hIsMap:
			return false
		default:
			if fmt.Sprint(w) != fmt.Sprint(h) {
				return false
			}
		}
	}
	return true
}
