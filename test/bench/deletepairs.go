package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// P4 as bench-report runs it: in each P9 pair, on the same two planes, once a side has written
// its n clusters' objects it deletes them. butler deletes its TenantClusters (the controller
// deletes each cluster's objects and then its namespace); the floor deletes the same objects
// straight, in the controller's order, and each namespace once a watch has seen its objects
// gone, as the controller does. Both clocks stop when a watch on the side's namespaces has seen
// all n deleted (kube-controller-manager's namespace controller has emptied them).

// p4 is the figure's definition; the runs are added pair by pair with P9's.
func p4(n int) figure {
	return figure{
		ID:    "P4",
		Title: fmt.Sprintf("The TenantCluster controller deleting %d clusters' objects, against the same objects deleted without it.", n),
		What: fmt.Sprintf("The %d TenantClusters of the P9 pair just written (their objects all made, Cluster API and the Steward "+
			"stand-in running) deleted by one DeleteCollection; butler's controller deletes each cluster's Cluster API, Steward and "+
			"AWS objects and its TenantAddon, and its namespace once they are gone. Clock: from the DeleteCollection until a watch "+
			"on the tenant namespaces has seen all %d deleted", n, n),
		Baseline: fmt.Sprintf("the floor's objects of the same pair deleted straight by %d clients in the controller's order "+
			"(MachineDeployment first, background propagation, Cluster API's finalizers ordering the rest), and each namespace "+
			"deleted once a watch on those objects has seen its last go. Clock: from the first delete until a watch on the floor's "+
			"namespaces has seen all %d deleted", lifecycleClients, n),
		Subject: sideButler, Base: sideFloor, Unit: "s", Better: "lower",
		Command: fmt.Sprintf("make bench-report ONLY=P9 BENCH_P9_N=%d (P4 is measured in P9's pairs)", n),
		Notes: []string{"Measured in the same pairs, on the same planes and in the same order as P9, right after that side's write: " +
			"the objects deleted are the ones P9's table counts. butler's TenantClusters themselves go after their namespaces " +
			"(their finalizer waits for them); that last step is not timed."},
	}
}

// deleteSide deletes what side wrote on its plane for n clusters (in: the floor's inputs) and
// returns the seconds until a watch saw the side's n namespaces deleted.
func deleteSide(ctx context.Context, butler clientset.Interface, kube kubernetes.Interface, dyn dynamic.Interface,
	side, ns, selector string, in []component.Input, n int) (float64, error) {
	gone, stop, err := seeNamespacesGone(ctx, kube, selector, n)
	if err != nil {
		return 0, err
	}
	defer stop()
	var start time.Time
	if side == sideFloor {
		emptied, stopFloor, err := watchFloorNamespaces(ctx, kube, dyn, selector)
		if err != nil {
			return 0, err
		}
		defer stopFloor()
		start = time.Now()
		if err := inParallel(len(in), lifecycleClients, func(i int) error { return deleteFloorCluster(ctx, dyn, in[i]) }); err != nil {
			return 0, fmt.Errorf("the floor's deletes: %w", err)
		}
		for _, i := range in { // a namespace whose objects went before its watch saw a delete
			emptied(i.Namespace)
		}
	} else {
		start = time.Now()
		if err := butler.ButlerV1alpha1().TenantClusters(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return 0, err
		}
	}
	select {
	case at := <-gone:
		return at.Sub(start).Seconds(), nil
	case <-time.After(20 * time.Minute):
		return 0, fmt.Errorf("not all %d namespaces were seen deleted in 20 minutes", n)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// seeNamespacesGone sends on the channel when a watch of the namespaces matching selector has
// seen n of them deleted, the time it saw the last.
func seeNamespacesGone(ctx context.Context, kube kubernetes.Interface, selector string, n int) (<-chan time.Time, func(), error) {
	gone := make(chan time.Time, 1)
	var mu sync.Mutex
	seen := map[string]bool{}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	informer := factory.Core().V1().Namespaces().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		now := time.Now()
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		namespace, ok := obj.(*corev1.Namespace)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[namespace.Name] = true
		if len(seen) == n {
			gone <- now
		}
	}}); err != nil {
		cancel()
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		cancel()
		return nil, nil, fmt.Errorf("the namespaces' watch did not sync")
	}
	return gone, func() { cancel(); factory.Shutdown() }, nil
}

// watchFloorNamespaces watches the floor's kinds and deletes each namespace once the watches hold
// none of its objects, as the controller's cleanup does; emptied checks one namespace now. The
// watches are synced before it returns, so that no list is inside the floor's clock.
func watchFloorNamespaces(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, selector string) (emptied func(string), stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	var indexers []cache.Indexer
	var synced []cache.InformerSynced
	var mu sync.Mutex
	deleted := map[string]bool{}
	emptied = func(namespace string) {
		for _, ix := range indexers {
			if objs, _ := ix.ByIndex(cache.NamespaceIndex, namespace); len(objs) > 0 {
				return
			}
		}
		mu.Lock()
		first := !deleted[namespace]
		deleted[namespace] = true
		mu.Unlock()
		if first {
			if err := kube.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				logf("P4 floor: deleting namespace %s: %v", namespace, err)
			}
		}
	}
	for _, gvk := range floorKinds {
		informer := factory.ForResource(external.MustGVR(gvk)).Informer()
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(metav1.Object); ok {
				emptied(o.GetNamespace())
			}
		}}); err != nil {
			cancel()
			return nil, nil, err
		}
		indexers = append(indexers, informer.GetIndexer())
		synced = append(synced, informer.HasSynced)
	}
	factory.Start(ctx.Done())
	stop = func() { cancel(); factory.Shutdown() }
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		stop()
		return nil, nil, fmt.Errorf("the floor's watches did not sync")
	}
	return emptied, stop, nil
}
