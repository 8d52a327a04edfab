package main

// p6 is a local TenantCluster's create -> control plane Ready with one spare control plane
// ready, which it takes, against the cold first start of its kube-apiserver
// (TestSlowCreateFigures in test/e2e/plane): the create issue 40's goal is about.
func p6(pairs, _ int) figure {
	return figure{
		ID:    "P6",
		Title: "Create -> control plane Ready of a local TenantCluster with one spare control plane, against the cold first start of its kube-apiserver.",
		What: "a local TenantCluster with no workers that sets nothing, created through the clientset while the provider " +
			"(--spare-control-planes=1) has one spare control plane Ready, which it takes; the clock runs from the create call until its " +
			"ControlPlaneReady condition is True (polled every 100 ms): admission, the lifecycle's steps, the claim of the spare " +
			"(its kube-apiserver, CA, certificates, datastore user and prefix, started ahead), kube-controller-manager and kube-scheduler " +
			"started, the join setup; the cluster is then deleted, and gone with its processes, and the pool refilled before the next run",
		Baseline: coldStartBaseline,
		Subject:  "create with a spare", Base: "cold first kube-apiserver start", Unit: "s", Better: "lower",
		Command: "make bench-report ONLY=P6 (CREATE_BENCH=1 go test -run '^TestSlowCreateFigures$' ./test/e2e/plane/)",
		Notes: []string{"One e2e plane, measured with P6c in rounds whose order alternates; every run starts once the spare is Ready " +
			"and 5 s have passed. The goal of issue 40 is this create's median at 2 s or less. A spare costs what an idle tenant does " +
			"(docs/concepts/local-provider.md); the provider's default is none, and then every create is P6c's."},
	}
}

// p6c is the same create when no spare fits it: its kube-apiserver starts cold, as every
// create's did before spares (measured in the same run as P6).
func p6c(pairs, _ int) figure {
	return figure{
		ID:    "P6c",
		Title: "Create -> control plane Ready of a local TenantCluster that no spare control plane fits (a cold create), against the cold first start of its kube-apiserver.",
		What: "a local TenantCluster with no workers on another service network than the default, which no spare fits, created " +
			"through the clientset on the same plane as P6's (one spare Ready, untouched); the clock runs from the create call until its " +
			"ControlPlaneReady condition is True (polled every 100 ms): admission, the lifecycle's steps, the tenant's CA and " +
			"certificates, its datastore user and prefix, and kube-apiserver, kube-controller-manager and kube-scheduler started; " +
			"the cluster is then deleted, and gone with its processes, before the next run",
		Baseline: coldStartBaseline,
		Subject:  "cold create", Base: "cold first kube-apiserver start", Unit: "s", Better: "lower",
		Command: "make bench-report ONLY=P6 (the same run as P6)",
		Notes: []string{"One e2e plane; every create is of a new cluster on the same datastore, every cold start on the template's " +
			"emptied prefix. This is every create on a provider without spares (its default)."},
	}
}

// coldStartBaseline is P6's and P6c's baseline.
const coldStartBaseline = "a template cluster's kube-apiserver command line and Go settings as the provider ran them, started by hand on its " +
	"own prefix emptied first (so it writes every bootstrap object, as a create's first start does) while the template " +
	"sleeps; the clock runs from its exec until /readyz answers (the one start a cold create cannot avoid)"
