package managementaddon

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func addon() *butler.ManagementAddon {
	return &butler.ManagementAddon{
		ObjectMeta: metav1.ObjectMeta{Name: "flux"},
		Spec: butler.ManagementAddonSpec{Addon: "flux-management", Version: "2.9.5",
			ServiceAccountRef: butler.NamespacedObjectReference{Namespace: "butler-management-addons", Name: "flux-installer"}},
	}
}

// A client's create cannot set the status, an update through the main resource keeps the
// stored one, and only a spec change moves the generation (kstatus and Flux read it).
func TestStatusIsTheControllersAndGenerationCountsSpecChanges(t *testing.T) {
	s := NewStrategy(runtime.NewScheme())
	if s.NamespaceScoped() {
		t.Fatal("managementaddons are cluster-scoped")
	}
	ctx := context.Background()
	obj := addon()
	obj.Status.Phase = butler.TenantAddonInstalled
	s.PrepareForCreate(ctx, obj)
	if obj.Status.Phase != "" || obj.Generation != 1 {
		t.Fatalf("create: status %+v generation %d", obj.Status, obj.Generation)
	}
	if errs := s.Validate(ctx, obj); len(errs) != 0 {
		t.Fatalf("valid addon refused: %v", errs)
	}

	stored := obj.DeepCopy()
	stored.Status.Phase = butler.TenantAddonInstalled
	same := stored.DeepCopy()
	same.Status.Phase = butler.TenantAddonFailed
	s.PrepareForUpdate(ctx, same, stored)
	if same.Status.Phase != butler.TenantAddonInstalled || same.Generation != 1 {
		t.Errorf("unchanged spec: status %q generation %d", same.Status.Phase, same.Generation)
	}
	upgraded := stored.DeepCopy()
	upgraded.Spec.Version = "2.10.0"
	s.PrepareForUpdate(ctx, upgraded, stored)
	if upgraded.Generation != 2 {
		t.Errorf("changed spec: generation %d, want 2", upgraded.Generation)
	}
}

func TestTableNamesTheAccount(t *testing.T) {
	obj := addon()
	obj.Status.Phase = butler.TenantAddonInstalled
	got := Table.Cells(obj)
	want := []any{"flux-management", "2.9.5", "butler-management-addons/flux-installer", "Installed"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d: %v, want %v", i, got[i], want[i])
		}
	}
}
