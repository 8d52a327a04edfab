package tenantcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// auditFixture is a controller with one cluster's tenant, reconciled through the real access
// and service addresses steps, its status kept and its Events recorded.
type auditFixture struct {
	c        *Controller
	tc       *v1alpha1.TenantCluster
	tenant   *kubefake.Clientset
	clock    *clocktesting.FakePassiveClock
	recorder *events.FakeRecorder
	plan     steps.Plan[*state]
}

func newAuditFixture(t *testing.T, objs ...runtime.Object) *auditFixture {
	t.Helper()
	rules := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	tenantObjs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops", Labels: map[string]string{external.ProtectedNamespaceLabel: "true"}}},
	}
	for _, name := range []string{"cluster-admin", "view", "edit", access.OperatorRole} {
		tenantObjs = append(tenantObjs, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})
	}
	tenantObjs = append(tenantObjs, objs...)
	tenant := kubefake.NewClientset(tenantObjs...)
	mgmt := kubefake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: "tenant-ns"},
		Data: map[string][]byte{"admin.conf": []byte("kubeconfig")}})
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC))
	recorder := events.NewFakeRecorder(10)
	c := &Controller{kube: mgmt, teams: listers.NewTeamLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		access:          accessApplied{digest: map[string]string{}, granted: map[string]grant{}, clients: map[string]tenantClient{}},
		newTenantClient: func([]byte) (kubernetes.Interface, error) { return tenant, nil }, clock: clock, events: recorder}
	var plan steps.Plan[*state]
	for _, step := range c.steps() {
		if step.Name == stepAccess {
			step.After = nil // the control plane is taken as Ready
		}
		if step.Name == stepAccess || step.Name == stepAddresses {
			plan = append(plan, step)
		}
	}
	tc := cluster()
	tc.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: "prod-admin-kubeconfig"}
	return &auditFixture{c: c, tc: tc, tenant: tenant, clock: clock, recorder: recorder, plan: plan}
}

// reconcile runs the two steps as a reconcile does (a new state each time), keeps the status
// and returns the condition, the Events made and how many times the tenant's Services were listed.
func (f *auditFixture) reconcile(t *testing.T) (*metav1.Condition, []string, int) {
	t.Helper()
	before := len(f.tenant.Actions())
	s := f.c.newState(f.tc)
	s.namespace, s.kubeconfigSecret = "tenant-ns", "prod-admin-kubeconfig"
	out, err := f.plan.Ensure(context.Background(), s, f.tc.Generation)
	if err != nil || out.First != "" {
		t.Fatalf("the steps: %+v, %v", out.Results, err)
	}
	status := f.c.status(f.tc, s, out, nil)
	f.c.recordExposure(f.tc, status)
	f.tc.Status = *status
	var made []string
	for len(f.recorder.Events) > 0 {
		made = append(made, <-f.recorder.Events)
	}
	lists := 0
	for _, a := range f.tenant.Actions()[before:] {
		if a.GetVerb() == "list" && a.GetResource().Resource == "services" {
			lists++
		}
	}
	return meta.FindStatusCondition(f.tc.Status.Conditions, ConditionServicesExposeExternalIPs), made, lists
}

// pinned is a Service ns/name with those externalIPs and that loadBalancerIP.
func pinned(ns, name, lbIP string, externalIPs ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{ExternalIPs: externalIPs, LoadBalancerIP: lbIP, Ports: []corev1.ServicePort{{Port: 443}}}}
}

// Services that took external addresses before butler-api-endpoint held (a tenant admin's, or
// an operator's on an older tenant, or in a restored snapshot) keep them: the policy judges
// writes. The service addresses step reports those in namespaces operators write (not in a
// protected namespace, not kube-system) in ConditionServicesExposeExternalIPs and a Warning
// Event; looks again at once after an in-place restore and every accessResync otherwise (one
// list per look, none between); and the report goes once they are removed.
func TestServicesWithExternalIPsFromBeforeThePolicyAreReported(t *testing.T) {
	f := newAuditFixture(t,
		pinned("team", "web", "", "203.0.113.9"),
		pinned("default", "lb", "10.96.0.1"),
		pinned("ops", "admins-own", "", "203.0.113.10"),       // protected: a tenant admin's
		pinned("kube-system", "platform", "", "203.0.113.11"), // the platform's
		pinned("team", "plain", ""))
	ctx := context.Background()
	cond, made, lists := f.reconcile(t)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != ReasonExternalIPsSet || lists != 1 {
		t.Fatalf("first look: %+v after %d lists; want True %s after one", cond, lists, ReasonExternalIPsSet)
	}
	for _, want := range []string{"2 in all", "default/lb (loadBalancerIP 10.96.0.1)", "team/web (externalIPs 203.0.113.9)"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("the condition does not say %q: %s", want, cond.Message)
		}
	}
	for _, not := range []string{"admins-own", "platform", "plain"} {
		if strings.Contains(cond.Message, not) {
			t.Errorf("the condition names %s: %s", not, cond.Message)
		}
	}
	if len(made) != 1 || !strings.HasPrefix(made[0], "Warning "+ReasonExternalIPsSet+" ") || !strings.Contains(made[0], "team/web") {
		t.Errorf("Events of the first look: %q; want one Warning %s naming team/web", made, ReasonExternalIPsSet)
	}

	// Looked again before accessResync: nothing listed, nothing told, the condition as it was.
	f.clock.SetTime(f.clock.Now().Add(time.Minute))
	if again, made, lists := f.reconcile(t); lists != 0 || len(made) != 0 || again.Message != cond.Message {
		t.Errorf("a reconcile a minute later: %d lists, Events %q, condition %+v", lists, made, again)
	}

	// A tenant admin's Service, then an in-place restore (of a snapshot with it): looked at once.
	if _, err := f.tenant.CoreV1().Services("team").Create(ctx, pinned("team", "restored", "", "198.51.100.7"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.tc.Status.Restore = &v1alpha1.RestoreStatus{SnapshotUID: "snap-1", Phase: v1alpha1.RestoreSucceeded, CompletionTime: &metav1.Time{Time: f.clock.Now()}}
	cond, made, lists = f.reconcile(t)
	if lists != 1 || !strings.Contains(cond.Message, "team/restored (externalIPs 198.51.100.7)") || len(made) != 1 || !strings.HasPrefix(made[0], "Warning ") {
		t.Errorf("after a restore: %d lists, Events %q, condition %+v", lists, made, cond)
	}

	// Removed: the next periodic look says so, once.
	for _, svc := range []string{"team/web", "default/lb", "team/restored"} {
		ns, name, _ := strings.Cut(svc, "/")
		if err := f.tenant.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.SetTime(f.clock.Now().Add(accessResync))
	cond, made, lists = f.reconcile(t)
	if lists != 1 || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonNoExternalIPsSet {
		t.Errorf("after they were removed: %d lists, condition %+v; want False %s", lists, cond, ReasonNoExternalIPsSet)
	}
	if len(made) != 1 || !strings.HasPrefix(made[0], "Normal "+ReasonNoExternalIPsSet+" ") {
		t.Errorf("Events once they were removed: %q; want one Normal %s", made, ReasonNoExternalIPsSet)
	}
	f.clock.SetTime(f.clock.Now().Add(accessResync))
	if _, made, _ := f.reconcile(t); len(made) != 0 {
		t.Errorf("a look that finds none again told %q", made)
	}
}

// A tenant with many such Services gets a bounded message; an address's text is the tenant's,
// and reaches the message only as an address or quoted.
func TestExposureConditionIsBounded(t *testing.T) {
	var exposed []string
	for i := range 25 {
		exposed = append(exposed, fmt.Sprintf("team/s%02d (externalIPs 203.0.113.%d)", i, i))
	}
	cond := exposureCondition(exposed)
	if !strings.Contains(cond.Message, "25 in all") || !strings.Contains(cond.Message, "team/s09") || strings.Contains(cond.Message, "team/s10") ||
		!strings.Contains(cond.Message, "and 15 more") {
		t.Errorf("25 Services: %s", cond.Message)
	}
	many := pinned("team", "s", "\x1b[31m"+strings.Repeat("x", 100), "::FFFF:10.96.0.1", "1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4", "1.1.1.5")
	got := pinnedAddresses(many)
	if strings.ContainsRune(got, '\x1b') || !strings.Contains(got, `"\x1b[31m`) || !strings.Contains(got, "10.96.0.1") ||
		!strings.Contains(got, "2 more") || len(got) > 200 {
		t.Errorf("pinnedAddresses: %q", got)
	}
	if got := pinnedAddresses(pinned("team", "plain", "")); got != "" {
		t.Error("a Service without pinned addresses is reported")
	}
}
