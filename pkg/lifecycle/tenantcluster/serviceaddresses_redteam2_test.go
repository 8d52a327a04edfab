package tenantcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	listers "github.com/butlerdotdev/butler-apiserver/pkg/generated/listers/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// controlFree says whether text has no control characters (a terminal runs some as commands).
func controlFree(text string) bool {
	return !strings.ContainsFunc(text, unicode.IsControl)
}

// Red team (s8): the kube-apiserver does not validate spec.loadBalancerIP at all (no
// ValidateService check in v1.36), so it keeps any text: an operator's on a tenant before 1.30
// (no policy), or one written before the policy held. netip.ParseAddr reads an IPv6 address with
// a zone ("fe80::1%zone"), and the zone is any text: printable took such a value for an address
// and passed it on whole, control characters and length, to the condition and the Event.
func TestRedteam2ZonedLoadBalancerIPReachesTheCondition(t *testing.T) {
	zoned := "fe80::1%\x1b]0;owned\x07\x1b[2J" + strings.Repeat("x", 100000)
	if got := pinnedAddresses(pinned("team", "z", zoned)); !controlFree(got) || len(got) > 200 {
		t.Errorf("pinnedAddresses of a zoned loadBalancerIP: %d bytes, control characters %v: %.120q", len(got), !controlFree(got), got)
	}
	f := newAuditFixture(t, pinned("team", "z", zoned), pinned("team", "mapped", "::ffff:10.96.0.1%\neth0"))
	cond, made, _ := f.reconcile(t)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("the condition: %+v", cond)
	}
	if !controlFree(cond.Message) || len(cond.Message) > 4096 {
		t.Errorf("the condition's message: %d bytes, control characters %v", len(cond.Message), !controlFree(cond.Message))
	}
	for _, e := range made {
		if !controlFree(e) {
			t.Errorf("an Event with control characters: %.200q", e)
		}
	}
	if !strings.Contains(cond.Message, `team/z (loadBalancerIP "fe80::1%\x1b]0;owned`) {
		t.Errorf("the zoned address is not quoted: %.300s", cond.Message)
	}
}

// pagedServices makes the tenant's fake answer a list of Services a page at a time (the fake
// clientset ignores limit and continue), as the kube-apiserver does; fail, when set, answers
// the page it names with an error. It returns how many pages were asked for, and their limits.
func pagedServices(tenant *kubefake.Clientset, all []corev1.Service, fail map[string]error) *[]int64 {
	var limits []int64
	tenant.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		limits = append(limits, opts.Limit)
		if err := fail[opts.Continue]; err != nil {
			return true, nil, err
		}
		start := 0
		if opts.Continue != "" {
			if _, err := fmt.Sscanf(opts.Continue, "page-%d", &start); err != nil {
				return true, nil, err
			}
		}
		end := min(len(all), start+int(opts.Limit))
		list := &corev1.ServiceList{Items: all[start:end]}
		if end < len(all) {
			list.Continue = fmt.Sprintf("page-%d", end)
		}
		return true, list, nil
	})
	return &limits
}

// Red team (s8): a flood of Services (an operator makes as many as the tenant's quota lets him,
// none by default) hides the pinned ones on the last page, or in a namespace made after the
// access step's list. Every page is read, each asked for with the step's limit, and the
// condition stays bounded however many are found.
func TestRedteam2FloodOfServicesIsReadToTheLastPage(t *testing.T) {
	var all []corev1.Service
	for i := range 1234 {
		all = append(all, *pinned("team", fmt.Sprintf("s%04d", i), ""))
	}
	for i := range 30 {
		all = append(all, *pinned("team", fmt.Sprintf("z%04d", i), "", "203.0.113.9"))
	}
	all = append(all, *pinned("later", "last", "192.0.2.1"))
	tenant := kubefake.NewClientset()
	limits := pagedServices(tenant, all, nil)
	namespaces := []access.Namespace{{Name: "team"}, {Name: "ops", Protected: true}}
	exposed, err := exposedServices(context.Background(), tenant.CoreV1(), namespaces)
	if err != nil {
		t.Fatal(err)
	}
	pages := (len(all) + servicesPage - 1) / servicesPage
	if len(*limits) != pages || slices.ContainsFunc(*limits, func(l int64) bool { return l != servicesPage }) {
		t.Errorf("pages asked: %v; want %d of %d", *limits, pages, servicesPage)
	}
	if len(exposed) != 31 || exposed[0] != "later/last (loadBalancerIP 192.0.2.1)" {
		t.Errorf("found %d: %.200q", len(exposed), exposed)
	}
	if cond := exposureCondition(exposed); !strings.Contains(cond.Message, "31 in all") || !strings.Contains(cond.Message, "and 21 more") || len(cond.Message) > 2048 {
		t.Errorf("the condition of 31: %d bytes: %s", len(cond.Message), cond.Message)
	}
}

// Red team (s8): a look that fails half-way (the continue token expired under a flood, a list
// that times out) holds nothing back: the step is done, the condition stays as the last whole
// look left it (no half list read as "no Service"), and the look is tried again.
func TestRedteam2FailedLookHoldsNothingBack(t *testing.T) {
	f := newAuditFixture(t)
	all := []corev1.Service{*pinned("team", "a", "", "203.0.113.9"), *pinned("team", "b", "", "203.0.113.10"), *pinned("team", "c", "")}
	expired := errors.New(`the provided continue parameter is too old (410)`)
	fail := map[string]error{}
	pagedServices(f.tenant, all, fail)
	first, _, _ := f.reconcile(t) // reconcile fails the test when a step is not done
	if first == nil || first.Status != metav1.ConditionTrue {
		t.Fatalf("the first look: %+v", first)
	}
	fail["page-500"] = expired // not asked: three Services are one page
	fail[""] = expired
	f.clock.SetTime(f.clock.Now().Add(accessResync))
	again, made, lists := f.reconcile(t)
	if lists != 1 || again == nil || again.Status != metav1.ConditionTrue || again.Message != first.Message || len(made) != 0 {
		t.Errorf("a failed look: %d lists, Events %q, condition %+v; want the last one kept", lists, made, again)
	}
	delete(fail, "")
	f.clock.SetTime(f.clock.Now().Add(accessRetry))
	if _, _, lists := f.reconcile(t); lists != 1 {
		t.Errorf("after accessRetry: %d lists; want the look tried again", lists)
	}
}

// Red team (s8): a namespace that turns protected is left out from the next look on, and one
// that turns unprotected (a tenant admin's Service now where operators write) is reported at
// once: the label is part of the access step's digest, so the change applies the policy again
// and the addresses step looks without waiting for accessResync.
func TestRedteam2NamespaceTurningUnprotectedIsLookedAtOnce(t *testing.T) {
	f := newAuditFixture(t, pinned("ops", "admins-own", "", "203.0.113.10"))
	f.c.teams = listers.NewTeamLister(indexer(&v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: f.tc.Namespace}, Spec: v1alpha1.TeamSpec{
		Access: v1alpha1.TeamAccess{Users: []v1alpha1.TeamMember{{Name: "otto", Role: v1alpha1.TeamRoleOperator}}}}}))
	if cond, _, _ := f.reconcile(t); cond == nil || cond.Status != metav1.ConditionFalse {
		t.Fatalf("a protected namespace's Service is reported: %+v", cond)
	}
	ctx := context.Background()
	ns, err := f.tenant.CoreV1().Namespaces().Get(ctx, "ops", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels = nil
	if _, err := f.tenant.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clock.SetTime(f.clock.Now().Add(time.Minute))
	cond, made, lists := f.reconcile(t)
	if lists != 1 || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "ops/admins-own") || len(made) != 1 {
		t.Errorf("a minute after ops was unprotected: %d lists, Events %q, condition %+v", lists, made, cond)
	}
}
