package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/controlplane/kubebuild"
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
	paths := c.pathsOf(uid)
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

// ownedBySCP says whether a StewardControlPlane controls obj: the TenantControlPlanes the local
// provider's StewardControlPlane controller made, as opposed to those of another provider or made
// by hand.
func ownedBySCP(obj *unstructured.Unstructured) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.Kind == stewardControlPlaneKind && ref.APIVersion == stewardControlPlaneAPIVersion
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
	return []tcpStep{c.claimSpare, c.findPlane, c.applyReplicas, c.ensureAPIPort, c.ensureBinaries,
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

func (c *Controller) procSpec(component string, bins kubebuild.Binaries, args []string, paths tenantPaths) process.Spec {
	return process.Spec{Component: component, Binary: bins.Path(component), Args: args, Env: tenantEnv(component), Nice: tenantNice,
		LogFile: paths.log(component), PidFile: paths.pidFile(component), Owner: paths.dir}
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
	pl := &plane{rec: rec, paths: paths, listen: c.opts.Address, notify: func() { c.tcpQueue.Add(key) }, gate: c.starts}
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
	if link := filepath.Join(c.opts.StateDir, rec.UID); rec.UID != "" && link != paths.dir {
		// The tenant took a spare: <state>/<uid> is the link to its directory.
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
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
	if rec.Spare {
		logger.Info("Removed a spare control plane", "spare", rec.UID)
	} else {
		logger.Info("Removed the tenant control plane", "tenant", rec.Namespace+"/"+rec.Name)
	}
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
