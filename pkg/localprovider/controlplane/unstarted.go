package controlplane

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// readyUnstarted readies a wake-on-request tenant that was created asleep and has never run,
// without starting anything: its CA and certificates, the admin kubeconfig Secret (kubeconfigs
// can be minted from it), its place on a datastore, and the endpoint published, which its
// listener already holds. Its datastore prefix stays empty until the first request starts the
// processes as any wake does; the join setup in the tenant runs then, on that first start.
func (c *Controller) readyUnstarted(ctx context.Context, tcp *unstructured.Unstructured, spec tenantSpec, pl *plane) error {
	endpoint := endpointString(pl.address(), pl.port())
	_, kubeconfigs, err := c.ensureCredentials(ctx, tcp, spec, pl, endpoint, endpointString(pl.address(), pl.apiPort()))
	if err != nil {
		return err
	}
	published, _, _ := publishedStorage(tcp)
	if _, err := c.ensureTenantStore(ctx, spec, published, pl); err != nil {
		if serr := c.setTCPStatus(ctx, tcp, tcpState{versionStatus: statusSleeping, replicas: 0, reason: "DataStoreUnavailable", message: err.Error()}); serr != nil {
			return serr
		}
		return err
	}
	if err := c.applyAdminKubeconfig(ctx, tcp, pl, kubeconfigs); err != nil {
		return err
	}
	return c.setTCPStatus(ctx, tcp, neverStarted(endpoint, tcp))
}

// neverStarted is the status of a tenant readied without starting that has not run yet.
func neverStarted(endpoint string, tcp *unstructured.Unstructured) tcpState {
	return tcpState{endpoint: endpoint, versionStatus: statusSleeping,
		adminSecret: adminKubeconfigName(tcp.GetName()), replicas: 0, reason: "NeverStarted",
		message: "created asleep: its endpoint is held and its kubeconfigs can be minted; the first request to the endpoint starts it"}
}

// accessPoll is how often a first start looks for butler's access bindings in the tenant: no
// watch reaches into it.
const accessPoll = 250 * time.Millisecond

// holdFirstStart makes users' connections wait, on the tenant's first start, until butler's
// access bindings exist in it (releaseFirstStart). A user's minted kubeconfig is bound there by
// the lifecycle worker's team access step, which runs once the control plane is Ready: passed
// through the moment kube-apiserver served, the first request to a cluster created asleep would
// be refused.
func (pl *plane) holdFirstStart() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.released || pl.held {
		return
	}
	pl.held, pl.heldCh = true, make(chan struct{})
}

func (pl *plane) release() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.held {
		close(pl.heldCh)
	}
	pl.held, pl.released = false, true
}

// admitting is what the wake-on-request listener waits for before it passes a connection
// through: kube-apiserver serves and no first start is held. The channel is closed once that
// may have changed.
func (pl *plane) admitting() (bool, <-chan struct{}) {
	pl.mu.Lock()
	held, ch := pl.held, pl.heldCh
	pl.mu.Unlock()
	if held {
		return false, ch
	}
	return pl.serving()
}

// releaseFirstStart releases a held first start once the tenant holds butler's access
// bindings; it reports whether nothing is held any longer.
func (c *Controller) releaseFirstStart(ctx context.Context, pl *plane, superAdmin []byte) (bool, error) {
	pl.mu.Lock()
	held := pl.held
	pl.mu.Unlock()
	if !held {
		return true, nil
	}
	if bound, err := accessBound(ctx, superAdmin); err != nil || !bound {
		return false, err
	}
	pl.release()
	klog.FromContext(ctx).Info("First start: butler's access bindings exist in the tenant; passing users' connections through")
	return true, nil
}

// accessBound says whether the tenant holds butler's platform admins binding (the team access
// step applies it last of its ClusterRoleBindings) and its view role has been aggregated (by
// the tenant's kube-controller-manager), as that step waits for too.
func accessBound(ctx context.Context, superAdmin []byte) (bool, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(superAdmin)
	if err != nil {
		return false, err
	}
	cfg.UserAgent = string(external.LocalProvider)
	tenant, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	if _, err := tenant.RbacV1().ClusterRoleBindings().Get(ctx, access.PlatformAdminsBinding, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	view, err := tenant.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && len(view.Rules) > 0, err
}
