package plane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestSlowCreateFigures measures P6 and P6c of docs/performance.md (CREATE_BENCH=1; make
// bench-report ONLY=P6 runs it and turns its pairs into the figures). The template cluster is
// created once, unmeasured, and kept hibernated; then the plane's provider is restarted with
// --spare-control-planes=1, and in CREATE_PAIRS (3) rounds whose order alternates, on one e2e
// plane, each run once the spare is Ready and the machine quiet:
//   - the create with a spare (P6's subject): seconds from the create of a local TenantCluster
//     with no workers that sets nothing (the clientset's call) until its ControlPlaneReady
//     condition is True; it must have taken the spare. The cluster is then deleted and gone with
//     its processes before the next run, and the pool refills;
//   - the cold create (P6c's subject): the same with another service network, which no spare
//     fits, so its kube-apiserver starts as every create's did without spares;
//   - the cold first start (both figures' baseline): the kube-apiserver command line the
//     provider ran for the template, started by hand on its own prefix emptied first, as a
//     create's first start finds it (every bootstrap object written anew), until /readyz answers.
//
// A create does more than that start (admission, the lifecycle's steps, the tenant's CA and
// certificates, its datastore user, kube-controller-manager and kube-scheduler, the kubeconfig
// Secret): the cold ratio is what all of that costs over the one start a cold create cannot
// avoid, and the spare's what is left once a spare has made that start ahead. The create's own
// median with a spare is the figure issue 40 sets a goal for (2 s).
func TestSlowCreateFigures(t *testing.T) {
	pairs := figurePairs(t, "CREATE_BENCH", "CREATE_PAIRS", "P6")
	ns := framework.Namespace(t, "e2e-createfig")
	framework.MustApply(t, framework.LocalProviderConfigManifest(ns))
	template := hibernatedTemplate(t, ns, "template")
	framework.RestartProviderWith(t, "--spare-control-planes=1")
	state := filepath.Join(framework.Plane.Dir, "tenants")
	quiet := func() {
		waitReadySpare(t, state, "")
		time.Sleep(settle)
	}

	lines := alternatingRuns(t, pairs,
		figureSide{"cold first kube-apiserver start -> /readyz", func(int) time.Duration { quiet(); return coldFirstStart(t, template) }},
		figureSide{"create with a spare -> ControlPlaneReady", func(k int) time.Duration {
			quiet()
			return timedCreate(t, ns, fmt.Sprintf("spare-%d", k+1), "")
		}},
		figureSide{"cold create (no spare fits) -> ControlPlaneReady", func(k int) time.Duration {
			quiet()
			return timedCreate(t, ns, fmt.Sprintf("cold-%d", k+1), coldServiceCIDR)
		}})
	writePairs(t, "CREATE_PAIRS_OUT", lines[0])
	writePairs(t, "CREATE_COLD_PAIRS_OUT", lines[1])
}

// settle is how long a run waits after the spare answers /readyz: a kube-apiserver just started
// still works for a few seconds (its controllers' first lists), and each run starts on a quiet
// machine.
const settle = 5 * time.Second

// coldServiceCIDR is the cold create's service network: not the default, so no spare fits it.
const coldServiceCIDR = "10.112.0.0/16"

// templateCluster is the hibernated cluster whose kube-apiserver command line and datastore
// prefix the cold first starts use.
type templateCluster struct {
	dir    string // its state directory, whose kube-apiserver.log holds the command line
	etcd   *clientv3.Client
	prefix string
}

func hibernatedTemplate(t *testing.T, ns, name string) templateCluster {
	t.Helper()
	framework.MustApply(t, framework.LocalClusterManifest(ns, name, framework.PinnedVersion, bootstrap.OSTalos, 0))
	tc := framework.WaitReady(t, ns, name, 0, 5*time.Minute)
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(tc.Status.TenantNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(framework.Plane.Dir, "tenants", string(tcp.GetUID()))
	pid := framework.TenantPids(t, dir)["kube-apiserver"]
	flags := framework.ProcessFlags(t, pid)
	etcd := framework.TenantEtcd(t, pid)
	framework.MustKubectl(t, "patch", "tc", name, "-n", ns, "--type=merge", "-p", `{"spec":{"hibernation":{"hibernated":true}}}`)
	framework.WaitCluster(t, ns, name, 3*time.Minute, "Hibernated", framework.Hibernated)
	return templateCluster{dir: dir, etcd: etcd, prefix: strings.TrimSuffix(flags["etcd-prefix"], "/") + "/"}
}

// coldFirstStart empties the template's prefix and times its kube-apiserver's start on it.
func coldFirstStart(t *testing.T, tpl templateCluster) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := tpl.etcd.Delete(ctx, tpl.prefix, clientv3.WithPrefix()); err != nil {
		t.Fatalf("emptying %s: %v", tpl.prefix, err)
	}
	return coldAPIServerStart(t, tpl.dir)
}

// timedCreate creates a local TenantCluster with no workers through the clientset (on
// serviceCIDR, "" for the default) and times it to ControlPlaneReady; it fails unless the cluster
// took a spare exactly when it is of the default shape, and it deletes the cluster and waits
// until it is gone before returning.
func timedCreate(t *testing.T, ns, name, serviceCIDR string) time.Duration {
	t.Helper()
	var tc v1alpha1.TenantCluster
	if err := yaml.Unmarshal([]byte(framework.LocalClusterManifest(ns, name, framework.PinnedVersion, bootstrap.OSTalos, 0)), &tc); err != nil {
		t.Fatal(err)
	}
	tc.Spec.Networking.ServiceCIDR = serviceCIDR
	start := time.Now()
	if _, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Create(t.Context(), &tc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := framework.WaitCluster(t, ns, name, 3*time.Minute, "ControlPlaneReady", func(tc *v1alpha1.TenantCluster) bool {
		return meta.IsStatusConditionTrue(tc.Status.Conditions, "ControlPlaneReady")
	})
	took := time.Since(start)
	tcp, err := framework.DynamicClient(t).Resource(framework.TenantCPGVR).Namespace(got.Status.TenantNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(tcp.GetUID())
	if _, err := os.Readlink(filepath.Join(framework.Plane.Dir, "tenants", uid)); (err == nil) != (serviceCIDR == "") {
		t.Fatalf("%s took a spare: %v; want %v", name, err == nil, serviceCIDR == "")
	}
	framework.DeleteCluster(t, ns, name, uid)
	return took
}
