package main

// p10 is a hibernated cluster's wake against the cold start of its kube-apiserver
// (TestSlowHibernationWakeFigures in test/e2e/plane).
func p10(pairs, _ int) figure {
	return figure{
		ID:    "P10",
		Title: "Wake of a hibernated local TenantCluster by a user's request, against the cold start of its kube-apiserver.",
		What: "a local TenantCluster with wake on request and no workers, asleep (its processes stopped); a user's kubectl get ns default " +
			"with the minted kubeconfig: the clock runs from kubectl's start until it answers (the wake listener holds the connection while " +
			"butler wakes the cluster and the provider starts kube-apiserver, kube-controller-manager and kube-scheduler)",
		Baseline: "the same kube-apiserver command line the provider ran, on the same datastore, started by hand while the cluster sleeps; " +
			"the clock runs from its exec until /readyz answers (the one start a wake cannot avoid)",
		Subject: "wake", Base: "cold kube-apiserver start", Unit: "s", Better: "lower",
		Command: "make bench-report ONLY=P10 (WAKE_BENCH=1 go test -run '^TestSlowHibernationWakeFigures$' ./test/e2e/plane/)",
		Notes: []string{"One cluster on one e2e plane; each side starts from the cluster asleep. The wake's clock includes kubectl's " +
			"own start and one request, the baseline's only the server's start."},
	}
}
