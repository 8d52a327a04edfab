package admission

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/addons"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

// secretsReadBy allows everything except get on Secrets, which only the named users hold (on
// the named Secrets): a Team's operator holds no right on Secrets (butler-operator grants none).
func secretsReadBy(readers map[string][]string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetResource() != "secrets" {
			return authorizer.DecisionAllow, "", nil
		}
		for _, name := range readers[a.GetUser().GetName()] {
			if a.GetVerb() == "get" && a.GetAPIGroup() == "" && a.GetName() == name {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

// admitAs runs the whole chain (Admit, then Validate) on who's create of obj in team-a, or
// update when old is set.
func admitAs(chain admission.Interface, who string, obj, old *butler.TenantCluster) error {
	op, oldObj := admission.Create, runtime.Object(nil)
	if old != nil {
		op, oldObj = admission.Update, old
	}
	a := admission.NewAttributesRecord(obj, oldObj, schema.GroupVersionKind{}, "team-a", obj.Name, tcResource, "", op, nil, false, &user.DefaultInfo{Name: who})
	if err := chain.(admission.MutationInterface).Admit(context.Background(), a, nil); err != nil {
		return err
	}
	return chain.(admission.ValidationInterface).Validate(context.Background(), a, nil)
}

func withGitOps(obj *butler.TenantCluster, url, secret string) *butler.TenantCluster {
	repo := &butler.GitRepository{URL: url, Branch: "main", Path: "./clusters/prod"}
	if secret != "" {
		repo.SecretRef = &butler.LocalObjectReference{Name: secret}
	}
	obj.Spec.Addons = butler.AddonsSpec{Gitops: &butler.GitOpsAddon{Provider: "fluxcd", Repository: repo}}
	return obj
}

// The attack: butler copies spec.addons.gitops.repository.secretRef's Secret into the tenant and
// Flux sends it to the repository's URL. A Team operator (no right on Secrets) names a Secret of
// the namespace they cannot read (the Team admin's Git token, a platform credential kept there)
// with a URL of their own server, or points the URL of a cluster their admin set up with a
// credential at that server: either way the credential is sent to them. Whoever sets or redirects
// a credential must be able to read it: 403 otherwise, the same words whether it exists or not.
func TestAttackGitOpsSecretTheAskerCannotRead(t *testing.T) {
	chain, err := New(&quota.Ledger{Store: newStore()}, secretsReadBy(map[string][]string{"admin": {"git-token"}}), "")
	if err != nil {
		t.Fatal(err)
	}
	as := func(who string, obj, old *butler.TenantCluster) error { return admitAs(chain, who, obj, old) }
	evil := "https://git.attacker.example/x.git"
	ours := "https://git.example.com/team-a/fleet.git"

	expect(t, as("operator", withGitOps(tc("team-a", "two", 1), evil, "git-token"), nil),
		apierrors.IsForbidden, `spec.addons.gitops.repository.secretRef: using Secret "git-token" needs get on it in namespace team-a`)
	expect(t, as("operator", withGitOps(tc("team-a", "two", 1), evil, "no-such-secret"), nil),
		apierrors.IsForbidden, `spec.addons.gitops.repository.secretRef: using Secret "no-such-secret" needs get on it in namespace team-a`)
	// The admin's cluster, redirected by the operator: the URL changes, the Secret does not.
	admins := withGitOps(tc("team-a", "one", 1), ours, "git-token")
	expect(t, as("operator", withGitOps(tc("team-a", "one", 1), evil, "git-token"), admins),
		apierrors.IsForbidden, `using Secret "git-token" needs get on it`)

	// Who may read it may use it; an update that leaves the repository alone is not asked again
	// (the operator scales the admin's cluster); a repository without a credential needs no right
	// on Secrets (this chain's authorizer grants tenantclusters/gitops to all: see the next test).
	expect(t, as("admin", withGitOps(tc("team-a", "two", 1), ours, "git-token"), nil), nil, "")
	expect(t, as("operator", withGitOps(tc("team-a", "one", 2), ours, "git-token"), admins), nil, "")
	expect(t, as("operator", withGitOps(tc("team-a", "two", 1), "https://github.com/team-a/public.git", ""), nil), nil, "")
}

// gitOpsChosenBy wraps an authorizer so that only the named users hold create on
// tenantclusters/gitops (butler-admin, the Team's admin role, grants it).
func gitOpsChosenBy(inner authorizer.Authorizer, admins ...string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetResource() == "tenantclusters" && a.GetSubresource() == GitOpsSubresource {
			if a.GetVerb() == "create" && a.GetAPIGroup() == butler.GroupName && slices.Contains(admins, a.GetUser().GetName()) {
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		}
		return inner.Authorize(ctx, a)
	})
}

// The attack: Flux's kustomize-controller applies what the repository holds as the tenant's
// cluster-admin. A Team operator, who is not cluster-admin in the tenant, sets a public
// repository of their own (no credential, so no Secret right is asked) on a new cluster, or
// points the admin's cluster at it, or moves its branch or path to a directory they wrote: each
// would make them cluster-admin in the tenant. Choosing what Flux applies is the Team admin's
// (create on tenantclusters/gitops): 403 naming that rule.
func TestAttackGitOpsRepositoryIsTheTeamAdmins(t *testing.T) {
	authz := gitOpsChosenBy(secretsReadBy(map[string][]string{"admin": {"git-token"}}), "admin")
	chain, err := New(&quota.Ledger{Store: newStore()}, authz, "")
	if err != nil {
		t.Fatal(err)
	}
	as := func(who string, obj, old *butler.TenantCluster) error { return admitAs(chain, who, obj, old) }
	theirs := "https://github.com/operator/takeover.git"
	ours := "https://git.example.com/team-a/fleet.git"
	const rule = "needs create on tenantclusters/gitops in namespace team-a"

	expect(t, as("operator", withGitOps(tc("team-a", "two", 1), theirs, ""), nil), apierrors.IsForbidden, rule)
	admins := withGitOps(tc("team-a", "one", 1), ours, "")
	expect(t, as("operator", withGitOps(tc("team-a", "one", 1), theirs, ""), admins), apierrors.IsForbidden, rule)
	moved := withGitOps(tc("team-a", "one", 1), ours, "")
	moved.Spec.Addons.Gitops.Repository.Path = "./operator-wrote-this"
	expect(t, as("operator", moved, admins), apierrors.IsForbidden, rule)

	// The admin chooses; the operator may still scale the admin's cluster or drop the repository
	// (Flux's objects stay as a hand-off and apply nothing new of the operator's).
	expect(t, as("admin", withGitOps(tc("team-a", "two", 1), theirs, ""), nil), nil, "")
	expect(t, as("operator", withGitOps(tc("team-a", "one", 2), ours, ""), admins), nil, "")
	expect(t, as("operator", tc("team-a", "one", 1), admins), nil, "")
}

// A repository URL naming an address the outbound fetch policy refuses is a 422 at the url,
// unless the platform allows its host:port (a test's Git server on loopback); names are left to
// the fetch's dial.
func TestGitOpsSourceURLUnderTheFetchPolicy(t *testing.T) {
	p := NewGitOpsSource()
	p.SetLedger(&quota.Ledger{Store: newStore()})
	p.SetFetchPolicy(addons.FetchPolicy{Allowed: addons.AllowHostPorts([]string{"127.0.0.1:8418"})})
	create := func(url string) error {
		return p.Validate(context.Background(), attrs(withGitOps(tc("team-a", "two", 1), url, ""), nil, "team-a", "two", tcResource, "", admission.Create, false), nil)
	}
	expect(t, create("http://169.254.169.254/latest/meta-data"), apierrors.IsInvalid,
		`spec.addons.gitops.repository.url: Invalid value: "http://169.254.169.254/latest/meta-data": 169.254.169.254:80 is a link-local address`)
	expect(t, create("https://localhost/fleet.git"), apierrors.IsInvalid, "localhost:443 is a loopback address; the platform may allow it by host:port")
	expect(t, create("http://127.0.0.1:8418/fleet.git"), nil, "")
	expect(t, create("https://git.example.com/fleet.git"), nil, "")
}

// The attack: a repository stored before GitOpsSource existed (the field was accepted and did
// nothing) was never decided, and an update that leaves a repository alone is not asked again:
// an operator's earlier {url: their server, secretRef: the admin's token} would be handed to
// Flux once the controller is wired. Admission pins what it decides
// (v1alpha1.GitOpsSourcePinAnnotation, which the controller requires): such a repository stays
// unpinned, whatever the client sends, while the operator (or a controller) writes the cluster; a
// client that sends the annotation asks for the decision, which only who may read the Secret
// passes.
func TestAttackGitOpsRepositoryStoredBeforeTheCheck(t *testing.T) {
	chain, err := New(&quota.Ledger{Store: newStore()}, secretsReadBy(map[string][]string{"admin": {"git-token"}}), "")
	if err != nil {
		t.Fatal(err)
	}
	as := func(who string, obj, old *butler.TenantCluster) (string, error) {
		err := admitAs(chain, who, obj, old)
		return obj.Annotations[v1alpha1.GitOpsSourcePinAnnotation], err
	}
	evil := "https://git.attacker.example/x.git"
	pin := v1alpha1.GitOpsSourcePin(evil, "main", "./clusters/prod", "git-token")
	cluster := func(name string, replicas int32, secret, sentPin string) *butler.TenantCluster {
		obj := withGitOps(tc("team-a", name, replicas), evil, secret)
		if sentPin != "" {
			obj.Annotations = map[string]string{v1alpha1.GitOpsSourcePinAnnotation: sentPin}
		}
		return obj
	}
	stored := cluster("one", 1, "git-token", "")
	for _, step := range []struct {
		name, who string
		obj, old  *butler.TenantCluster
		wantPin   string
		forbidden bool
	}{
		{"the operator scales the cluster stored before the check", "operator", cluster("one", 2, "git-token", ""), stored, "", false},
		{"the admin writes it without asking", "admin", cluster("one", 2, "git-token", ""), stored, "", false},
		{"the operator sends the pin", "operator", cluster("one", 2, "git-token", pin), stored, pin, true},
		{"the operator creates a cluster with a pin and no repository", "operator", func() *butler.TenantCluster {
			obj := tc("team-a", "two", 1)
			obj.Annotations = map[string]string{v1alpha1.GitOpsSourcePinAnnotation: pin}
			return obj
		}(), nil, "", false},
		{"the admin (who may get the Secret) asks", "admin", cluster("one", 2, "git-token", "yes"), stored, pin, false},
		{"the operator scales the pinned cluster, sending no pin", "operator", cluster("one", 3, "git-token", ""), cluster("one", 2, "git-token", pin), pin, false},
		{"the admin creates a cluster", "admin", cluster("two", 1, "git-token", ""), nil, pin, false},
		{"the operator's repository without a credential", "operator", cluster("two", 1, "", ""), nil, v1alpha1.GitOpsSourcePin(evil, "main", "./clusters/prod", ""), false},
	} {
		got, err := as(step.who, step.obj, step.old)
		if got != step.wantPin || apierrors.IsForbidden(err) != step.forbidden || (err != nil && !step.forbidden) {
			t.Errorf("%s: pin %q, %v; want %q, forbidden %v", step.name, got, err, step.wantPin, step.forbidden)
		}
	}
}
