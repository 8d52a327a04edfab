package main

// p6 is a local TenantCluster's create -> control plane Ready against the cold first start of
// its kube-apiserver (TestSlowCreateFigures in test/e2e/plane).
func p6(pairs, _ int) figure {
	return figure{
		ID:    "P6",
		Title: "Create -> control plane Ready of a local TenantCluster, against the cold first start of its kube-apiserver.",
		What: "a local TenantCluster with no workers created through the clientset; the clock runs from the create call until its " +
			"ControlPlaneReady condition is True (polled every 100 ms): admission, the lifecycle's steps, the tenant's CA and " +
			"certificates, its datastore user and prefix, and kube-apiserver, kube-controller-manager and kube-scheduler started; " +
			"the cluster is then deleted, and gone with its processes, before the next run",
		Baseline: "a template cluster's kube-apiserver command line and Go settings as the provider ran them, started by hand on its " +
			"own prefix emptied first (so it writes every bootstrap object, as a create's first start does) while the template " +
			"sleeps; the clock runs from its exec until /readyz answers (the one start a create cannot avoid)",
		Subject: "create", Base: "cold first kube-apiserver start", Unit: "s", Better: "lower",
		Command: "make bench-report ONLY=P6 (CREATE_BENCH=1 go test -run '^TestSlowCreateFigures$' ./test/e2e/plane/)",
		Notes: []string{"One e2e plane; every create is of a new cluster on the same datastore, every cold start on the template's " +
			"emptied prefix. The goal of issue 40 is the create's median at 2 s or less."},
	}
}
