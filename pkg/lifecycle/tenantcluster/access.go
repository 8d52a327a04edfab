package tenantcluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// accessApplied remembers, per cluster UID, the digest of the bindings last applied in its
// tenant, so a reconcile that changes nothing of them writes nothing there (nor while it waits
// for their roles); granted, the digest whose roles were seen granting something and when, so
// one that changes nothing reads nothing either until accessResync; and the tenant client, kept
// while its admin kubeconfig Secret is unchanged (a new client is a new TLS connection).
type accessApplied struct {
	mu      sync.Mutex
	digest  map[string]string
	granted map[string]grant
	clients map[string]tenantClient
}

type grant struct {
	digest string
	at     time.Time
}

// accessResync is how often the bindings of a cluster whose Team has not changed are applied
// again: a tenant admin may have edited or deleted them, and no watch reaches into the tenant.
// The same period as an Installed addon's check against its release.
const accessResync = 10 * time.Minute

type tenantClient = keptClient[kubernetes.Interface]

// keptClient is a tenant's client and the resourceVersion of the admin kubeconfig Secret it
// was made from.
type keptClient[T any] struct {
	secretVersion string
	client        T
}

// ensureAccess keeps the tenant's bindings in step with the cluster's Team: who may do what in
// the tenant follows the Team at once, while the identities in minted kubeconfigs stay the same
// (package access). A failure waits and tries again, rather than end the run as a step's error
// does: the workers and addons after it must not wait on the tenant's RBAC (a webhook on
// bindings served from the workers, scaled to zero by a hibernation, would never come back).
func (c *Controller) ensureAccess(ctx context.Context, s *state) (steps.Result, error) {
	r, err := c.applyAccess(ctx, s)
	if err != nil {
		s.recheckWithin(accessRetry)
		return steps.Waiting("AccessNotApplied", "the Team's bindings in the tenant: %v", err), nil
	}
	return r, nil
}

// accessRetry is how soon bindings that could not be applied are tried again.
const accessRetry = 10 * time.Second

func (c *Controller) applyAccess(ctx context.Context, s *state) (steps.Result, error) {
	if s.kubeconfigSecret == "" {
		return steps.Waiting("WaitingForKubeconfig", "waiting for the control plane's admin kubeconfig"), nil
	}
	var members access.Members // no Team: only the platform admins' binding
	if team := c.teamOf(s.tc); team != nil {
		members = access.MembersOf(team)
	}
	tenant, err := c.tenantClientOf(ctx, string(s.tc.UID), s.namespace, s.kubeconfigSecret)
	if err != nil {
		return steps.Result{}, err
	}
	nsList, err := tenant.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return steps.Result{}, fmt.Errorf("listing the tenant's namespaces: %w", err)
	}
	namespaces := make([]access.Namespace, 0, len(nsList.Items))
	for _, ns := range nsList.Items {
		if ns.DeletionTimestamp == nil {
			namespaces = append(namespaces, access.Namespace{Name: ns.Name, Protected: access.Protected(ns.Name, ns.Labels)})
		}
	}
	slices.SortFunc(namespaces, func(a, b access.Namespace) int { return strings.Compare(a.Name, b.Name) })
	s.tenantNamespaces = namespaces
	apiAddress, err := apiClusterIP(s.tc)
	if err != nil {
		return steps.Result{}, err
	}
	policy, binding := access.APIEndpointPolicies(apiAddress)
	roles := access.ClusterRoles()
	crbs, rbs := access.Bindings(members, namespaces)
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(policy, binding, roles, crbs, rbs, restoredAt(s.tc)))))
	uid := string(s.tc.UID)
	now := c.clock.Now()
	c.access.mu.Lock()
	applied, granted := c.access.digest[uid] == digest, c.access.granted[uid]
	c.access.mu.Unlock()
	if granted.digest == digest {
		if left := accessResync - now.Sub(granted.at); left > 0 {
			s.recheckWithin(left)
			return steps.Ready("AccessApplied", "the Team's roles are bound in the tenant"), nil
		}
		applied = false // put right what was changed in the tenant since
	}
	if !applied {
		// The policy first: no binding gives an operator a right before it holds.
		if err := applyAPIEndpointPolicy(ctx, tenant, policy, binding); err != nil {
			return steps.Result{}, err
		}
		s.policyApplied = true
		if err := applyRoles(ctx, tenant, roles); err != nil {
			return steps.Result{}, err
		}
		if err := applyBindings(ctx, tenant, crbs, rbs); err != nil {
			return steps.Result{}, err
		}
		c.access.mu.Lock()
		c.access.digest[uid] = digest
		c.access.mu.Unlock()
	}
	// A binding to a role that grants nothing yet gives nothing: the step is done once each role
	// has its rules, and looks again shortly (no watch reaches into the tenant).
	if role, err := emptyRole(ctx, tenant, crbs, rbs); err != nil || role != "" {
		if err != nil {
			return steps.Result{}, err
		}
		s.recheckWithin(rolesRecheck)
		return steps.Waiting("WaitingForRoles", "ClusterRole %s in the tenant grants nothing yet (the tenant's kube-controller-manager aggregates view, edit and butler:operator once it runs)", role), nil
	}
	c.access.mu.Lock()
	c.access.granted[uid] = grant{digest: digest, at: now}
	c.access.mu.Unlock()
	s.recheckWithin(accessResync)
	return steps.Ready("AccessApplied", "the Team's roles are bound in the tenant"), nil
}

// accessWhilePaused keeps the Team's bindings of a paused cluster: a pause stops the lifecycle,
// not who may do what in the tenant, or a member about to be removed from the Team could pause
// the cluster to stay bound. Nothing else is written, the status neither. A tenant asleep is
// left so (nothing wakes a paused cluster); one only asked to sleep still serves, as a pause
// holds the sleep back.
func (c *Controller) accessWhilePaused(ctx context.Context, tc *v1alpha1.TenantCluster) error {
	ref := tc.Status.KubeconfigSecretRef
	if tc.Status.Phase == v1alpha1.TenantClusterHibernated || ref == nil || !meta.IsStatusConditionTrue(tc.Status.Conditions, ConditionControlPlaneReady) {
		return nil
	}
	s := c.newState(tc)
	s.kubeconfigSecret = ref.Name
	_, _ = c.ensureAccess(ctx, s) // a failure comes back as waiting, with its retry in recheckAfter
	if s.recheckAfter > 0 {
		return controllerkit.RequeueAfter(s.recheckAfter)
	}
	return nil
}

// apiClusterIP is the tenant's API's ClusterIP, which the policy keeps to its kube-apiserver: the
// first address of the service CIDR (the API's defaulted one when empty, as a provider's is).
func apiClusterIP(tc *v1alpha1.TenantCluster) (netip.Addr, error) {
	cidr := cmp.Or(tc.Spec.Networking.ServiceCIDR, v1alpha1.DefaultServiceCIDR)
	a, err := component.NthAddress(cidr, 1)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("the API's ClusterIP of spec.networking.serviceCIDR: %w", err)
	}
	return netip.ParseAddr(a)
}

// applyAPIEndpointPolicy applies the policy that keeps the tenant's API endpoint to those who
// publish it (access.APIEndpointPolicies) and its binding. A tenant that serves no
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (before Kubernetes 1.30) goes without
// it, said in the log: refusing it the Team's bindings would leave its members no access at all.
func applyAPIEndpointPolicy(ctx context.Context, tenant kubernetes.Interface, policy *admissionregistrationv1.ValidatingAdmissionPolicy,
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) error {
	var p admissionregistrationv1ac.ValidatingAdmissionPolicyApplyConfiguration
	var b admissionregistrationv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration
	if err := asApplyConfiguration(policy, &p); err != nil {
		return err
	}
	if err := asApplyConfiguration(binding, &b); err != nil {
		return err
	}
	p.Status = nil // status is the tenant's kube-apiserver's (its type checking)
	policies := tenant.AdmissionregistrationV1()
	_, err := policies.ValidatingAdmissionPolicies().Apply(ctx, p.WithKind("ValidatingAdmissionPolicy").WithAPIVersion("admissionregistration.k8s.io/v1"),
		external.Workers.ApplyOptions())
	if apierrors.IsNotFound(err) { // an apply makes what is missing: the kind is not served
		klog.FromContext(ctx).Info("The tenant serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes before 1.30): its API endpoint is not kept from its operators",
			"policy", policy.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("ValidatingAdmissionPolicy %s in the tenant: %w", policy.Name, err)
	}
	if _, err := policies.ValidatingAdmissionPolicyBindings().Apply(ctx, b.WithKind("ValidatingAdmissionPolicyBinding").WithAPIVersion("admissionregistration.k8s.io/v1"),
		external.Workers.ApplyOptions()); err != nil {
		return fmt.Errorf("ValidatingAdmissionPolicyBinding %s in the tenant: %w", binding.Name, err)
	}
	return nil
}

// asApplyConfiguration fills an apply configuration from the typed object: the two have the
// same JSON, and a copy field by field would be one more place to forget a field.
func asApplyConfiguration(obj, ac any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, ac)
}

// applyRoles applies the operators' ClusterRoles in the tenant, before the bindings that name
// them.
func applyRoles(ctx context.Context, tenant kubernetes.Interface, roles []*rbacv1.ClusterRole) error {
	for _, r := range roles {
		if _, err := tenant.RbacV1().ClusterRoles().Apply(ctx, clusterRoleAC(r), external.Workers.ApplyOptions()); err != nil {
			return fmt.Errorf("ClusterRole %s in the tenant: %w", r.Name, err)
		}
	}
	return nil
}

// applyBindings applies the bindings in the tenant, and deletes those with no subjects: an
// applied empty list is left out of the request, so the apply would own no subjects, and ones a
// tenant admin added to the binding would stay.
func applyBindings(ctx context.Context, tenant kubernetes.Interface, crbs []*rbacv1.ClusterRoleBinding, rbs []*rbacv1.RoleBinding) error {
	opts := external.Workers.ApplyOptions()
	for _, b := range crbs {
		var err error
		if len(b.Subjects) == 0 {
			err = tenant.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{})
		} else {
			_, err = tenant.RbacV1().ClusterRoleBindings().Apply(ctx, clusterRoleBindingAC(b), opts)
		}
		if err != nil && !apierrors.IsNotFound(err) { // an apply is never NotFound
			return fmt.Errorf("ClusterRoleBinding %s in the tenant: %w", b.Name, err)
		}
	}
	for _, b := range rbs {
		var err error
		if len(b.Subjects) == 0 {
			err = tenant.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{})
		} else {
			err = applyRoleBinding(ctx, tenant, b)
		}
		// A namespace that went, or is going, since the list needs no binding.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return fmt.Errorf("RoleBinding %s/%s in the tenant: %w", b.Namespace, b.Name, err)
		}
	}
	return nil
}

// applyRoleBinding applies a RoleBinding, replacing one that refers to another role: a
// binding's roleRef cannot change, and the operators' were bound to edit before butler:operator.
func applyRoleBinding(ctx context.Context, tenant kubernetes.Interface, b *rbacv1.RoleBinding) error {
	rbs := tenant.RbacV1().RoleBindings(b.Namespace)
	_, err := rbs.Apply(ctx, roleBindingAC(b), external.Workers.ApplyOptions())
	if !apierrors.IsInvalid(err) {
		return err
	}
	old, getErr := rbs.Get(ctx, b.Name, metav1.GetOptions{})
	if getErr != nil || old.RoleRef == b.RoleRef {
		return err
	}
	if err := rbs.Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err = rbs.Apply(ctx, roleBindingAC(b), external.Workers.ApplyOptions())
	return err
}

// rolesRecheck is how soon the access step looks again at roles that grant nothing yet: a new
// tenant's kube-controller-manager aggregates view and edit seconds after it starts, and a
// look is a few reads on a kept connection.
const rolesRecheck = 500 * time.Millisecond

// emptyRole names the first ClusterRole the bindings refer to that is missing or has no rules,
// "" when each has some. The tenant's view and edit are aggregated ClusterRoles: kube-apiserver
// creates them empty and its kube-controller-manager fills them in, seconds after kube-apiserver
// answers (the control plane is Ready before that).
func emptyRole(ctx context.Context, tenant kubernetes.Interface, crbs []*rbacv1.ClusterRoleBinding, rbs []*rbacv1.RoleBinding) (string, error) {
	for _, name := range access.BoundRoles(crbs, rbs) {
		role, err := tenant.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return name, nil
		}
		if err != nil {
			return "", fmt.Errorf("ClusterRole %s in the tenant: %w", name, err)
		}
		if len(role.Rules) == 0 {
			return name, nil
		}
	}
	return "", nil
}

// teamOf is the Team a cluster belongs to: its teamRef, else the Team whose namespace it is in.
func (c *Controller) teamOf(tc *v1alpha1.TenantCluster) *v1alpha1.Team {
	name := tc.Namespace
	if tc.Spec.TeamRef != nil {
		name = tc.Spec.TeamRef.Name
	}
	team, err := c.teams.Get(name)
	if err != nil {
		return nil
	}
	return team
}

// clustersOfTeam maps a Team to its clusters: a change of members moves their tenant bindings.
func (c *Controller) clustersOfTeam(obj any) []string {
	team, ok := obj.(*v1alpha1.Team)
	if !ok {
		return nil
	}
	all, _ := c.clusters.List(k8slabels.Everything())
	var keys []string
	for _, tc := range all {
		if t := c.teamOf(tc); t != nil && t.Name == team.Name {
			keys = append(keys, tc.Namespace+"/"+tc.Name)
		}
	}
	return keys
}

// tenantClientOf is a client of the tenant as its admin, from the admin kubeconfig Secret; the
// one made before while the Secret's resourceVersion (from the tenant namespace's Secrets
// watch) is the same.
func (c *Controller) tenantClientOf(ctx context.Context, uid, ns, secretName string) (kubernetes.Interface, error) {
	return keptTenantClient(ctx, c, &c.access.mu, c.access.clients, uid, ns, secretName, c.newTenantClient)
}

// keptTenantClient is kept[uid]'s client while the tenant's admin kubeconfig Secret is the one
// it was made from (a new client is a new TLS connection), else a new one from newClient, kept.
func keptTenantClient[T any](ctx context.Context, c *Controller, mu *sync.Mutex, kept map[string]keptClient[T],
	uid, ns, secretName string, newClient func([]byte) (T, error)) (T, error) {
	version := ""
	if c.secrets != nil {
		if s, err := c.secrets.Secrets(ns).Get(secretName); err == nil {
			version = s.ResourceVersion
		}
	}
	mu.Lock()
	cached, ok := kept[uid]
	mu.Unlock()
	if ok && version != "" && cached.secretVersion == version {
		return cached.client, nil
	}
	var none T
	data, version, err := c.adminKubeconfig(ctx, ns, secretName)
	if err != nil {
		return none, err
	}
	client, err := newClient(data)
	if err != nil {
		return none, err
	}
	mu.Lock()
	kept[uid] = keptClient[T]{secretVersion: version, client: client}
	mu.Unlock()
	return client, nil
}

// adminKubeconfig reads the tenant's admin kubeconfig from its Secret, and the Secret's
// resourceVersion.
func (c *Controller) adminKubeconfig(ctx context.Context, ns, secretName string) ([]byte, string, error) {
	secret, err := c.kube.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("the admin kubeconfig Secret %s/%s: %w", ns, secretName, err)
	}
	for _, key := range component.ManagementKubeconfigKeys {
		if data := secret.Data[key]; len(data) > 0 {
			return data, secret.ResourceVersion, nil
		}
	}
	return nil, "", fmt.Errorf("the admin kubeconfig Secret %s/%s holds no kubeconfig", ns, secretName)
}

// newAdminClient is a client of a tenant from its admin kubeconfig.
func newAdminClient(kubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = string(external.Workers)
	// client-go's default 5/s, burst 10, paced the bindings of a tenant with a few namespaces
	// to one every 200 ms. The tenant's kube-apiserver is the cluster's own, and its admin
	// (system:masters) is exempt from its priority and fairness.
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfig(cfg)
}

// restoredAt names the last in-place restore of the tenant's data: a provider's restore may put
// back the bindings of the snapshot's time (a member removed since bound again; the local
// provider keeps those of now), so bindings applied before it are taken as no longer there.
func restoredAt(tc *v1alpha1.TenantCluster) string {
	r := tc.Status.Restore
	if r == nil || r.Phase != v1alpha1.RestoreSucceeded || r.CompletionTime == nil {
		return ""
	}
	return r.SnapshotUID + "@" + r.CompletionTime.UTC().Format(time.RFC3339Nano)
}

// forgetBindings makes the next access step apply the bindings again: a control plane that
// (re)starts may serve other data than the one they were applied to (a restore, a move to
// another datastore, a reset), and nothing else would notice.
func (c *Controller) forgetBindings(uid string) {
	c.access.mu.Lock()
	delete(c.access.digest, uid)
	delete(c.access.granted, uid)
	c.access.mu.Unlock()
}

// forgetAccess drops what is remembered of a deleted cluster's tenant.
func (c *Controller) forgetAccess(uid string) {
	c.access.mu.Lock()
	delete(c.access.digest, uid)
	delete(c.access.granted, uid)
	delete(c.access.clients, uid)
	c.access.mu.Unlock()
}

func clusterRoleAC(r *rbacv1.ClusterRole) *rbacv1ac.ClusterRoleApplyConfiguration {
	ac := rbacv1ac.ClusterRole(r.Name).WithLabels(r.Labels)
	for _, rule := range r.Rules {
		ac.WithRules(rbacv1ac.PolicyRule().WithVerbs(rule.Verbs...).WithAPIGroups(rule.APIGroups...).WithResources(rule.Resources...))
	}
	if a := r.AggregationRule; a != nil {
		agg := rbacv1ac.AggregationRule()
		for _, sel := range a.ClusterRoleSelectors {
			ls := metav1ac.LabelSelector().WithMatchLabels(sel.MatchLabels)
			for _, e := range sel.MatchExpressions {
				ls.WithMatchExpressions(metav1ac.LabelSelectorRequirement().WithKey(e.Key).WithOperator(e.Operator).WithValues(e.Values...))
			}
			agg.WithClusterRoleSelectors(ls)
		}
		ac.WithAggregationRule(agg)
	}
	return ac
}

func clusterRoleBindingAC(b *rbacv1.ClusterRoleBinding) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(b.Name).WithLabels(b.Labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(b.RoleRef.APIGroup).WithKind(b.RoleRef.Kind).WithName(b.RoleRef.Name)).
		WithSubjects(subjectsAC(b.Subjects)...)
}

func roleBindingAC(b *rbacv1.RoleBinding) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(b.Name, b.Namespace).WithLabels(b.Labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(b.RoleRef.APIGroup).WithKind(b.RoleRef.Kind).WithName(b.RoleRef.Name)).
		WithSubjects(subjectsAC(b.Subjects)...)
}

func subjectsAC(subjects []rbacv1.Subject) []*rbacv1ac.SubjectApplyConfiguration {
	out := make([]*rbacv1ac.SubjectApplyConfiguration, len(subjects))
	for i, s := range subjects {
		out[i] = rbacv1ac.Subject().WithKind(s.Kind).WithAPIGroup(s.APIGroup).WithName(s.Name)
	}
	return out
}
