package plane

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// These tests drive the TenantAddon controller against a paused TenantCluster whose kubeconfig is
// the management cluster's own (the stand-in tenant), so that what a refused chart would have
// made is looked for there.

// addonFixtureCluster makes the paused TenantCluster "fixture" in the Team namespace ns, Ready
// with the management cluster's admin kubeconfig in its tenant namespace.
func addonFixtureCluster(t *testing.T, ns string) {
	t.Helper()
	tenantNS := fixtureTenantNamespace(t, ns, "fixture")
	framework.MustKubectl(t, "create", "secret", "generic", "fixture-admin-kubeconfig", "-n", tenantNS, "--from-file=admin.conf="+framework.Plane.Kubeconfig)
	framework.MustApply(t, tenantCluster(ns, "fixture"))
	framework.MustKubectl(t, "patch", "tc", "fixture", "-n", ns, "--subresource=status", "--type=merge",
		"-p", `{"status":{"phase":"Ready","tenantNamespace":"`+tenantNS+`","kubeconfigSecretRef":{"name":"fixture-admin-kubeconfig"}}}`)
}

// addonDefinition lists a repository and chart in the platform's catalog (which also allows
// the repository's host:port on loopback to the fetch policy); spec holds more lines of its
// spec, each indented by two spaces.
func addonDefinition(t *testing.T, name, repository, chart string, spec ...string) {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: AddonDefinition
metadata: {name: %s}
spec:
  displayName: %[1]s
  category: other
  chart: {repository: %q, name: %s, defaultVersion: 0.1.0}
`, name, repository, chart)
	for _, line := range spec {
		manifest += "  " + line + "\n"
	}
	framework.MustApply(t, manifest)
	t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "addondefinition", name, "--wait=false") })
}

// helmAddon is a TenantAddon of the fixture cluster installing chart from repository into a
// namespace of its own name, with values (a YAML flow mapping, or "").
func helmAddon(ns, name, repository, chart, version, values string) string {
	s := fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  clusterRef: {name: fixture}
  helm: {repository: %[3]q, chart: %[4]s, namespace: %[1]s, createNamespace: true}
  version: %[5]s
`, name, ns, repository, chart, version)
	if values != "" {
		s += "  values: " + values + "\n"
	}
	return s
}

// waitAddon waits until the TenantAddon's phase is phase and its message holds want, and
// returns it (failing the test with the last status otherwise).
func waitAddon(t *testing.T, ns, name string, phase v1alpha1.TenantAddonPhase, want string, timeout time.Duration) *v1alpha1.TenantAddon {
	t.Helper()
	var got *v1alpha1.TenantAddon
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		a, err := framework.Plane.Butler.ButlerV1alpha1().TenantAddons(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = a
		return a.Status.Phase == phase && strings.Contains(a.Status.Message, want), nil
	})
	if err != nil {
		var status any
		if got != nil {
			status = got.Status
		}
		t.Fatalf("TenantAddon %s/%s: not %s saying %q within %s; status %+v", ns, name, phase, want, timeout, status)
	}
	return got
}

// TestTenancyOperatorAddonCannotEscalate: a Team's operator installs a chart the platform lists
// (by repository and chart); with values that make it bind cluster-admin, it fails before
// anything is installed — no ClusterRoleBinding, no namespace, no release — as it does with
// values that bind edit in kube-system, while the same chart without either binding installs.
func TestTenancyOperatorAddonCannotEscalate(t *testing.T) {
	framework.LongestFirst(t, 25*time.Second)
	const ns, operator = "tenancy-escalate", "tenancy-escalate-operator"
	team(t, framework.TeamManifest(ns, "", framework.TeamMember(operator, "operator")))
	addonFixtureCluster(t, ns)
	repo := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	addonDefinition(t, "tenancy-escalate-demo", repo, "demo")
	asOperator := userKubeconfig(t, operator)
	ctx := context.Background()
	for _, name := range []string{"tenancy-escalation", "tenancy-edit-kube-system", "tenancy-plain"} {
		t.Cleanup(func() {
			_, _ = framework.Kubectl(t, "delete", "tenantaddon", name, "-n", ns, "--wait=false")
			_, _ = framework.Kubectl(t, "delete", "namespace", name, "--wait=false")
		})
	}

	if out, err := framework.KubectlAs(t, asOperator, helmAddon(ns, "tenancy-escalation", repo, "demo", "0.1.0", "{rbac: {clusterAdmin: true}}"),
		"create", "-f", "-"); err != nil {
		t.Fatalf("the operator's TenantAddon: %v\n%s", err, out)
	}
	waitAddon(t, ns, "tenancy-escalation", v1alpha1.TenantAddonFailed,
		"chart demo 0.1.0 grants more than edit, which a chart from a repository (not a platform AddonDefinition) may not: "+
			"ClusterRoleBinding tenancy-escalation-cluster-admin binds ClusterRole cluster-admin", time.Minute)
	if _, err := framework.Plane.Kube.RbacV1().ClusterRoleBindings().Get(ctx, "tenancy-escalation-cluster-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's ClusterRoleBinding: %v, want NotFound", err)
	}
	if _, err := framework.Plane.Kube.CoreV1().Namespaces().Get(ctx, "tenancy-escalation", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's namespace: %v, want NotFound", err)
	}
	if out, err := framework.Kubectl(t, "auth", "can-i", "*", "*", "--as", "operator"); strings.TrimSpace(out) != "no" {
		t.Errorf("the chart's subject \"operator\" is cluster-admin: %v\n%s", err, out)
	}

	// A RoleBinding of the built-in edit in kube-system (whence the clusterrole-aggregation-
	// controller's account, which holds escalate, can be impersonated) is refused alike.
	const editBinding = "tenancy-edit-kube-system"
	if out, err := framework.KubectlAs(t, asOperator, helmAddon(ns, editBinding, repo, "demo", "0.1.0",
		`{extraObjects: [{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: `+editBinding+`, namespace: kube-system}, `+
			`roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}, subjects: [{kind: User, name: operator}]}]}`),
		"create", "-f", "-"); err != nil {
		t.Fatalf("the operator's TenantAddon: %v\n%s", err, out)
	}
	waitAddon(t, ns, editBinding, v1alpha1.TenantAddonFailed,
		"may not: RoleBinding kube-system/"+editBinding+" is in kube-system, a system namespace", time.Minute)
	if _, err := framework.Plane.Kube.RbacV1().RoleBindings("kube-system").Get(ctx, editBinding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's RoleBinding: %v, want NotFound", err)
	}
	if _, err := framework.Plane.Kube.CoreV1().Namespaces().Get(ctx, editBinding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's namespace: %v, want NotFound", err)
	}

	// The same chart without the binding installs for the operator.
	if out, err := framework.KubectlAs(t, asOperator, helmAddon(ns, "tenancy-plain", repo, "demo", "0.1.0", ""), "create", "-f", "-"); err != nil {
		t.Fatalf("the operator's TenantAddon: %v\n%s", err, out)
	}
	waitAddon(t, ns, "tenancy-plain", v1alpha1.TenantAddonInstalled, "chart demo 0.1.0", time.Minute)
}

// TestTenancyOperatorCatalogAddonCannotEscalate: a Team's operator installs a catalog chart (an
// AddonDefinition, spec.addon) that turns a value into objects (extraObjects). With values
// that add a ClusterRoleBinding to cluster-admin it fails before anything is installed — no
// binding, no namespace, no release — because the values are the Team's; the same TenantAddon
// of a definition that sets trustTeamValues installs, binding and all: the platform vouched.
func TestTenancyOperatorCatalogAddonCannotEscalate(t *testing.T) {
	framework.LongestFirst(t, 30*time.Second)
	const ns, operator = "tenancy-catalog", "tenancy-catalog-operator"
	team(t, framework.TeamManifest(ns, "", framework.TeamMember(operator, "operator")))
	addonFixtureCluster(t, ns)
	repo := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	// Each definition installs into a namespace of its own name, which Helm creates.
	for _, def := range []string{"tenancy-catalog-checked", "tenancy-catalog-trusted"} {
		spec := []string{"defaults: {namespace: " + def + ", createNamespace: true}"}
		if def == "tenancy-catalog-trusted" {
			spec = append(spec, "trustTeamValues: true")
		}
		addonDefinition(t, def, repo, "demo", spec...)
		t.Cleanup(func() {
			_, _ = framework.Kubectl(t, "delete", "tenantaddon", def, "-n", ns, "--wait=false")
			_, _ = framework.Kubectl(t, "delete", "namespace", def, "--wait=false")
			_, _ = framework.Kubectl(t, "delete", "clusterrolebinding", def+"-cluster-admin", "--ignore-not-found")
		})
	}
	asOperator := userKubeconfig(t, operator)
	ctx := context.Background()
	// catalogAddon is the operator's TenantAddon of definition def, whose values add a
	// ClusterRoleBinding of the user subject to cluster-admin.
	catalogAddon := func(def, subject string) string {
		return fmt.Sprintf(`apiVersion: butler.butlerlabs.dev/v1alpha1
kind: TenantAddon
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  clusterRef: {name: fixture}
  addon: %[1]s
  values:
    extraObjects:
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRoleBinding
      metadata: {name: %[1]s-cluster-admin}
      roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
      subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[3]s}]
`, def, ns, subject)
	}

	const checked, checkedSubject = "tenancy-catalog-checked", "tenancy-catalog-checked-subject"
	if out, err := framework.KubectlAs(t, asOperator, catalogAddon(checked, checkedSubject), "create", "-f", "-"); err != nil {
		t.Fatalf("the operator's TenantAddon: %v\n%s", err, out)
	}
	waitAddon(t, ns, checked, v1alpha1.TenantAddonFailed,
		"chart demo 0.1.0 grants more than edit, which a catalog chart with a Team's values (spec.values), unless AddonDefinition "+
			checked+" sets trustTeamValues, may not: ClusterRoleBinding "+checked+"-cluster-admin binds ClusterRole cluster-admin", time.Minute)
	if _, err := framework.Plane.Kube.RbacV1().ClusterRoleBindings().Get(ctx, checked+"-cluster-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's ClusterRoleBinding: %v, want NotFound", err)
	}
	if _, err := framework.Plane.Kube.CoreV1().Namespaces().Get(ctx, checked, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused chart's namespace (where its release would be): %v, want NotFound", err)
	}
	if out, err := framework.Kubectl(t, "auth", "can-i", "*", "*", "--as", checkedSubject); strings.TrimSpace(out) != "no" {
		t.Errorf("the values' subject %q is cluster-admin: %v\n%s", checkedSubject, err, out)
	}

	// The definition that trusts a Team's values installs the same values as they are.
	const trusted, trustedSubject = "tenancy-catalog-trusted", "tenancy-catalog-trusted-subject"
	if out, err := framework.KubectlAs(t, asOperator, catalogAddon(trusted, trustedSubject), "create", "-f", "-"); err != nil {
		t.Fatalf("the operator's TenantAddon: %v\n%s", err, out)
	}
	waitAddon(t, ns, trusted, v1alpha1.TenantAddonInstalled, "chart demo 0.1.0, release "+trusted+"/"+trusted, time.Minute)
	crb, err := framework.Plane.Kube.RbacV1().ClusterRoleBindings().Get(ctx, trusted+"-cluster-admin", metav1.GetOptions{})
	if err != nil || crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != trustedSubject {
		t.Errorf("the trusted chart's ClusterRoleBinding from values: %+v, %v", crb, err)
	}
}

// TestTenancyAddonFetchPolicy: what butler-apiserver fetches for a TenantAddon. Loopback (by
// address or by a name that resolves there), link-local, and a redirect from a listed
// repository to an unlisted loopback port are refused at connect time with a plain reason; a
// 2 GiB chart archive, streamed without a length or announced with one, stops at the 64 MiB
// limit with a status saying so, and butler-apiserver's peak memory stays under the chart's
// 512 MiB limit.
func TestTenancyAddonFetchPolicy(t *testing.T) {
	framework.LongestFirst(t, 15*time.Second)
	const ns = "tenancy-fetch"
	team(t, framework.TeamManifest(ns, "", framework.TeamMember("tenancy-fetch-admin", "admin")))
	addonFixtureCluster(t, ns)

	unlisted := addonChartRepo(t, map[string][]string{"demo": {"0.1.0"}})
	unlistedPort := strings.TrimPrefix(unlisted, "http://127.0.0.1:")
	redirecting := httptest.NewServer(http.RedirectHandler(unlisted+"/index.yaml", http.StatusFound))
	t.Cleanup(redirecting.Close)
	addonDefinition(t, "tenancy-fetch-redirect", redirecting.URL, "demo")

	const archive = 2 << 30  // what the server offers
	var sent [2]atomic.Int64 // the most bytes of one response, per archive
	big := http.NewServeMux()
	big.HandleFunc("/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "apiVersion: v1\nentries:\n  big:\n"+
			"  - {apiVersion: v2, name: big, version: 0.1.0, urls: [big-0.1.0.tgz]}\n"+
			"  - {apiVersion: v2, name: big, version: 0.2.0, urls: [big-0.2.0.tgz]}\n")
	})
	serve := func(i int, announce bool) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if announce {
				w.Header().Set("Content-Length", strconv.Itoa(archive))
			}
			// The most sent in one response: the controller asks again after its backoff.
			chunk := make([]byte, 1<<20)
			for n := int64(0); n < archive; {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				n += int64(len(chunk))
				for m := sent[i].Load(); n > m && !sent[i].CompareAndSwap(m, n); m = sent[i].Load() {
				}
			}
		}
	}
	big.HandleFunc("/big-0.1.0.tgz", serve(0, false))
	big.HandleFunc("/big-0.2.0.tgz", serve(1, true))
	bigRepo := httptest.NewServer(big)
	t.Cleanup(bigRepo.Close)
	addonDefinition(t, "tenancy-fetch-big", bigRepo.URL, "big")

	status := func(field string) int64 {
		var peak int64
		pids, _ := filepath.Glob(filepath.Join(framework.Plane.Dir, "run", "butler-apiserver*.pid"))
		for _, f := range pids {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			s, err := os.ReadFile("/proc/" + strings.TrimSpace(string(data)) + "/status")
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(s), "\n") {
				if v, ok := strings.CutPrefix(line, field+":"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
					peak = max(peak, kb<<10)
				}
			}
		}
		return peak
	}
	rssBefore, hwmBefore := status("VmRSS"), status("VmHWM")

	for _, c := range []struct{ name, repository, chart, version, want string }{
		{"loopback", unlisted, "demo", "0.1.0", fmt.Sprintf("fetching %s/index.yaml: refused: 127.0.0.1:%s (127.0.0.1:%s) is a loopback address", unlisted, unlistedPort, unlistedPort)},
		{"localhost", "http://localhost:" + unlistedPort, "demo", "0.1.0", "fetching http://localhost:" + unlistedPort + "/index.yaml: refused: localhost:" + unlistedPort + " ("},
		{"link-local", "http://169.254.169.254/charts", "demo", "0.1.0", "fetching http://169.254.169.254/charts/index.yaml: refused: 169.254.169.254:80 (169.254.169.254:80) is a link-local address"},
		{"redirect", redirecting.URL, "demo", "0.1.0", fmt.Sprintf("refused: 127.0.0.1:%s (127.0.0.1:%s) is a loopback address", unlistedPort, unlistedPort)},
		{"streamed", bigRepo.URL, "big", "0.1.0", "fetching " + bigRepo.URL + "/big-0.1.0.tgz: the download is larger than the limit of 64Mi"},
		{"announced", bigRepo.URL, "big", "0.2.0", "fetching " + bigRepo.URL + "/big-0.2.0.tgz: the download is larger than the limit of 64Mi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			framework.MustApply(t, helmAddon(ns, c.name, c.repository, c.chart, c.version, ""))
			t.Cleanup(func() { _, _ = framework.Kubectl(t, "delete", "tenantaddon", c.name, "-n", ns, "--wait=false") })
			got := waitAddon(t, ns, c.name, v1alpha1.TenantAddonFailed, c.want, 2*time.Minute)
			if c := meta.FindStatusCondition(got.Status.Conditions, "Ready"); c == nil || c.Reason != "ChartUnavailable" {
				t.Errorf("Ready condition %+v, want reason ChartUnavailable", c)
			}
			if _, err := framework.Plane.Kube.CoreV1().Namespaces().Get(context.Background(), c.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s: %v, want NotFound", c.name, err)
			}
		})
	}

	// The server stopped far short of 2 GiB: the reader stopped at the limit (plus what the
	// sockets buffer), and an announced length past the limit was not read at all.
	const limit = 64 << 20
	rssAfter, hwmAfter := status("VmRSS"), status("VmHWM")
	t.Logf("2 GiB offered: %d MiB sent streamed, %d MiB sent announced; butler-apiserver RSS %d -> %d MiB, peak %d -> %d MiB",
		sent[0].Load()>>20, sent[1].Load()>>20, rssBefore>>20, rssAfter>>20, hwmBefore>>20, hwmAfter>>20)
	for i := range sent {
		if n := sent[i].Load(); n > limit+32<<20 {
			t.Errorf("archive %d: %d MiB sent of 2 GiB, want at most the 64 MiB limit and the sockets' buffers", i, n>>20)
		}
	}
	if hwmAfter == 0 || hwmAfter >= 512<<20 {
		t.Errorf("butler-apiserver's peak resident memory %d MiB, want under the chart's 512 MiB limit (and measured)", hwmAfter>>20)
	}
}
