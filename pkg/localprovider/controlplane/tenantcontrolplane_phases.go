package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubeadm"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/datastore"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

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
	published, _, _ := publishedStorage(r.tcp)
	r.etcd, err = c.ensureTenantStore(ctx, r.spec, published, r.pl)
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
	if err := c.applyAdminKubeconfig(ctx, r.tcp, pl, r.kubeconfigs); err != nil {
		return true, err
	}
	if pl.gate.waits(pl) {
		holding, waiting := pl.gate.counts()
		msg := fmt.Sprintf("waiting to start: %d kube-apiservers are starting on this host, at most %d at once, and %d wait", holding, pl.gate.size, waiting)
		if err := c.setTCPStatus(ctx, r.tcp, unavailableState(r.tcp, r.published, pendingStatus(r.tcp, spec.Version), "Starting", msg)); err != nil {
			return true, err
		}
		return true, controllerkit.RequeueAfter(startSlotRetry)
	}
	return false, nil
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
	return true, controllerkit.RequeueAfter(accessPoll)
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
