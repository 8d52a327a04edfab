package admission

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/quota"
)

var maResource = butler.Resource("managementaddons").WithVersion("v1alpha1")

// impersonationBy allows everything except impersonating ServiceAccounts, which only the named
// users hold, on the named accounts ("namespace/name").
func impersonationBy(holders map[string][]string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetVerb() != "impersonate" {
			return authorizer.DecisionAllow, "", nil
		}
		for _, account := range holders[a.GetUser().GetName()] {
			if a.GetResource() == "serviceaccounts" && a.GetAPIGroup() == "" && a.GetNamespace()+"/"+a.GetName() == account {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func managementAddon(account string, values string) *butler.ManagementAddon {
	return &butler.ManagementAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "flux"},
		Spec: butler.ManagementAddonSpec{Addon: "flux-management", Values: &runtime.RawExtension{Raw: []byte(values)},
			ServiceAccountRef: butler.NamespacedObjectReference{Namespace: "butler-management-addons", Name: account}},
	}
}

// The attack: the controller installs a ManagementAddon as the account it names, by
// impersonation. Someone the platform lets write ManagementAddons (butler-platform-addons) but
// not act as a cluster-admin account names that account, or changes the chart's values of an
// addon that already names it: butler-apiserver would install what they chose with rights they
// do not hold. Any spec change needs impersonate on the account, 403 otherwise.
func TestAttackManagementAddonAsAnAccountTheAskerCannotBe(t *testing.T) {
	chain, err := New(&quota.Ledger{Store: newStore()}, impersonationBy(map[string][]string{
		"platform-admin": {"butler-management-addons/flux-installer"},
	}), "")
	if err != nil {
		t.Fatal(err)
	}
	as := func(who string, obj, old *butler.ManagementAddon) error {
		op, oldObj := admission.Create, runtime.Object(nil)
		if old != nil {
			op, oldObj = admission.Update, old
		}
		a := admission.NewAttributesRecord(obj, oldObj, schema.GroupVersionKind{}, "", obj.Name, maResource, "", op, nil, false, &user.DefaultInfo{Name: who})
		if err := chain.(admission.MutationInterface).Admit(context.Background(), a, nil); err != nil {
			return err
		}
		return chain.(admission.ValidationInterface).Validate(context.Background(), a, nil)
	}
	says := `spec.serviceAccountRef: installing as ServiceAccount butler-management-addons/flux-installer needs impersonate on it`

	expect(t, as("delegate", managementAddon("flux-installer", `{}`), nil), apierrors.IsForbidden, says)
	stored := managementAddon("flux-installer", `{}`)
	expect(t, as("delegate", managementAddon("flux-installer", `{"extraObjects":["a ClusterRoleBinding"]}`), stored), apierrors.IsForbidden, says)
	// An update that leaves the spec as it is (a label, the controller's finalizer) is no choice of account.
	labelled := stored.DeepCopy()
	labelled.Labels = map[string]string{"owner": "platform"}
	expect(t, as("delegate", labelled, stored), nil, "")

	expect(t, as("platform-admin", managementAddon("flux-installer", `{}`), nil), nil, "")
	expect(t, as("platform-admin", managementAddon("flux-installer", `{"logLevel":"debug"}`), stored), nil, "")
	expect(t, as("platform-admin", managementAddon("cluster-admin-sa", `{}`), stored), apierrors.IsForbidden,
		`installing as ServiceAccount butler-management-addons/cluster-admin-sa needs impersonate on it`)
}

// The same attack through the catalog: a ManagementAddon of spec.addon installs the chart its
// AddonDefinition names, and follows the definition when it changes. Someone the platform lets
// edit the catalog (for the Teams' addons) but not act as the account points the definition at a
// chart of theirs: the controller upgrades the addon to it, as the account. A change of a
// definition's spec that a ManagementAddon uses needs impersonate on each such addon's account.
func TestAttackManagementAddonThroughItsAddonDefinition(t *testing.T) {
	store := newStore()
	store.managementAddons = []butler.ManagementAddon{*managementAddon("flux-installer", `{}`)}
	chain, err := New(&quota.Ledger{Store: store}, impersonationBy(map[string][]string{
		"platform-admin": {"butler-management-addons/flux-installer"},
	}), "")
	if err != nil {
		t.Fatal(err)
	}
	definition := func(name, repository string) *butler.AddonDefinition {
		return &butler.AddonDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: butler.AddonDefinitionSpec{
			Category: "gitops", Chart: butler.ChartReference{Repository: repository, Name: "butler-flux", DefaultVersion: "2.9.5"}}}
	}
	as := func(who string, obj, old *butler.AddonDefinition) error {
		op, oldObj := admission.Create, runtime.Object(nil)
		if old != nil {
			op, oldObj = admission.Update, old
		}
		a := admission.NewAttributesRecord(obj, oldObj, schema.GroupVersionKind{}, "", obj.Name,
			butler.Resource("addondefinitions").WithVersion("v1alpha1"), "", op, nil, false, &user.DefaultInfo{Name: who})
		return chain.(admission.ValidationInterface).Validate(context.Background(), a, nil)
	}
	stored := definition("flux-management", "/charts")
	says := `AddonDefinition flux-management is installed by ManagementAddon flux as ServiceAccount butler-management-addons/flux-installer: changing it needs impersonate on that account`

	expect(t, as("catalog-editor", definition("flux-management", "https://charts.attacker.example"), stored), apierrors.IsForbidden, says)
	// Made anew under the name a ManagementAddon waits for (it was deleted, or never made).
	expect(t, as("catalog-editor", definition("flux-management", "https://charts.attacker.example"), nil), apierrors.IsForbidden, says)
	labelled := stored.DeepCopy()
	labelled.Labels = map[string]string{"tier": "platform"}
	expect(t, as("catalog-editor", labelled, stored), nil, "")
	expect(t, as("catalog-editor", definition("metrics-server", "https://charts.example.com"), definition("metrics-server", "https://old.example.com")), nil, "")
	expect(t, as("platform-admin", definition("flux-management", "/other-charts"), stored), nil, "")
}
