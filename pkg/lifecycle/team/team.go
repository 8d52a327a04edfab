package team

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions/butler/v1alpha1"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

const (
	// TeamLabel marks a Team's namespace and RoleBindings with the Team's name.
	TeamLabel = "butler.butlerlabs.dev/team"
	// CreatedNamespaceAnnotation marks a namespace the controller created (not adopted): only
	// those are deleted with their Team.
	CreatedNamespaceAnnotation = "butler.butlerlabs.dev/created-for-team"
	// TeamFinalizer holds a deleted Team until its namespace and RoleBindings are gone.
	TeamFinalizer = "butler.butlerlabs.dev/team-cleanup"

	conditionNamespaceReady = "NamespaceReady"
	conditionRBACReady      = "RBACReady"
	conditionReady          = "Ready"
)

// roleBindings maps each Team role to the ClusterRole its members get and the RoleBinding
// that grants it. "member" is "operator".
var roleBindings = []struct {
	role        v1alpha1.TeamRole
	clusterRole string
	binding     string
}{
	{v1alpha1.TeamRoleAdmin, "butler-admin", "butler-team-admin"},
	{v1alpha1.TeamRoleOperator, "butler-operator", "butler-team-operator"},
	{v1alpha1.TeamRoleViewer, "butler-viewer", "butler-team-viewer"},
}

// Controller keeps, for each Team, a namespace of the Team's name labelled with it,
// RoleBindings from its members to butler-admin / butler-operator / butler-viewer (exactly the
// members listed: removed members lose their binding), a ClusterRole and ClusterRoleBinding
// that let the members read the Team itself (TeamReaderName), and the Team's status. A deleted Team's
// RoleBindings and namespace go away before its finalizer is removed, unless the namespace
// still holds TenantClusters.
type Controller struct {
	butler     clientset.Interface
	kube       kubernetes.Interface
	teams      listers.TeamLister
	clusters   listers.TenantClusterLister
	configs    listers.ButlerConfigLister
	namespaces corelisters.NamespaceLister
	bindings   rbaclisters.RoleBindingLister
	// clusterRoles and clusterRoleBindings hold each Team's reader role and binding.
	clusterRoles        rbaclisters.ClusterRoleLister
	clusterRoleBindings rbaclisters.ClusterRoleBindingLister
	synced              []cache.InformerSynced
	queue               *controllerkit.Queue
	plan                steps.Plan[*state]
}

// RBACInformers are the management cluster's informers the Team controller needs, each
// filtered to objects carrying TeamLabel.
type RBACInformers struct {
	Namespaces          coreinformers.NamespaceInformer
	RoleBindings        rbacinformers.RoleBindingInformer
	ClusterRoles        rbacinformers.ClusterRoleInformer
	ClusterRoleBindings rbacinformers.ClusterRoleBindingInformer
}

// New builds the Team controller from the shared informers; the management cluster's are filtered to
// what carries TeamLabel, as the management cluster may hold many namespaces.
func New(d *controllerkit.Deps) (*Controller, error) {
	b := d.ButlerInformers.Butler().V1alpha1()
	k := d.KubeInformersFor(TeamLabel)
	return NewController(d.Butler, d.Kube, b.Teams(), b.TenantClusters(), b.ButlerConfigs(), RBACInformers{
		Namespaces: k.Core().V1().Namespaces(), RoleBindings: k.Rbac().V1().RoleBindings(),
		ClusterRoles: k.Rbac().V1().ClusterRoles(), ClusterRoleBindings: k.Rbac().V1().ClusterRoleBindings(),
	})
}

// NewController wires the controller to its informers.
func NewController(butlerClient clientset.Interface, kube kubernetes.Interface,
	teams butlerinformers.TeamInformer, clusters butlerinformers.TenantClusterInformer, configs butlerinformers.ButlerConfigInformer,
	mgmt RBACInformers) (*Controller, error) {
	c := &Controller{
		butler: butlerClient, kube: kube,
		teams: teams.Lister(), clusters: clusters.Lister(), configs: configs.Lister(),
		namespaces: mgmt.Namespaces.Lister(), bindings: mgmt.RoleBindings.Lister(),
		clusterRoles: mgmt.ClusterRoles.Lister(), clusterRoleBindings: mgmt.ClusterRoleBindings.Lister(),
		synced: []cache.InformerSynced{teams.Informer().HasSynced, clusters.Informer().HasSynced, configs.Informer().HasSynced,
			mgmt.Namespaces.Informer().HasSynced, mgmt.RoleBindings.Informer().HasSynced,
			mgmt.ClusterRoles.Informer().HasSynced, mgmt.ClusterRoleBindings.Informer().HasSynced},
	}
	c.plan = c.steps()
	c.queue = controllerkit.NewQueue("teams", c.reconcileKey)
	byName := func(obj any) {
		if m, err := meta.Accessor(controllerkit.Unwrap(obj)); err == nil {
			c.queue.Add(m.GetName())
		}
	}
	// A burst of cluster writes in one Team becomes one status write per usageDelay.
	byNamespace := func(obj any) {
		if m, err := meta.Accessor(controllerkit.Unwrap(obj)); err == nil {
			c.queue.AddAfter(m.GetNamespace(), usageDelay)
		}
	}
	byLabel := func(obj any) {
		if m, err := meta.Accessor(controllerkit.Unwrap(obj)); err == nil && m.GetLabels()[TeamLabel] != "" {
			c.queue.Add(m.GetLabels()[TeamLabel])
		}
	}
	allTeams := func(any) {
		all, _ := c.teams.List(labels.Everything())
		for _, t := range all {
			c.queue.Add(t.Name)
		}
	}
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		fn  func(any)
	}{
		{teams.Informer(), byName}, {clusters.Informer(), byNamespace}, {configs.Informer(), allTeams},
		{mgmt.Namespaces.Informer(), byLabel}, {mgmt.RoleBindings.Informer(), byLabel},
		{mgmt.ClusterRoles.Informer(), byLabel}, {mgmt.ClusterRoleBindings.Informer(), byLabel},
	} {
		fn := h.fn
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: fn, DeleteFunc: fn,
			UpdateFunc: func(o, n any) {
				if !onlyLedgerChanged(o, n) {
					fn(n)
				}
			},
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// usageDelay is how long a Team's status may lag behind its clusters: the Team is reconciled
// at most once per usageDelay for cluster changes, as each status write also contends with the
// quota Ledger's compare-and-swap on the Team.
const usageDelay = 500 * time.Millisecond

// onlyLedgerChanged says whether a Team update changed nothing but the quota Ledger's
// reservations (and so the resourceVersion): nothing the controller acts on.
func onlyLedgerChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*v1alpha1.Team)
	n, ok2 := newObj.(*v1alpha1.Team)
	if !ok1 || !ok2 || o.Annotations[quota.ReservationsAnnotation] == n.Annotations[quota.ReservationsAnnotation] {
		return false
	}
	strip := func(t *v1alpha1.Team) *v1alpha1.Team {
		t = t.DeepCopy()
		t.ResourceVersion = ""
		t.ManagedFields = nil
		delete(t.Annotations, quota.ReservationsAnnotation)
		if len(t.Annotations) == 0 {
			t.Annotations = nil
		}
		return t
	}
	return apiequality.Semantic.DeepEqual(strip(o), strip(n))
}

// Run processes Teams with two goroutines until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.queue.Run(ctx, 2, c.synced...) }

// reconcileKey is Reconcile for the queue: a delay becomes a requeue.
func (c *Controller) reconcileKey(ctx context.Context, name string) error {
	after, err := c.Reconcile(ctx, name)
	if err == nil && after > 0 {
		return controllerkit.RequeueAfter(after)
	}
	return err
}

// Reconcile brings one Team's namespace, RoleBindings and status in line with its spec. It
// returns a delay after which to look again, if any.
func (c *Controller) Reconcile(ctx context.Context, name string) (time.Duration, error) {
	team, err := c.teams.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if team.DeletionTimestamp != nil {
		return c.finalize(ctx, team)
	}
	if !slices.Contains(team.Finalizers, TeamFinalizer) {
		// The update below brings the Team back through the informer.
		return 0, c.updateFinalizers(ctx, team, append(slices.Clone(team.Finalizers), TeamFinalizer))
	}

	s := &state{team: team}
	out, err := c.plan.Ensure(ctx, s, team.Generation)
	status := team.Status.DeepCopy()
	status.Namespace = team.Name
	status.ObservedGeneration = team.Generation
	status.MemberCount = int32(len(team.Spec.Access.Users) + len(team.Spec.Access.Groups))
	steps.SetConditions(&status.Conditions, out.Conditions...)
	if err != nil {
		var stepErr *steps.StepError
		if errors.As(err, &stepErr) {
			setCondition(status, team, conditionOf(stepErr.Step), false, "Error", stepErr.Err.Error())
		}
		return 0, c.finish(ctx, team, status, err)
	}
	if err := c.usage(team, status); err != nil {
		return 0, err
	}
	if out.First == "" {
		status.Phase = v1alpha1.TeamPhaseReady
		setCondition(status, team, conditionReady, true, "Ready", "namespace and RBAC are in place")
	} else {
		status.Phase = v1alpha1.TeamPhasePending
		setCondition(status, team, conditionReady, false, "Pending", "namespace or RBAC not ready")
	}
	return s.recheckAfter, c.finish(ctx, team, status, nil)
}

// usage fills clusterCount, resourceUsage, quotaStatus and quotaMessage from the cache.
func (c *Controller) usage(team *v1alpha1.Team, status *v1alpha1.TeamStatus) error {
	list, err := c.clusters.TenantClusters(team.Name).List(labels.Everything())
	if err != nil {
		return err
	}
	internal := make([]*butler.TenantCluster, 0, len(list))
	for _, tc := range list {
		var out butler.TenantCluster
		if err := v1alpha1.Convert_v1alpha1_TenantCluster_To_butler_TenantCluster(tc, &out, nil); err != nil {
			return err
		}
		internal = append(internal, &out)
	}
	u := quota.TeamUsage(internal)
	var internalTeam butler.Team
	if err := v1alpha1.Convert_v1alpha1_Team_To_butler_Team(team, &internalTeam, nil); err != nil {
		return err
	}
	var internalConfig *butler.ButlerConfig
	if cfg, err := c.configs.Get(butler.ButlerConfigName); err == nil {
		internalConfig = &butler.ButlerConfig{}
		if err := v1alpha1.Convert_v1alpha1_ButlerConfig_To_butler_ButlerConfig(cfg, internalConfig, nil); err != nil {
			return err
		}
	}
	status.ClusterCount = int32(len(list))
	var ru v1alpha1.ResourceUsage
	if err := v1alpha1.Convert_butler_ResourceUsage_To_v1alpha1_ResourceUsage(u.ToResourceUsage(), &ru, nil); err != nil {
		return err
	}
	status.ResourceUsage = &ru
	status.QuotaStatus, status.QuotaMessage = quota.Status(quota.EffectiveLimits(&internalTeam, internalConfig), u)
	return nil
}

// finish writes status if it changed and returns err.
func (c *Controller) finish(ctx context.Context, team *v1alpha1.Team, status *v1alpha1.TeamStatus, err error) error {
	if apiequality.Semantic.DeepEqual(&team.Status, status) {
		return err
	}
	updated := team.DeepCopy()
	updated.Status = *status
	if _, uerr := c.butler.ButlerV1alpha1().Teams().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); uerr != nil {
		if apierrors.IsConflict(uerr) {
			// A newer Team is on its way through the informer; it is reconciled again.
			klog.FromContext(ctx).V(4).Info("Team changed while writing its status; will retry")
			return err
		}
		if err == nil {
			err = uerr
		}
	}
	return err
}

func setCondition(status *v1alpha1.TeamStatus, team *v1alpha1.Team, t string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: team.Generation,
	})
}

// desiredBindings returns the RoleBindings the Team's members should have, by name.
func desiredBindings(team *v1alpha1.Team) map[string]*rbacv1.RoleBinding {
	out := map[string]*rbacv1.RoleBinding{}
	for _, rb := range roleBindings {
		var subjects []rbacv1.Subject
		add := func(kind string, members []v1alpha1.TeamMember) {
			for _, m := range members {
				role := m.Role
				if role == v1alpha1.TeamRoleMember {
					role = v1alpha1.TeamRoleOperator
				}
				if role == "" {
					role = v1alpha1.TeamRoleViewer
				}
				if role == rb.role {
					subjects = append(subjects, rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: m.Name})
				}
			}
		}
		add(rbacv1.UserKind, team.Spec.Access.Users)
		add(rbacv1.GroupKind, team.Spec.Access.Groups)
		if len(subjects) == 0 {
			continue
		}
		sort.Slice(subjects, func(i, j int) bool {
			return subjects[i].Kind+"/"+subjects[i].Name < subjects[j].Kind+"/"+subjects[j].Name
		})
		out[rb.binding] = &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{
				Name: rb.binding, Namespace: team.Name,
				Labels: map[string]string{TeamLabel: team.Name, external.ManagedByLabel: external.ManagedBy},
			},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rb.clusterRole},
			Subjects: subjects,
		}
	}
	return out
}

// ensureRoleBindings creates, updates and deletes the Team's RoleBindings to match its members.
func (c *Controller) ensureRoleBindings(ctx context.Context, team *v1alpha1.Team) error {
	logger := klog.FromContext(ctx)
	desired := desiredBindings(team)
	client := c.kube.RbacV1().RoleBindings(team.Name)
	existing, err := c.bindings.RoleBindings(team.Name).List(labels.SelectorFromSet(labels.Set{external.ManagedByLabel: external.ManagedBy}))
	if err != nil {
		return err
	}
	have := map[string]*rbacv1.RoleBinding{}
	for _, rb := range existing {
		have[rb.Name] = rb
	}
	for name, want := range desired {
		got, ok := have[name]
		did, err := ensureRBAC(ctx, client, roleBindingKind, got, ok, want)
		if err != nil {
			return err
		}
		switch did {
		case rbacCreated:
			logger.Info("Bound team members", "roleBinding", name, "subjects", len(want.Subjects))
		case rbacUpdated, rbacReplaced:
			logger.Info("Updated team members", "roleBinding", name, "subjects", len(want.Subjects))
		}
	}
	for name := range have {
		if _, ok := desired[name]; ok {
			continue
		}
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		logger.Info("Removed a team RoleBinding", "roleBinding", name)
	}
	return nil
}

// finalize cleans up after a deleted Team: its RoleBindings and reader role at once, then its
// namespace (if the controller created it), then the finalizer. While the namespace still holds
// TenantClusters (created in the moment the deletion check could not see) nothing is removed.
func (c *Controller) finalize(ctx context.Context, team *v1alpha1.Team) (time.Duration, error) {
	if !slices.Contains(team.Finalizers, TeamFinalizer) {
		return 0, nil
	}
	status := team.Status.DeepCopy()
	status.Phase = v1alpha1.TeamPhaseTerminating

	// A live list, not the cache: a cluster created a moment ago must stop the cleanup.
	clusters, err := c.butler.ButlerV1alpha1().TenantClusters(team.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	if n := len(clusters.Items); n > 0 {
		var names []string
		for _, tc := range clusters.Items {
			names = append(names, tc.Name)
		}
		setCondition(status, team, conditionReady, false, "ClustersRemain",
			fmt.Sprintf("the team cannot be removed while its namespace holds %d tenant cluster(s): %s", n, strings.Join(names, ", ")))
		return 10 * time.Second, c.finish(ctx, team, status, nil)
	}
	setCondition(status, team, conditionReady, false, "Terminating", "removing the namespace and RoleBindings")
	if err := c.finish(ctx, team, status, nil); err != nil {
		return 0, err
	}

	// Backwards through the plan: members lose access first, even if the namespace takes a while
	// to go.
	if left, err := c.plan.Cleanup(ctx, &state{team: team}); err != nil || left != "" {
		return 0, err
	}
	finalizers := slices.DeleteFunc(slices.Clone(team.Finalizers), func(f string) bool { return f == TeamFinalizer })
	return 0, c.updateFinalizers(ctx, team, finalizers)
}

// updateFinalizers writes the Team's finalizers, retrying on conflict with a fresh read.
func (c *Controller) updateFinalizers(ctx context.Context, team *v1alpha1.Team, finalizers []string) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		t := team
		if !first {
			var err error
			if t, err = c.butler.ButlerV1alpha1().Teams().Get(ctx, team.Name, metav1.GetOptions{}); err != nil {
				return err
			}
			if slices.Contains(finalizers, TeamFinalizer) == slices.Contains(t.Finalizers, TeamFinalizer) {
				return nil
			}
			if slices.Contains(finalizers, TeamFinalizer) {
				finalizers = append(slices.Clone(t.Finalizers), TeamFinalizer)
			} else {
				finalizers = slices.DeleteFunc(slices.Clone(t.Finalizers), func(f string) bool { return f == TeamFinalizer })
			}
		}
		first = false
		updated := t.DeepCopy()
		updated.Finalizers = finalizers
		_, err := c.butler.ButlerV1alpha1().Teams().Update(ctx, updated, metav1.UpdateOptions{})
		return err
	})
}
