package tenantcluster

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ConditionServicesExposeExternalIPs says whether Services in the tenant's namespaces where
// operators write Services (not protected) have spec.externalIPs, spec.loadBalancerIP or a load
// balancer's address annotation (external.LoadBalancerAddressAnnotations): the
// policy butler-api-endpoint judges writes only, so those set before it held (an older tenant,
// its loading delay, a restored snapshot) or by a tenant admin stay, and take every Pod's
// traffic to those addresses to Pods an operator may label. True names them (at most
// exposedListed); set by the service addresses step, never holding Ready back.
const ConditionServicesExposeExternalIPs = "ServicesExposeExternalIPs"

// Reasons of ConditionServicesExposeExternalIPs.
const (
	ReasonExternalIPsSet   = "ExternalIPsSet"
	ReasonNoExternalIPsSet = "NoExternalIPsSet"
)

// exposedListed bounds the Services a condition or Event names; the rest are counted.
const exposedListed = 10

// servicesPage bounds one list's page: a tenant's Services are read a page at a time, and the
// audit needs their spec and annotations (no metadata-only list). A Service may be as large as
// the tenant's etcd takes (about 1.5 MB, an operator's annotations, ports and managed fields),
// so a page is at most about 75 MB of response however the tenant fills it; a few KB each as
// written by hand or charts.
const servicesPage = 50

// serviceAudit remembers, per cluster UID, when the tenant's Services were last looked at.
type serviceAudit struct {
	mu     sync.Mutex
	looked map[string]time.Time
}

// ensureServiceAddresses looks at the tenant's Services when the access step has just applied
// the policy (the first run in this process, a policy change, an in-place restore, a restart of
// the control plane, a Team change) and otherwise every accessResync: one list of Services (a
// page at a time) per look, the namespaces being the access step's. Always done: a failed look
// is tried again within accessRetry, the condition staying as it was.
func (c *Controller) ensureServiceAddresses(ctx context.Context, s *state) (steps.Result, error) {
	uid, now := string(s.tc.UID), c.clock.Now()
	c.audit.mu.Lock()
	last, seen := c.audit.looked[uid]
	c.audit.mu.Unlock()
	if seen && !s.policyApplied {
		if left := accessResync - now.Sub(last); left > 0 {
			s.recheckWithin(left)
			return steps.Ready("ServicesLooked", "the tenant's Services are in condition %s", ConditionServicesExposeExternalIPs), nil
		}
	}
	tenant, err := c.tenantClientOf(ctx, uid, s.namespace, s.kubeconfigSecret)
	if err == nil {
		var exposed []string
		if exposed, err = exposedServices(ctx, tenant.CoreV1(), s.tenantNamespaces); err == nil {
			cond := exposureCondition(exposed)
			s.exposure = &cond
		}
	}
	if err != nil {
		s.recheckWithin(accessRetry)
		return steps.Ready("ServicesNotLooked", "the tenant's Services could not be looked at: %v", err), nil
	}
	c.audit.mu.Lock()
	if c.audit.looked == nil {
		c.audit.looked = map[string]time.Time{}
	}
	c.audit.looked[uid] = now
	c.audit.mu.Unlock()
	s.recheckWithin(accessResync)
	return steps.Ready("ServicesLooked", "the tenant's Services are in condition %s", ConditionServicesExposeExternalIPs), nil
}

// servicesLister is the tenant's Services (its core client).
type servicesLister interface {
	Services(namespace string) corev1client.ServiceInterface
}

// exposedServices names, as "namespace/name (externalIPs a, b; loadBalancerIP c; announced c)",
// the Services with spec.externalIPs, spec.loadBalancerIP or an address annotation in namespaces that are not protected (where
// operators are bound: a namespace that went since the access step's list counts as such).
func exposedServices(ctx context.Context, core servicesLister, namespaces []access.Namespace) ([]string, error) {
	protected := map[string]bool{}
	for _, ns := range namespaces {
		protected[ns.Name] = ns.Protected
	}
	var exposed []string
	opts := metav1.ListOptions{Limit: servicesPage}
	for {
		list, err := core.Services(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the tenant's Services: %w", err)
		}
		for i := range list.Items {
			svc := &list.Items[i]
			if protected[svc.Namespace] || slices.Contains(external.TenantSystemNamespaces, svc.Namespace) {
				continue
			}
			if what := pinnedAddresses(svc); what != "" {
				exposed = append(exposed, svc.Namespace+"/"+svc.Name+" ("+what+")")
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	slices.Sort(exposed)
	return exposed, nil
}

// pinnedAddresses says which of spec.externalIPs, spec.loadBalancerIP and the load balancers'
// address annotations (external.LoadBalancerAddressAnnotations) a Service sets, with their
// values, and then the addresses its load balancer announced (status.loadBalancer.ingress):
// "" for none set. A Service that asks for nothing is not named for its announced address, a
// pool's own choice that every LoadBalancer Service has. A value is the tenant's text: quoted
// unless it parses, and each list cut at four.
func pinnedAddresses(svc *corev1.Service) string {
	var parts []string
	if ips := svc.Spec.ExternalIPs; len(ips) > 0 {
		parts = append(parts, "externalIPs "+printableList(ips))
	}
	if ip := svc.Spec.LoadBalancerIP; ip != "" {
		parts = append(parts, "loadBalancerIP "+printable(ip))
	}
	for _, key := range external.LoadBalancerAddressAnnotations {
		if v, ok := svc.Annotations[key]; ok {
			parts = append(parts, key+" "+printableList(strings.Split(v, ",")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	var announced []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			announced = append(announced, ing.IP)
		}
	}
	if len(announced) > 0 {
		parts = append(parts, "announced "+printableList(announced))
	}
	return strings.Join(parts, "; ")
}

// printableList is texts each printable, cut at four and the rest counted.
func printableList(texts []string) string {
	shown := make([]string, 0, 5)
	for _, text := range texts[:min(len(texts), 4)] {
		shown = append(shown, printable(strings.TrimSpace(text)))
	}
	if len(texts) > 4 {
		shown = append(shown, fmt.Sprintf("%d more", len(texts)-4))
	}
	return strings.Join(shown, ", ")
}

// printable is an address as parsed, else the text quoted in ASCII and cut at 64 bytes: a
// condition's message and an Event are read in terminals. An IPv6 zone ("fe80::1%zone") parses
// and is any text (the kube-apiserver does not validate spec.loadBalancerIP): quoted too.
func printable(text string) string {
	if a, err := netip.ParseAddr(text); err == nil && a.Zone() == "" {
		return a.String()
	}
	return strconv.QuoteToASCII(text[:min(len(text), 64)])
}

// exposureCondition is ConditionServicesExposeExternalIPs for the Services found.
func exposureCondition(exposed []string) metav1.Condition {
	if len(exposed) == 0 {
		return metav1.Condition{Type: ConditionServicesExposeExternalIPs, Status: metav1.ConditionFalse, Reason: ReasonNoExternalIPsSet,
			Message: "no Service in a namespace operators write sets spec.externalIPs, spec.loadBalancerIP or a load balancer's address annotation"}
	}
	names := strings.Join(exposed[:min(len(exposed), exposedListed)], ", ")
	if len(exposed) > exposedListed {
		names += fmt.Sprintf(" and %d more", len(exposed)-exposedListed)
	}
	return metav1.Condition{Type: ConditionServicesExposeExternalIPs, Status: metav1.ConditionTrue, Reason: ReasonExternalIPsSet,
		Message: fmt.Sprintf("Services in namespaces operators write take every Pod's traffic to their addresses (CVE-2020-8554), %d in all: %s. "+
			"The policy %s judges writes only (and a tenant before Kubernetes 1.30 has none): these were set before it held or by a "+
			"tenant admin. Remove them, or move a tenant admin's Service to a protected namespace (%s=true)", len(exposed), names, access.APIEndpointPolicy, external.ProtectedNamespaceLabel)}
}

// recordExposure makes a Warning Event when the condition turns True or names other Services,
// and a Normal one when it turns False from True: a look that finds the same makes none.
func (c *Controller) recordExposure(tc *v1alpha1.TenantCluster, status *v1alpha1.TenantClusterStatus) {
	was := meta.FindStatusCondition(tc.Status.Conditions, ConditionServicesExposeExternalIPs)
	now := meta.FindStatusCondition(status.Conditions, ConditionServicesExposeExternalIPs)
	switch {
	case now == nil:
	case now.Status == metav1.ConditionTrue && (was == nil || was.Status != now.Status || was.Message != now.Message):
		c.events.Eventf(tc, nil, corev1.EventTypeWarning, ReasonExternalIPsSet, "Audit", "%s", controllerkit.EventNote(now.Message))
	case now.Status == metav1.ConditionFalse && was != nil && was.Status == metav1.ConditionTrue:
		c.events.Eventf(tc, nil, corev1.EventTypeNormal, ReasonNoExternalIPsSet, "Audit", "%s", controllerkit.EventNote(now.Message))
	}
}

// forgetAudit drops what is remembered of a deleted cluster's look.
func (c *Controller) forgetAudit(uid string) {
	c.audit.mu.Lock()
	delete(c.audit.looked, uid)
	c.audit.mu.Unlock()
}
