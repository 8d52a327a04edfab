package plane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// team applies a Team and waits until the controller made its namespace and RoleBindings.
func team(t *testing.T, manifest string) *v1alpha1.Team {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatal(err)
	}
	name := obj["metadata"].(map[string]any)["name"].(string)
	start := time.Now()
	framework.MustApply(t, manifest)
	tm := framework.WaitTeamReady(t, name)
	t.Logf("team %s: namespace, RoleBindings and Ready status %s after kubectl apply", name, time.Since(start).Round(10*time.Millisecond))
	return tm
}

// userConfig is a client config for a user with a certificate from the plane's CA, unthrottled.
func userConfig(t *testing.T, user string, groups ...string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", userKubeconfig(t, user, groups...))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// --- the "Done when" of the issue --------------------------------------------------------------

func TestTeamAdminAliceAndMaxClusters(t *testing.T) {
	a := team(t, framework.TeamManifest("team-a", "  resourceLimits:\n    maxClusters: 3\n",
		framework.TeamMember("alice", "admin"), "group:"+framework.TeamMember("team-a-viewers", "viewer")))
	team(t, framework.TeamManifest("team-b", "", framework.TeamMember("bob", "admin")))
	if a.Status.Namespace != "team-a" || a.Status.MemberCount != 2 {
		t.Errorf("team-a status: %+v", a.Status)
	}
	ns, err := framework.Plane.Kube.CoreV1().Namespaces().Get(context.Background(), "team-a", metav1.GetOptions{})
	if err != nil || ns.Labels["butler.butlerlabs.dev/team"] != "team-a" {
		t.Fatalf("namespace team-a: %v %v", err, ns.Labels)
	}
	// One replica's controllers act, elected through the Lease.
	lease, err := framework.Plane.Kube.CoordinationV1().Leases("butler-system").Get(context.Background(), "butler-apiserver-workers", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("the workers' Lease: %v %+v", err, lease)
	}
	alice := userKubeconfig(t, "alice")
	framework.MustApply(t, tenantCluster("team-b", "theirs"))

	out, err := framework.KubectlAs(t, alice, "", "get", "tc", "-n", "team-b")
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, `User "alice" cannot list resource "tenantclusters"`) {
		t.Errorf("alice: kubectl get tc -n team-b: want Forbidden, got %v\n%s", err, out)
	}
	for i := 1; i <= 3; i++ {
		if out, err := framework.KubectlAs(t, alice, tenantCluster("team-a", fmt.Sprint("c", i)), "apply", "-f", "-"); err != nil {
			t.Fatalf("alice creates cluster %d of 3: %v\n%s", i, err, out)
		}
	}
	out, err = framework.KubectlAs(t, alice, "", "get", "tc", "-n", "team-a", "-o", "name")
	if err != nil || strings.Count(out, "tenantcluster") != 3 {
		t.Errorf("alice: kubectl get tc -n team-a: %v\n%s", err, out)
	}
	out, err = framework.KubectlAs(t, alice, tenantCluster("team-a", "c4"), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, `exceeds the limits of team "team-a": maxClusters is 3, in use 3, requested 1`) {
		t.Errorf("alice: a fourth cluster: want 403 naming maxClusters and the usage, got %v\n%s", err, out)
	}
	t.Logf("fourth cluster refused: %s", strings.TrimSpace(out))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "tc", "-n", "team-b"}, "no"},
		{[]string{"list", "tc", "-n", "team-a"}, "yes"},
		{[]string{"create", "tenantclusters/kubeconfig", "-n", "team-a"}, "yes"},
		{[]string{"create", "networkpools", "-n", "team-a"}, "no"},
	} {
		out, _ := framework.KubectlAs(t, alice, "", append([]string{"auth", "can-i"}, c.args...)...)
		if strings.TrimSpace(out) != c.want {
			t.Errorf("alice: kubectl auth can-i %s: %q, want %q", strings.Join(c.args, " "), strings.TrimSpace(out), c.want)
		}
	}

	// alice reads her own Team (cluster-scoped: through its reader ClusterRole), no other, and
	// cannot list Teams.
	if out, err := framework.KubectlAs(t, alice, "", "get", "team", "team-a"); err != nil || !strings.Contains(out, "team-a") {
		t.Errorf("alice: kubectl get team team-a: %v\n%s", err, out)
	}
	aliceTeams := clientset.NewForConfigOrDie(userConfig(t, "alice")).ButlerV1alpha1().Teams()
	if l, err := aliceTeams.List(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=team-a"}); err != nil || len(l.Items) != 1 {
		t.Errorf("alice: list teams by name, as kubectl get -w does: %v", err)
	}
	for _, args := range [][]string{{"get", "team", "team-b"}, {"get", "teams"}} {
		if out, err := framework.KubectlAs(t, alice, "", args...); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("alice: kubectl %s: want Forbidden, got %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// Status counts the clusters against the limit.
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		a, err = framework.Plane.Butler.ButlerV1alpha1().Teams().Get(ctx, "team-a", metav1.GetOptions{})
		return err == nil && a.Status.ClusterCount == 3, nil
	})
	if err != nil || a.Status.ResourceUsage == nil || a.Status.ResourceUsage.Clusters != 3 || a.Status.ResourceUsage.Nodes != 9 ||
		a.Status.QuotaStatus != "Warning" || !strings.Contains(a.Status.QuotaMessage, "maxClusters 3/3") {
		t.Errorf("team-a status after 3 clusters: %v %+v", err, a.Status)
	}
	out = framework.MustKubectl(t, "get", "team", "team-a")
	if !strings.Contains(out, "Ready") || !strings.Contains(out, "team-a") {
		t.Errorf("kubectl get team team-a:\n%s", out)
	}
}

// --- the matrix ----------------------------------------------------------------------------------

var (
	gvrTC   = v1alpha1.SchemeGroupVersion.WithResource("tenantclusters")
	gvrTA   = v1alpha1.SchemeGroupVersion.WithResource("tenantaddons")
	gvrNP   = v1alpha1.SchemeGroupVersion.WithResource("networkpools")
	gvrPC   = v1alpha1.SchemeGroupVersion.WithResource("providerconfigs")
	gvrBC   = v1alpha1.SchemeGroupVersion.WithResource("butlerconfigs")
	gvrAD   = v1alpha1.SchemeGroupVersion.WithResource("addondefinitions")
	gvrTeam = v1alpha1.SchemeGroupVersion.WithResource("teams")
	gvrIPA  = v1alpha1.SchemeGroupVersion.WithResource("ipallocations")
	gvrMA   = v1alpha1.SchemeGroupVersion.WithResource("managementaddons")
)

// matrixUser is one member of one of the matrix teams.
type matrixUser struct {
	name, team, role string
	groups           []string
	dyn              dynamic.Interface
	butler           clientset.Interface
	kube             kubernetes.Interface
	kubeconfig       string
	canI             map[string]map[string][]string // namespace -> resource -> verbs, from kubectl auth can-i --list
}

// cell is one (user, resource, namespace, verb) of the matrix.
type cell struct {
	user      *matrixUser
	gvr       schema.GroupVersionResource
	namespace string // "" for cluster-scoped
	verb      string // get list watch create update delete scale kubeconfig
	want      bool
	got       error
	ssar      bool
	canIList  bool
}

func (c *cell) String() string {
	where := c.namespace
	if where == "" {
		where = "cluster"
	}
	return fmt.Sprintf("%s (%s of %s) %s %s in %s", c.user.name, c.user.role, c.user.team, c.verb, c.gvr.Resource, where)
}

// expected is the rule the ClusterRoles implement: members work on TenantClusters and
// TenantAddons in their own team's namespace only — viewers read, operators also create, edit,
// delete, scale and get kubeconfigs, admins also delete collections — every member reads the namespace's
// IPAllocations (which only the allocator writes), and nobody touches platform objects.
func expected(u *matrixUser, gvr schema.GroupVersionResource, ns, verb string) bool {
	if gvr == gvrIPA {
		return ns == u.team && (verb == "get" || verb == "list" || verb == "watch")
	}
	if (gvr != gvrTC && gvr != gvrTA) || ns != u.team {
		return false
	}
	switch verb {
	case "get", "list", "watch":
		return true
	case "kubeconfig":
		// Operators mint too: the Team's bindings in the tenant give each their role there.
		return u.role == "admin" || u.role == "operator"
	default:
		return u.role == "admin" || u.role == "operator"
	}
}

func TestTeamRBACMatrix(t *testing.T) {
	framework.LongestFirst(t, 15*time.Second)
	started := time.Now()
	teams := []string{"matrix-a", "matrix-b"}
	var users []*matrixUser
	for _, tm := range teams {
		// The operator is listed as "member", Butler's other word for it; viewers come in by group.
		team(t, framework.TeamManifest(tm, "", framework.TeamMember(tm+"-admin", "admin"), framework.TeamMember(tm+"-operator", "member"),
			"group:"+framework.TeamMember(tm+"-viewers", "viewer")))
		users = append(users,
			&matrixUser{name: tm + "-admin", team: tm, role: "admin"},
			&matrixUser{name: tm + "-operator", team: tm, role: "operator"},
			&matrixUser{name: tm + "-viewer", team: tm, role: "viewer", groups: []string{tm + "-viewers"}})
	}
	admin := dynamic.NewForConfigOrDie(framework.Plane.Config)
	ctx := context.Background()

	// Fixtures: a ready cluster with a kubeconfig, an addon, and one cluster and addon for each
	// member to delete.
	var setup []func() error
	for _, tm := range teams {
		fixtureNS := fixtureTenantNamespace(t, tm, "fixture")
		framework.MustKubectl(t, "create", "secret", "generic", "fixture-admin-kubeconfig", "-n", fixtureNS, "--from-file=admin.conf="+framework.Plane.Kubeconfig)
		// The control plane's CA, which the kubeconfig subresource mints with.
		framework.MustKubectl(t, "create", "secret", "generic", "fixture-ca", "-n", fixtureNS,
			"--from-file=ca.crt="+filepath.Join(framework.Plane.Dir, "pki", "ca.crt"), "--from-file=ca.key="+filepath.Join(framework.Plane.Dir, "pki", "ca.key"))
		names := []string{"fixture"}
		for _, u := range users {
			if u.team == tm {
				names = append(names, "del-"+u.name)
			}
		}
		for _, n := range names {
			setup = append(setup, func() error {
				if _, err := admin.Resource(gvrTC).Namespace(tm).Create(ctx, tcObject(t, tm, n), metav1.CreateOptions{}); err != nil {
					return err
				}
				_, err := admin.Resource(gvrTA).Namespace(tm).Create(ctx, taObject(tm, n), metav1.CreateOptions{})
				return err
			})
		}
		// An address allocation to read: a pool, then the allocation (the platform admin creates it).
		setup = append(setup, func() error {
			if _, err := admin.Resource(gvrNP).Namespace(tm).Create(ctx, newObject(gvrNP, tm, "fixture"), metav1.CreateOptions{}); err != nil {
				return err
			}
			_, err := admin.Resource(gvrIPA).Namespace(tm).Create(ctx, newObject(gvrIPA, tm, "fixture"), metav1.CreateOptions{})
			return err
		})
	}
	for _, u := range users {
		setup = append(setup, func() error {
			cfg := userConfig(t, u.name, u.groups...)
			u.dyn, u.butler, u.kube = dynamic.NewForConfigOrDie(cfg), clientset.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg)
			u.kubeconfig = userKubeconfig(t, u.name, u.groups...)
			return nil
		})
	}
	if err := parallel(8, setup); err != nil {
		t.Fatal(err)
	}
	for _, tm := range teams {
		framework.MustKubectl(t, "patch", "tc", "fixture", "-n", tm, "--subresource=status", "--type=merge",
			"-p", `{"status":{"phase":"Ready","tenantNamespace":"`+tm+`-fixture-tenant","kubeconfigSecretRef":{"name":"fixture-admin-kubeconfig"}}}`)
	}

	// kubectl auth can-i --list for every member in every team namespace.
	var canI []func() error
	for _, u := range users {
		u.canI = map[string]map[string][]string{}
		for _, ns := range teams {
			m := map[string][]string{}
			u.canI[ns] = m
			canI = append(canI, func() error {
				out, err := framework.KubectlAs(t, u.kubeconfig, "", "auth", "can-i", "--list", "-n", ns)
				if err != nil {
					return fmt.Errorf("%s: kubectl auth can-i --list -n %s: %v\n%s", u.name, ns, err, out)
				}
				parseCanIList(out, m)
				return nil
			})
		}
	}
	if err := parallel(4, canI); err != nil {
		t.Fatal(err)
	}

	// Every cell: the real request through kube-apiserver, a SelfSubjectAccessReview (what
	// kubectl auth can-i asks), and kubectl auth can-i --list.
	var cells []*cell
	for _, u := range users {
		for _, ns := range teams {
			for _, v := range []string{"get", "list", "watch", "create", "update", "delete", "scale", "kubeconfig"} {
				cells = append(cells, &cell{user: u, gvr: gvrTC, namespace: ns, verb: v})
			}
			for _, v := range []string{"get", "list", "watch", "create", "update", "delete"} {
				cells = append(cells, &cell{user: u, gvr: gvrTA, namespace: ns, verb: v})
				cells = append(cells, &cell{user: u, gvr: gvrIPA, namespace: ns, verb: v})
			}
		}
		for _, v := range []string{"get", "list", "watch", "create", "update", "delete"} {
			for _, p := range []struct {
				gvr schema.GroupVersionResource
				ns  string
			}{{gvrNP, u.team}, {gvrPC, u.team}, {gvrBC, ""}, {gvrAD, ""}, {gvrTeam, ""}, {gvrMA, ""}} {
				cells = append(cells, &cell{user: u, gvr: p.gvr, namespace: p.ns, verb: v})
			}
		}
	}
	var work []func() error
	for _, c := range cells {
		c.want = expected(c.user, c.gvr, c.namespace, c.verb)
		work = append(work, func() error {
			c.got = do(ctx, admin, c)
			c.ssar = selfReview(ctx, c)
			c.canIList = canIListAllows(c)
			return nil
		})
	}
	runStart := time.Now()
	_ = parallel(16, work)
	elapsed := time.Since(runStart)

	allowed := 0
	for _, c := range cells {
		if c.want {
			allowed++
		}
		switch {
		case c.want && c.got != nil:
			t.Errorf("%s: want allowed, got %v", c, c.got)
		case !c.want && !apierrors.IsForbidden(c.got):
			t.Errorf("%s: want 403 Forbidden, got %v", c, c.got)
		}
		if c.ssar != c.want {
			t.Errorf("%s: SelfSubjectAccessReview says allowed=%v, want %v", c, c.ssar, c.want)
		}
		if c.canIList != c.want {
			t.Errorf("%s: kubectl auth can-i --list says allowed=%v, want %v", c, c.canIList, c.want)
		}
	}
	t.Logf("RBAC matrix: %d cells (2 teams x 3 roles x resources x verbs; %d allowed, %d forbidden), each a real request, "+
		"a SelfSubjectAccessReview and kubectl auth can-i --list: requests in %s, %s with setup",
		len(cells), allowed, len(cells)-allowed, elapsed.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	if os.Getenv("E2E_MATRIX_TABLE") != "" {
		printMatrix(t, cells)
	}
}

// do performs a cell's request as its user.
func do(ctx context.Context, admin dynamic.Interface, c *cell) error {
	u := c.user
	res := u.dyn.Resource(c.gvr)
	var ri dynamic.ResourceInterface = res
	if c.namespace != "" {
		ri = res.Namespace(c.namespace)
	}
	target := "fixture"
	switch c.verb {
	case "get":
		_, err := ri.Get(ctx, target, metav1.GetOptions{})
		return err
	case "list":
		_, err := ri.List(ctx, metav1.ListOptions{})
		return err
	case "watch":
		w, err := ri.Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptrTo[int64](1)})
		if err == nil {
			w.Stop()
		}
		return err
	case "create":
		_, err := ri.Create(ctx, newObject(c.gvr, c.namespace, "mk-"+u.name), metav1.CreateOptions{})
		return err
	case "update":
		obj := newObject(c.gvr, c.namespace, target)
		if c.gvr == gvrTC || c.gvr == gvrTA {
			got, err := admin.Resource(c.gvr).Namespace(c.namespace).Get(ctx, target, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("fixture: %w", err)
			}
			obj = got
			obj.SetResourceVersion("") // unconditional: members update the fixture at once
			obj.SetLabels(map[string]string{"edited-by": u.name})
		}
		_, err := ri.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	case "delete":
		return ri.Delete(ctx, "del-"+u.name, metav1.DeleteOptions{})
	case "scale":
		// Unconditional (no resourceVersion): every member scales the fixture at once.
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: c.namespace},
			Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
		_, err := u.butler.ButlerV1alpha1().TenantClusters(c.namespace).UpdateScale(ctx, target, scale, metav1.UpdateOptions{})
		return err
	case "kubeconfig":
		_, err := u.butler.ButlerV1alpha1().TenantClusters(c.namespace).CreateKubeconfig(ctx, target, &v1alpha1.KubeconfigRequest{}, metav1.CreateOptions{})
		return err
	}
	return fmt.Errorf("unknown verb %s", c.verb)
}

// selfReview asks kube-apiserver whether the cell's user may, as kubectl auth can-i does.
func selfReview(ctx context.Context, c *cell) bool {
	attrs := &authorizationv1.ResourceAttributes{Namespace: c.namespace, Group: c.gvr.Group, Resource: c.gvr.Resource, Verb: c.verb}
	switch c.verb {
	case "scale":
		attrs.Verb, attrs.Subresource = "update", "scale"
	case "kubeconfig":
		attrs.Verb, attrs.Subresource = "create", "kubeconfig"
	}
	review, err := c.user.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
	return err == nil && review.Status.Allowed
}

// parseCanIList reads `kubectl auth can-i --list` into resource -> verbs (rules without
// resource names only).
func parseCanIList(out string, into map[string][]string) {
	for _, line := range strings.Split(out, "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) < 4 {
			continue
		}
		// Resources, Non-Resource URLs, Resource Names, Verbs: the names column must be "[]".
		rest := strings.Join(fields[1:], " ")
		if !strings.HasPrefix(rest, "[] [] [") {
			continue
		}
		verbs := strings.Fields(strings.Trim(strings.TrimPrefix(rest, "[] [] "), "[]"))
		into[fields[0]] = append(into[fields[0]], verbs...)
	}
}

func canIListAllows(c *cell) bool {
	resource, verb := c.gvr.Resource+"."+c.gvr.Group, c.verb
	switch verb {
	case "scale":
		resource, verb = resource+"/scale", "update"
	case "kubeconfig":
		resource, verb = resource+"/kubeconfig", "create"
	}
	ns := c.namespace
	if ns == "" {
		ns = c.user.team // cluster-wide rules show in every namespace's list
	}
	for _, r := range []string{resource, "*." + c.gvr.Group, "*.*", "*"} {
		for _, v := range c.user.canI[ns][r] {
			if v == verb || v == "*" {
				return true
			}
		}
	}
	return false
}

func printMatrix(t *testing.T, cells []*cell) {
	rows := map[string][]string{}
	for _, c := range cells {
		key := fmt.Sprintf("%-18s %-16s %-10s", c.user.name, c.gvr.Resource, c.namespace)
		mark := "-"
		if c.got == nil {
			mark = "Y"
		}
		rows[key] = append(rows[key], c.verb+"="+mark)
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s %s", k, strings.Join(rows[k], " "))
	}
}

// parallel runs fns with at most n at once and returns the first error.
func parallel(n int, fns []func() error) error {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for _, fn := range fns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(); err != nil {
				first.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

func tcObject(t *testing.T, ns, name string) *unstructured.Unstructured {
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(tenantCluster(ns, name)), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func taObject(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "butler.butlerlabs.dev/v1alpha1", "kind": "TenantAddon",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"clusterRef": map[string]any{"name": "fixture"}, "addon": "metrics-server"},
	}}
}

// newObject is a valid new object of each kind.
func newObject(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	var kind string
	var spec map[string]any
	switch gvr {
	case gvrTC:
		var obj map[string]any
		_ = yaml.Unmarshal([]byte(tenantCluster(ns, name)), &obj)
		return &unstructured.Unstructured{Object: obj}
	case gvrTA:
		return taObject(ns, name)
	case gvrNP:
		kind, spec = "NetworkPool", map[string]any{"cidr": "10.99.0.0/24"}
	case gvrIPA:
		kind, spec = "IPAllocation", map[string]any{"poolRef": map[string]any{"name": "fixture"},
			"tenantClusterRef": map[string]any{"name": "fixture", "namespace": ns}, "type": "loadbalancer", "count": int64(4)}
	case gvrPC:
		kind, spec = "ProviderConfig", map[string]any{"provider": "local"}
	case gvrBC:
		kind, spec, meta["name"] = "ButlerConfig", map[string]any{}, "butler"
	case gvrAD:
		kind, spec = "AddonDefinition", map[string]any{"displayName": "X", "category": "other",
			"chart": map[string]any{"repository": "https://charts.example.com", "name": "x", "defaultVersion": "1.0.0"}}
	case gvrTeam:
		kind, spec = "Team", map[string]any{}
	case gvrMA:
		kind, spec = "ManagementAddon", map[string]any{"addon": "flux-management",
			"serviceAccountRef": map[string]any{"namespace": "butler-management-addons", "name": "flux-installer"}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "butler.butlerlabs.dev/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}}
}

func ptrTo[T any](v T) *T { return &v }

// --- quota race through the whole stack -----------------------------------------------------------

func TestTeamQuotaRaceThroughKubeAPIServer(t *testing.T) {
	framework.LongestFirst(t, 3*time.Second)
	team(t, framework.TeamManifest("quota-race", "  resourceLimits:\n    maxClusters: 3\n", framework.TeamMember("racer", "admin")))
	clusters := clientset.NewForConfigOrDie(userConfig(t, "racer")).ButlerV1alpha1().TenantClusters("quota-race")
	const clients = 30
	var ok, refused atomic.Int32
	var fns []func() error
	for i := range clients {
		fns = append(fns, func() error {
			tc := newTenantCluster(fmt.Sprint("race-", i))
			tc.Namespace = "quota-race"
			_, err := clusters.Create(context.Background(), tc, metav1.CreateOptions{})
			switch {
			case err == nil:
				ok.Add(1)
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "maxClusters is 3, in use 3"):
				refused.Add(1)
			default:
				t.Errorf("create race-%d: %v", i, err)
			}
			return nil
		})
	}
	start := time.Now()
	_ = parallel(clients, fns)
	list, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters("quota-race").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d concurrent creates through kube-apiserver in %s: %d created, %d refused", clients,
		time.Since(start).Round(time.Millisecond), ok.Load(), refused.Load())
	if ok.Load() != 3 || len(list.Items) != 3 {
		t.Fatalf("%d creates succeeded, %d stored; want exactly 3", ok.Load(), len(list.Items))
	}
}

// --- removed members lose access; a team with clusters stays --------------------------------------

func TestTeamMemberRemovedLosesAccess(t *testing.T) {
	framework.LongestFirst(t, 5*time.Second)
	team(t, framework.TeamManifest("revoke", "", framework.TeamMember("rita", "operator"), framework.TeamMember("ralph", "admin")))
	rita := clientset.NewForConfigOrDie(userConfig(t, "rita")).ButlerV1alpha1().TenantClusters("revoke")
	ctx := context.Background()
	if _, err := rita.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("rita before removal: %v", err)
	}
	ritaTeams := clientset.NewForConfigOrDie(userConfig(t, "rita")).ButlerV1alpha1().Teams()
	if _, err := ritaTeams.Get(ctx, "revoke", metav1.GetOptions{}); err != nil {
		t.Fatalf("rita reads her team before removal: %v", err)
	}
	removed := time.Now()
	framework.MustApply(t, framework.TeamManifest("revoke", "", framework.TeamMember("ralph", "admin")))
	var bindingGone time.Duration
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if bindingGone == 0 {
			if _, err := framework.Plane.Kube.RbacV1().RoleBindings("revoke").Get(ctx, "butler-team-operator", metav1.GetOptions{}); apierrors.IsNotFound(err) {
				bindingGone = time.Since(removed)
			}
		}
		_, err := rita.List(ctx, metav1.ListOptions{})
		_, teamErr := ritaTeams.Get(ctx, "revoke", metav1.GetOptions{})
		return apierrors.IsForbidden(err) && apierrors.IsForbidden(teamErr), nil
	})
	if err != nil {
		t.Fatalf("rita still has access 30s after her removal: %v", err)
	}
	t.Logf("rita removed from the team: RoleBinding gone after %s, access refused after %s",
		bindingGone.Round(10*time.Millisecond), time.Since(removed).Round(10*time.Millisecond))

	// A team with a cluster cannot be deleted; without, it goes with its namespace.
	framework.MustApply(t, tenantCluster("revoke", "last"))
	out, err := framework.Kubectl(t, "delete", "team", "revoke")
	if err == nil || !strings.Contains(out, "the team still has 1 tenant cluster(s): revoke/last; delete them first") {
		t.Fatalf("kubectl delete team with a cluster: want a 409 naming it, got %v\n%s", err, out)
	}
	framework.MustKubectl(t, "delete", "tc", "last", "-n", "revoke")
	if out, err := framework.Kubectl(t, "delete", "team", "revoke", "--timeout=30s"); err != nil {
		t.Fatalf("kubectl delete team revoke: %v\n%s\n%s", err, out, framework.MustKubectl(t, "get", "team", "revoke", "-o", "yaml"))
	}
	ns, err := framework.Plane.Kube.CoreV1().Namespaces().Get(ctx, "revoke", metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("the team's namespace is not being deleted")
	}
	if rbs, _ := framework.Plane.Kube.RbacV1().RoleBindings("revoke").List(ctx, metav1.ListOptions{LabelSelector: "butler.butlerlabs.dev/team"}); rbs != nil && len(rbs.Items) > 0 {
		t.Errorf("RoleBindings left after the team was deleted: %d", len(rbs.Items))
	}
	for _, what := range []string{"clusterrole", "clusterrolebinding"} {
		if out, err := framework.Kubectl(t, "get", what, "butler-team-reader:revoke"); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("the team's reader %s is left after the team was deleted: %v\n%s", what, err, out)
		}
	}
}

// Two butler-apiserver replicas on one etcd: concurrent creates spread over both still stop at
// the limit (the Ledger's compare-and-swap is on etcd, not in one process).
func TestTeamQuotaRaceAcrossReplicas(t *testing.T) {
	framework.LongestFirst(t, 3*time.Second)
	r := framework.StartReplicas(t, 2)
	ctx := context.Background()
	const max, clients = 5, 60
	tm := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "replicated"},
		Spec: v1alpha1.TeamSpec{ResourceLimits: &v1alpha1.ResourceLimits{MaxClusters: ptrTo[int32](max)}}}
	if _, err := r.Clients[0].ButlerV1alpha1().Teams().Create(ctx, tm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ok, refused atomic.Int32
	var fns []func() error
	for i := range clients {
		fns = append(fns, func() error {
			tc := newTenantCluster(fmt.Sprint("r-", i))
			tc.Namespace = "replicated"
			_, err := r.Clients[i%2].ButlerV1alpha1().TenantClusters("replicated").Create(ctx, tc, metav1.CreateOptions{})
			switch {
			case err == nil:
				ok.Add(1)
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "maxClusters is 5, in use 5"):
				refused.Add(1)
			default:
				t.Errorf("create r-%d: %v", i, err)
			}
			return nil
		})
	}
	start := time.Now()
	_ = parallel(clients, fns)
	list, err := r.Clients[1].ButlerV1alpha1().TenantClusters("replicated").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d concurrent creates over two replicas in %s: %d created, %d refused", clients,
		time.Since(start).Round(time.Millisecond), ok.Load(), refused.Load())
	if ok.Load() != max || len(list.Items) != max {
		t.Fatalf("%d creates succeeded, %d stored; want exactly %d", ok.Load(), len(list.Items), max)
	}
}
