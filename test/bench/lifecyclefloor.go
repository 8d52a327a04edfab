package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/capi"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/workers"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/tenantcluster"
)

// floorLabel marks the floor's objects, in place of the TenantCluster labels: with those,
// butler's controllers would take the floor's namespaces for tenant namespaces and watch their
// Secrets, work that is butler's, not the floor's. The value is as long as the label it stands for.
const floorLabel = "bench.butlerlabs.dev/floor-of"

// floor is what the same writes cost without butler: the objects the controllers write for n
// clusters (the tenant namespace, butler's Secrets RoleBinding in it, the Cluster, the
// StewardControlPlane, the AWSCluster and machine template, the BootstrapConfigTemplate and the
// MachineDeployment; in the tenant, what the access and service-address steps send it), built by
// the controllers' own builders and server-side applied straight to kube-apiserver in the
// controller's order (writeFloor) by as many clients as create the TenantClusters, on the same
// plane (Cluster
// API's manager, butler's controllers and the Steward stand-in all running, reacting as they do
// to butler's objects). Then the same objects deleted, waited for until gone and their
// namespaces removed.
type floor struct {
	written, gone, namespacesGone time.Duration
	applies                       int // per cluster
}

// runFloor measures the floor for n clusters like tcs of namespace ns (each the TenantCluster
// butler stores, defaults applied: a dry-run create), from clients clients.
func runFloor(ctx context.Context, butlerc clientset.Interface, kube kubernetes.Interface, dyn dynamic.Interface, ns string, n, clients int,
	tmpl func(i int64) *v1alpha1.TenantCluster) (floor, error) {
	var f floor
	inputs, err := floorInputs(ctx, butlerc, ns, n, tmpl)
	if err != nil {
		return f, err
	}
	start := time.Now()
	sent, err := writeFloor(ctx, kube, dyn, tenantFromSecret(kube), inputs, clients)
	if err != nil {
		return f, fmt.Errorf("the floor's writes: %w", err)
	}
	f.written = time.Since(start)
	f.applies = sent / n

	dstart := time.Now()
	if err := inParallel(n, clients, func(i int) error { return deleteFloorCluster(ctx, dyn, inputs[i]) }); err != nil {
		return f, fmt.Errorf("the floor's deletes: %w", err)
	}
	// Each namespace is deleted once its cluster's objects are gone, as the controller does: deleted
	// while Cluster API's finalizers still run, kube-controller-manager's namespace controller
	// lists and empties every namespaced kind again and again until they are done (a first try
	// at N=200 took 194 s, against 109 s for butler).
	ours := metav1.ListOptions{LabelSelector: floorLabel + "=" + ns}
	namespaceDeleted := map[string]bool{}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		if f.gone == 0 {
			left := map[string]bool{}
			for _, gvk := range floorKinds {
				list, err := dyn.Resource(external.MustGVR(gvk)).List(ctx, ours)
				if err != nil {
					return false, nil
				}
				for _, o := range list.Items {
					left[o.GetNamespace()] = true
				}
			}
			var free []string
			for _, in := range inputs {
				if !left[in.Namespace] && !namespaceDeleted[in.Namespace] {
					free = append(free, in.Namespace)
				}
			}
			if err := inParallel(len(free), clients, func(i int) error {
				err := kube.CoreV1().Namespaces().Delete(ctx, free[i], metav1.DeleteOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			}); err != nil {
				return false, err
			}
			for _, name := range free {
				namespaceDeleted[name] = true
			}
			if len(left) > 0 {
				return false, nil
			}
			f.gone = time.Since(dstart)
		}
		list, err := kube.CoreV1().Namespaces().List(ctx, ours)
		if err != nil || len(list.Items) > 0 {
			return false, nil
		}
		f.namespacesGone = time.Since(dstart)
		return true, nil
	}); err != nil {
		return f, fmt.Errorf("the floor's objects were not all gone: %w", err)
	}
	return f, nil
}

// floorInputs are the controllers' inputs for n clusters like tcs of namespace ns (each the
// TenantCluster butler would store, defaults applied: a dry-run create), built before a clock starts.
func floorInputs(ctx context.Context, butlerc clientset.Interface, ns string, n int, tmpl func(i int64) *v1alpha1.TenantCluster) ([]component.Input, error) {
	pc, err := butlerc.ButlerV1alpha1().ProviderConfigs(ns).Get(ctx, "aws", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cfg, err := butlerc.ButlerV1alpha1().ButlerConfigs().Get(ctx, butler.ButlerConfigName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cfg, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	inputs := make([]component.Input, n)
	for i := range n {
		tc := tmpl(int64(i + 1))
		tc.Name = fmt.Sprintf("floor-%04d", i+1)
		stored, err := butlerc.ButlerV1alpha1().TenantClusters(ns).Create(ctx, tc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return nil, fmt.Errorf("dry-run create of the floor's cluster: %w", err)
		}
		if stored.UID == "" {
			stored.UID = "f100r000-0000-0000-0000-000000000000"
		}
		inputs[i] = component.Input{Cluster: stored, Namespace: tenantcluster.TenantNamespace(stored), Provider: pc, Config: cfg}
	}

	return inputs, nil
}

// floorSubject stands for butler-apiserver's user name in the Secrets RoleBinding it writes.
const floorSubject = "system:serviceaccount:butler-system:butler-apiserver"

// inParallel calls do for 0..n-1 from clients goroutines, and returns the first error (after
// which each goroutine stops).
func inParallel(n, clients int, do func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := do(int(i - 1)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// floorKinds are the kinds of the floor's objects, waited for until gone.
var floorKinds = []schema.GroupVersionKind{external.MachineDeploymentGVK, external.BootstrapConfigTemplateGVK,
	external.ClusterGVK, external.StewardControlPlaneGVK, external.AWSClusterGVK, external.AWSMachineTemplateGVK}

// floorLabels are the TenantCluster labels with the floor's in place of the cluster's own.
func floorLabels(in component.Input) map[string]string {
	return map[string]string{
		clusterv1.ClusterNameLabel: in.Cluster.Name,
		floorLabel:                 in.Cluster.Namespace,
		external.ManagedByLabel:    external.ManagedBy,
	}
}

// floorJob is one cluster's part of the floor: its control plane's objects, or (workers) the
// objects butler writes once that control plane is Ready.
type floorJob struct {
	i       int
	workers bool
}

// writeFloor writes the floor's objects for inputs from clients goroutines in the controller's
// order: each cluster's namespace, Secrets RoleBinding, Cluster, StewardControlPlane, AWSCluster
// and machine template, then, once a watch sees its TenantControlPlane Ready (the controller's plan
// starts the workers step after the control plane step), what the access and service-address
// steps send its tenant (writeFloorTenant, through tenantOf) and its BootstrapConfigTemplate and
// MachineDeployment. Written all at once instead, Cluster API's work on every
// MachineDeployment fell inside the floor's window and outside butler's. It says how many
// requests it sent.
func writeFloor(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, tenantOf floorTenantOf, inputs []component.Input, clients int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	jobs := make(chan floorJob, 2*len(inputs))
	for i := range inputs {
		jobs <- floorJob{i: i}
	}
	stop, err := onControlPlanesReady(ctx, dyn, inputs, func(i int) { jobs <- floorJob{i: i, workers: true} })
	if err != nil {
		return 0, err
	}
	defer stop()

	var sent, done atomic.Int64
	finished := make(chan struct{})
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				var j floorJob
				select {
				case <-ctx.Done():
					errs <- fmt.Errorf("%d of %d clusters' workers written: %w", done.Load(), len(inputs), ctx.Err())
					return
				case <-finished:
					return
				case j = <-jobs:
				}
				var n int
				var err error
				if j.workers {
					n, err = writeFloorTenant(ctx, tenantOf, inputs[j.i])
					if err == nil {
						var m int
						m, err = writeFloorWorkers(ctx, dyn, inputs[j.i])
						n += m
					}
				} else {
					n, err = writeFloorControlPlane(ctx, kube, dyn, inputs[j.i])
				}
				sent.Add(int64(n))
				if err != nil {
					errs <- err
					cancel()
					return
				}
				if j.workers && done.Add(1) == int64(len(inputs)) {
					close(finished)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return int(sent.Load()), <-errs
}

// onControlPlanesReady calls ready(i) once for each of inputs whose TenantControlPlane a watch
// sees Ready (the status the Steward stand-in writes after the admin kubeconfig Secret).
func onControlPlanesReady(ctx context.Context, dyn dynamic.Interface, inputs []component.Input, ready func(i int)) (stop func(), err error) {
	index := map[string]int{}
	for i, in := range inputs {
		index[in.Namespace+"/"+in.Cluster.Name] = i
	}
	var mu sync.Mutex
	told := map[int]bool{}
	seen := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		i, ours := index[u.GetNamespace()+"/"+u.GetName()]
		status, _, _ := unstructured.NestedString(u.Object, "status", "kubernetesResources", "version", "status")
		if !ours || status != "Ready" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !told[i] {
			told[i] = true
			ready(i)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	if _, err := factory.ForResource(tenantControlPlanes).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	return func() { cancel(); factory.Shutdown() }, nil
}

// writeFloorControlPlane writes one cluster's objects up to its control plane, in the controller's
// order, and says how many requests it sent.
func writeFloorControlPlane(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, in component.Input) (int, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.Namespace, Labels: floorLabels(in)}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	// Of the same size as butler's, to another role: an admission policy lets butler's role be
	// bound only in the namespaces butler made.
	rb := rbacv1ac.RoleBinding("bench-floor-secretsxxxxxxx", in.Namespace).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("view")).
		WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.UserKind).WithName(floorSubject))
	if _, err := kube.RbacV1().RoleBindings(in.Namespace).Apply(ctx, rb, external.Workers.ApplyOptions()); err != nil {
		return 1, err
	}
	cluster, err := capi.Cluster(in)
	if err != nil {
		return 2, err
	}
	cp, err := capi.ControlPlane(in)
	if err != nil {
		return 2, err
	}
	infraCluster, template, err := infra.ForProvider(in)
	if err != nil {
		return 2, err
	}
	applied, err := applyFloor(ctx, dyn, in, cluster)
	if err != nil {
		return 3, err
	}
	capi.SetClusterOwner(cp, applied)
	sent := 3
	for _, obj := range []*unstructured.Unstructured{cp, infraCluster, template} {
		sent++
		if _, err := applyFloor(ctx, dyn, in, obj); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// writeFloorWorkers writes one cluster's BootstrapConfigTemplate and MachineDeployment.
func writeFloorWorkers(ctx context.Context, dyn dynamic.Interface, in component.Input) (int, error) {
	bootstrap, err := workers.BootstrapTemplate(in)
	if err != nil {
		return 0, err
	}
	md, err := workers.MachineDeployment(in)
	if err != nil {
		return 0, err
	}
	if _, err := applyFloor(ctx, dyn, in, bootstrap); err != nil {
		return 1, err
	}
	_, err = applyFloor(ctx, dyn, in, md)
	return 2, err
}

// applyFloor server-side applies obj with the floor's labels, as the controllers' field manager (external.Workers).
func applyFloor(ctx context.Context, dyn dynamic.Interface, in component.Input, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj.SetLabels(floorLabels(in))
	return external.Workers.Apply(ctx, dyn.Resource(external.MustGVR(obj.GroupVersionKind())).Namespace(in.Namespace), obj)
}

// floorObject names one of a cluster's floor objects.
type floorObject struct {
	gvk  schema.GroupVersionKind
	name string
}

// floorObjects are one cluster's floor objects in the order the controller's cleanup deletes them.
func floorObjects(in component.Input) []floorObject {
	return []floorObject{{external.MachineDeploymentGVK, component.WorkersName(in)}, {external.BootstrapConfigTemplateGVK, component.WorkersName(in)},
		{external.ClusterGVK, in.Cluster.Name}, {external.StewardControlPlaneGVK, in.Cluster.Name},
		{external.AWSClusterGVK, in.Cluster.Name}, {external.AWSMachineTemplateGVK, component.WorkersName(in)}}
}

// deleteFloorCluster deletes one cluster's objects as the controller's cleanup does (in the
// background, the MachineDeployment first), without waiting between them: Cluster API's
// finalizers order the rest. Its namespace goes once they are gone (runFloor, P4's floor).
func deleteFloorCluster(ctx context.Context, dyn dynamic.Interface, in component.Input) error {
	policy := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy}
	for _, o := range floorObjects(in) {
		err := dyn.Resource(external.MustGVR(o.gvk)).Namespace(in.Namespace).Delete(ctx, o.name, opts)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
