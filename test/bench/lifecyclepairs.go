package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// P9 as bench-report runs it: one pair a process, butler's controllers and the floor each on a
// fresh plane, in the order of the pair, both clocks stopped when a watch has seen every
// cluster's MachineDeployment (the last object both write), and what each side made counted.
// Then, on the same plane, that side deletes them: P4 (deletepairs.go).

const (
	sideButler = "butler"
	sideFloor  = "the floor"
)

// p9 is the figure's definition; the runs are added pair by pair.
func p9(n int) figure {
	return figure{
		ID:    "P9",
		Title: fmt.Sprintf("The TenantCluster controller writing %d clusters' objects, against the same objects written without it.", n),
		What: fmt.Sprintf("%d TenantClusters (AWS provider, two workers, a CNI addon) created by %d clients; butler's workers write each one's "+
			"namespace, Secrets RoleBinding, Cluster, StewardControlPlane, AWSCluster and machine template, then, once the bench's Steward "+
			"stand-in has made its TenantControlPlane Ready, the access step's writes in its tenant (no Team: the API endpoint's policy, "+
			"butler's ClusterRoles and the bindings, 10 writes through a client of its own) and the service-address step's list, then its "+
			"BootstrapConfigTemplate and MachineDeployment (and a TenantAddon in butler's own API, which the floor has no counterpart "+
			"of). Every cluster's tenant is the bench's one real local tenant. Clock: from the first create until a watch on "+
			"MachineDeployments has seen all %d", n, lifecycleClients, n),
		Baseline: fmt.Sprintf("the same objects, built by the workers' own builders from the TenantClusters butler would store (dry-run "+
			"creates, before the clock), server-side applied straight to kube-apiserver by %d clients in the workers' order: once a "+
			"watch saw a cluster's TenantControlPlane Ready, the same requests to its tenant (built by the access step's builders, "+
			"through a client of its own from the admin kubeconfig Secret), then its BootstrapConfigTemplate and MachineDeployment. Cluster API, "+
			"butler's workers and the Steward stand-in run as for butler. Clock: from the first write until the same watch has seen "+
			"all %d MachineDeployments", lifecycleClients, n),
		Subject: sideButler, Base: sideFloor, Unit: "s", Better: "lower",
		Command: fmt.Sprintf("make bench-report ONLY=P9 BENCH_P9_N=%d", n),
		Notes: []string{"Each side runs on a plane of its own, started for it and stopped after it (cmd/butler-localplane; one real local " +
			"tenant made before the clock, whose kubeconfig the Steward stand-in hands to every TenantControlPlane). Deletion is " +
			"P4, measured on the same planes right after."},
	}
}

// runLifecyclePair runs pair number k of P9 and P4 with n clusters and adds it to the figures' files.
func runLifecyclePair(ctx context.Context, o options, root string, k, n int) error {
	write, err := loadFigure(figurePath(o.figures, "P9"), k == 0, p9(n))
	if err != nil {
		return err
	}
	del, err := loadFigure(figurePath(o.figures, "P4"), k == 0, p4(n))
	if err != nil {
		return err
	}
	order := []string{sideFloor, sideButler}
	if pairOrder(k) {
		order = []string{sideButler, sideFloor}
	}
	run := pair{SubjectFirst: pairOrder(k), Started: time.Now(), Load: loadavg()}
	delRun := run
	for _, side := range order {
		r, err := lifecycleOnFreshPlane(ctx, o, root, side, n)
		if err != nil {
			return fmt.Errorf("P9 pair %d, %s: %w", k+1, side, err)
		}
		logf("P9 pair %d: %s wrote %d clusters in %.2f s and deleted them in %.2f s; made %v", k+1, side, n, r.write, r.delete, r.work)
		if side == sideButler {
			run.Subject, delRun.Subject = r.write, r.delete
		} else {
			run.Baseline, delRun.Baseline = r.write, r.delete
		}
		write.addWork(side, r.work)
		del.addWork(side, r.work)
	}
	run.Took = time.Since(run.Started).Seconds()
	delRun.Took = run.Took
	write.Runs = append(write.Runs, run)
	del.Runs = append(del.Runs, delRun)
	for _, f := range []*figure{write, del} {
		f.Commit, f.Machine = o.commit, machine()
		if err := f.save(figurePath(o.figures, f.ID)); err != nil {
			return err
		}
	}
	return nil
}

// sideResult is one side of a P9 and P4 pair: seconds to write and to delete, and what it made.
type sideResult struct {
	write, delete float64
	work          map[string]int
}

// lifecycleOnFreshPlane starts a plane, measures one side on it and stops it.
func lifecycleOnFreshPlane(ctx context.Context, o options, root, side string, n int) (sideResult, error) {
	dir, err := os.MkdirTemp("", "butler-bench-")
	if err != nil {
		return sideResult{}, err
	}
	defer os.RemoveAll(dir)
	p, err := startPlane(root, dir, o.butlerArgs)
	if err != nil {
		return sideResult{}, err
	}
	defer p.stop()
	return lifecycleSide(ctx, p, side, n)
}

// lifecycleSide measures one side of P9 on plane p: seconds from the first write until a watch
// saw all n MachineDeployments, and the objects the side made by then; then P4's delete.
func lifecycleSide(ctx context.Context, p *plane, side string, n int) (sideResult, error) {
	var r sideResult
	ns, stopSteward, err := lifecycleSetup(ctx, p)
	if err != nil {
		return r, err
	}
	defer stopSteward()
	butler, kube, dyn := p.unthrottledClients()
	selector := external.TenantClusterNamespaceLabel + "=" + ns
	var write func() error
	var in []component.Input
	if side == sideFloor {
		selector = floorLabel + "=" + ns
		if in, err = floorInputs(ctx, butler, ns, n, func(i int64) *v1alpha1.TenantCluster { return benchCluster(ns, i) }); err != nil {
			return r, err
		}
		write = func() error {
			_, err := writeFloor(ctx, kube, dyn, tenantFromSecret(kube), in, lifecycleClients)
			return err
		}
	} else {
		write = func() error {
			return inParallel(n, lifecycleClients, func(i int) error {
				_, err := butler.ButlerV1alpha1().TenantClusters(ns).Create(ctx, benchCluster(ns, int64(i+1)), metav1.CreateOptions{})
				return err
			})
		}
	}
	all, stop, err := seeAll(ctx, dyn, external.MachineDeploymentGVK, selector, n)
	if err != nil {
		return r, err
	}
	defer stop()
	start := time.Now()
	if err := write(); err != nil {
		return r, err
	}
	select {
	case at := <-all:
		r.write = at.Sub(start).Seconds()
	case <-time.After(20 * time.Minute):
		return r, fmt.Errorf("not all %d MachineDeployments were seen in 20 minutes", n)
	case <-ctx.Done():
		return r, ctx.Err()
	}
	if r.work, err = countWork(ctx, dyn, selector); err != nil {
		return r, err
	}
	r.delete, err = deleteSide(ctx, butler, kube, dyn, side, ns, selector, in, n)
	return r, err
}

// seeAll sends on the channel when a watch of gvk's objects matching selector has seen n of
// them, the time it saw the last.
func seeAll(ctx context.Context, dyn dynamic.Interface, gvk schema.GroupVersionKind, selector string, n int) (<-chan time.Time, func(), error) {
	all := make(chan time.Time, 1)
	var mu sync.Mutex
	seen := map[string]bool{}
	ctx, cancel := context.WithCancel(ctx)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	if _, err := factory.ForResource(external.MustGVR(gvk)).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		now := time.Now()
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[u.GetNamespace()+"/"+u.GetName()] = true
		if len(seen) == n {
			all <- now
		}
	}}); err != nil {
		cancel()
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	return all, func() { cancel(); factory.Shutdown() }, nil
}

// workKinds are what a P9 side is counted by: what the controllers (or the floor) write, what the
// Steward stand-in makes for each control plane, and Cluster API's first reaction.
var workKinds = map[string]schema.GroupVersionResource{
	"RoleBinding":             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"Secret":                  {Version: "v1", Resource: "secrets"},
	"Cluster":                 external.MustGVR(external.ClusterGVK),
	"StewardControlPlane":     external.MustGVR(external.StewardControlPlaneGVK),
	"TenantControlPlane":      tenantControlPlanes,
	"AWSCluster":              external.MustGVR(external.AWSClusterGVK),
	"AWSMachineTemplate":      external.MustGVR(external.AWSMachineTemplateGVK),
	"BootstrapConfigTemplate": external.MustGVR(external.BootstrapConfigTemplateGVK),
	"MachineDeployment":       external.MustGVR(external.MachineDeploymentGVK),
}

// countWork counts the namespaces labelled selector and, by kind, the objects in them.
func countWork(ctx context.Context, dyn dynamic.Interface, selector string) (map[string]int, error) {
	namespaces, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, ns := range namespaces.Items {
		ours[ns.GetName()] = true
	}
	counts := map[string]int{"Namespace": len(ours)}
	for kind, gvr := range workKinds {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("counting %s: %w", kind, err)
		}
		for _, o := range list.Items {
			if ours[o.GetNamespace()] {
				counts[kind]++
			}
		}
	}
	return counts, nil
}

// figurePath is where figure id's runs are kept: test/bench/figures in the repository by default,
// committed with the document rendered from them, so a report that runs one figure (ONLY=P9)
// renders the others from their last runs, each with its own commit.
func figurePath(dir, id string) string { return filepath.Join(dir, id+".json") }
