package tenantcluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

func TestSleepStatus(t *testing.T) {
	c := &Controller{clock: clock.RealClock{}}
	c.sleepPlan = c.sleepSteps()
	tc := cluster()
	tc.Status.Phase = v1alpha1.TenantClusterReady
	tc.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}

	going := c.sleepStatus(tc, c.sleepPlan, steps.Outcome{First: stepWorkersAsleep, Results: map[string]steps.Result{
		stepWorkersAsleep: steps.Waiting("WorkersStopping", "2 workers left")}}, nil)
	if going.Phase != v1alpha1.TenantClusterReady {
		t.Errorf("phase while going to sleep: %s", going.Phase)
	}
	if h := meta.FindStatusCondition(going.Conditions, ConditionHibernated); h == nil || h.Status != metav1.ConditionFalse || h.Reason != "Hibernating" {
		t.Errorf("Hibernated while going to sleep: %+v", h)
	}

	done := c.sleepStatus(tc, c.sleepPlan, steps.Outcome{Done: len(c.sleepPlan)}, nil)
	if done.Phase != v1alpha1.TenantClusterHibernated || !meta.IsStatusConditionTrue(done.Conditions, ConditionHibernated) {
		t.Errorf("asleep: phase %s, conditions %+v", done.Phase, done.Conditions)
	}
	for _, cond := range []string{ConditionReady, ConditionControlPlaneReady, ConditionWorkersReady} {
		if c := meta.FindStatusCondition(done.Conditions, cond); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Hibernated" {
			t.Errorf("%s while hibernated: %+v", cond, c)
		}
	}

	// Waking: Hibernated until the control plane serves, then the ordinary phases; Awake once Ready.
	tc.Status = *done
	waking := &v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterUpdating, Conditions: done.DeepCopy().Conditions}
	wakeCondition(tc, waking)
	if h := meta.FindStatusCondition(waking.Conditions, ConditionHibernated); waking.Phase != v1alpha1.TenantClusterHibernated || h.Reason != "Waking" {
		t.Errorf("waking: phase %s, Hibernated %+v", waking.Phase, h)
	}
	steps.SetConditions(&waking.Conditions, metav1.Condition{Type: ConditionControlPlaneReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	waking.Phase = v1alpha1.TenantClusterUpdating
	wakeCondition(tc, waking)
	if waking.Phase != v1alpha1.TenantClusterUpdating {
		t.Errorf("control plane up, workers coming: phase %s", waking.Phase)
	}
	awake := &v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady}
	wakeCondition(tc, awake)
	if h := meta.FindStatusCondition(awake.Conditions, ConditionHibernated); h == nil || h.Reason != "Awake" {
		t.Errorf("awake: %+v", h)
	}
}

// TestApplySchedules: a sleep time is written into spec.hibernation.hibernated once; a user who
// wakes the cluster afterwards is not put back to sleep by the same time.
func TestApplySchedules(t *testing.T) {
	tc := cluster()
	tc.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	tc.Spec.Hibernation = &v1alpha1.HibernationSpec{Schedules: []v1alpha1.HibernationSchedule{
		{Start: "0 20 * * *", End: "0 7 * * *", Location: "Europe/Berlin"}}}
	client := butlerfake.NewClientset(tc)
	now := time.Date(2026, 11, 25, 19, 0, 30, 0, time.UTC) // 20:00:30 in Berlin
	c := &Controller{butler: client, clock: controllerkit.ClockFunc(func() time.Time { return now }), queue: controllerkit.NewQueue("test", nil)}
	ctx := context.Background()

	wrote, err := c.applySchedules(ctx, tc)
	if err != nil || !wrote {
		t.Fatalf("applySchedules at the sleep time: wrote %v, %v", wrote, err)
	}
	got, _ := client.ButlerV1alpha1().TenantClusters(tc.Namespace).Get(ctx, tc.Name, metav1.GetOptions{})
	if !got.Spec.Hibernation.Hibernated || got.Annotations[hibernation.ScheduleAppliedAnnotation] != "2026-11-25T19:00:00Z" {
		t.Fatalf("after the sleep time: hibernated %v, annotations %v", got.Spec.Hibernation.Hibernated, got.Annotations)
	}
	got.Spec.Hibernation.Hibernated = false // the user wakes it by hand
	now = now.Add(10 * time.Minute)
	if wrote, err := c.applySchedules(ctx, got); wrote || err != nil {
		t.Errorf("the same sleep time applied twice: wrote %v, %v", wrote, err)
	}
	now = time.Date(2026, 11, 26, 6, 0, 5, 0, time.UTC) // 07:00:05 in Berlin
	got.Spec.Hibernation.Hibernated = true
	if wrote, err := c.applySchedules(ctx, got); !wrote || err != nil {
		t.Fatalf("the wake time: wrote %v, %v", wrote, err)
	}
	got, _ = client.ButlerV1alpha1().TenantClusters(tc.Namespace).Get(ctx, tc.Name, metav1.GetOptions{})
	if got.Spec.Hibernation.Hibernated {
		t.Errorf("not woken at the wake time: %v", got.Annotations)
	}
}

// TestCreatedHibernatedIsProvisionedFirst: a cluster created with hibernated true runs the
// ordinary plan until its control plane has been Ready (its admin kubeconfig named), then sleeps.
func TestCreatedHibernatedIsProvisionedFirst(t *testing.T) {
	tc := cluster()
	tc.Spec.Hibernation = &v1alpha1.HibernationSpec{Hibernated: true}
	if servedOnce(tc) {
		t.Error("a new cluster counts as served")
	}
	tc.Status.ControlPlaneEndpoint = "127.0.0.1:30123"
	if servedOnce(tc) {
		t.Error("an endpoint alone (a remote provider's Service before kube-apiserver runs) counts as served")
	}
	tc.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: "prod-admin-kubeconfig"}
	if !servedOnce(tc) {
		t.Error("a cluster whose control plane was Ready does not count as served")
	}
}

// TestCreatedAsleepWithWakeOnRequestNeverStarts: with wake on request, a cluster created
// hibernated is readied without its control plane ever starting (no "control plane" step, whose
// Ready needs it served), says so in its conditions once asleep, and runs the ordinary sleep
// plan once its kubeconfig is named.
func TestCreatedAsleepWithWakeOnRequestNeverStarts(t *testing.T) {
	c := &Controller{clock: clock.RealClock{}}
	c.plan, c.sleepPlan, c.unstartedPlan = c.steps(), c.sleepSteps(), c.unstartedSteps()
	tc := cluster()
	if c.asleepPlan(tc) != nil {
		t.Error("an awake cluster runs a sleep plan")
	}
	tc.Spec.Hibernation = &v1alpha1.HibernationSpec{Hibernated: true, WakeOnRequest: true}
	plan := c.asleepPlan(tc)
	var names []string
	for _, st := range plan {
		names = append(names, st.Name)
		if st.Name == stepControlPlane || st.Name == stepControlPlaneAsleep {
			t.Errorf("a cluster created asleep runs %q", st.Name)
		}
	}
	if len(plan) == 0 || plan[len(plan)-1].Name != stepClusterPaused || !slices.Contains(names, stepControlPlaneUnstarted) {
		t.Errorf("plan of a cluster created asleep: %v", names)
	}
	done := c.sleepStatus(tc, plan, steps.Outcome{Done: len(plan)}, nil)
	if h := meta.FindStatusCondition(done.Conditions, ConditionHibernated); done.Phase != v1alpha1.TenantClusterHibernated || h == nil || h.Status != metav1.ConditionTrue {
		t.Errorf("created asleep: phase %s, Hibernated %+v", done.Phase, h)
	}
	if cp := meta.FindStatusCondition(done.Conditions, ConditionControlPlaneReady); cp == nil || !strings.Contains(cp.Message, "never started") {
		t.Errorf("ControlPlaneReady of a cluster never started: %+v", cp)
	}
	tc.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: "prod-admin-kubeconfig"}
	if len(c.asleepPlan(tc)) != len(c.sleepPlan) || c.asleepPlan(tc)[1].Name != stepWorkersAsleep {
		t.Error("a cluster readied asleep does not run the ordinary sleep plan")
	}
	tc.Spec.Hibernation.WakeOnRequest, tc.Status.KubeconfigSecretRef = false, nil
	if c.asleepPlan(tc) != nil {
		t.Error("without wake on request, a cluster created asleep is not provisioned first")
	}
}

// A cluster with no MachineDeployment (created asleep, never started) has no worker to stop: the
// step is done and makes none, so a cluster asleep since its creation has no workers' objects
// in the management cluster. One that has a MachineDeployment gets it at zero.
func TestWorkersAsleepMakeNoMachineDeployment(t *testing.T) {
	objs, client := fakeObjects(t)
	c := &Controller{objects: objs}
	s := stepState(v1alpha1.ProviderLocal)
	ctx := context.Background()
	gvr := external.MustGVR(external.MachineDeploymentGVK)
	r, err := c.ensureWorkersAsleep(ctx, s)
	wantResult(t, "no MachineDeployment", r, err, true, "NoWorkers")
	if _, err := client.Tracker().Get(gvr, s.namespace, component.WorkersName(s.in)); !apierrors.IsNotFound(err) {
		t.Errorf("the step made a MachineDeployment: %v", err)
	}
	if _, _, err := c.applyWorkers(ctx, s, nil); err != nil {
		t.Fatal(err)
	}
	r, err = c.ensureWorkersAsleep(ctx, s)
	wantResult(t, "a MachineDeployment (no status: none left)", r, err, true, "WorkersAtZero")
	got, err := client.Tracker().Get(gvr, s.namespace, component.WorkersName(s.in))
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.(*unstructured.Unstructured).Object, "spec", "replicas"); n != 0 {
		t.Errorf("replicas of the MachineDeployment asleep: %d", n)
	}
}

// A cluster created asleep was never awake: its one Event is Hibernated, none of going to sleep.
// A cluster that served says both.
func TestSleepEventsOfAClusterCreatedAsleep(t *testing.T) {
	for _, served := range []bool{false, true} {
		recorder := events.NewFakeRecorder(10)
		c := &Controller{events: recorder}
		tc := cluster()
		if served {
			tc.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: "prod-admin-kubeconfig"}
		}
		going := tc.Status.DeepCopy()
		steps.SetConditions(&going.Conditions, metav1.Condition{Type: ConditionHibernated, Status: metav1.ConditionFalse, Reason: "Hibernating", Message: "workers to zero"})
		c.recordSleep(tc, going, nil)
		tc.Status = *going
		done := going.DeepCopy()
		steps.SetConditions(&done.Conditions, metav1.Condition{Type: ConditionHibernated, Status: metav1.ConditionTrue, Reason: "Hibernated", Message: "asleep"})
		c.recordSleep(tc, done, nil)
		var got []string
		for len(recorder.Events) > 0 {
			e := <-recorder.Events
			got = append(got, strings.Fields(e)[1])
		}
		want := []string{"Hibernated"}
		if served {
			want = []string{"Hibernating", "Hibernated"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("served %v: Events %v, want %v", served, got, want)
		}
	}
}
