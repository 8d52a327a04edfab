package external

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldManager is who a write is from: the API server keeps, for every field, the manager that
// set it. butler has two writers, each its own manager so neither takes the other's fields.
type FieldManager string

const (
	// Workers is the manager of what butler-apiserver's lifecycle controllers write for
	// TenantClusters, addons, Teams and bootstrap data, in the management cluster and in tenants.
	// Its value owns those fields, so it never changes (a new one would strand them on upgrade);
	// the Go name is from when the controllers were called workers.
	Workers FieldManager = "butler-apiserver"
	// LocalProvider is butler-localprovider, the local stand-in for Steward and the local
	// infrastructure provider.
	LocalProvider FieldManager = "butler-localprovider"
	// LocalProviderRotation and LocalProviderReason are the local provider's answers on a
	// TenantControlPlane's annotations (CredentialsRotatedAnnotation, the reason and message),
	// each applied as its own manager: an apply removes the fields its manager no longer sends,
	// so one manager would drop the other answer.
	LocalProviderRotation FieldManager = LocalProvider + "-rotation"
	LocalProviderReason   FieldManager = LocalProvider + "-reason"
)

// ApplyOptions are the options of every server-side apply by m: it owns what it applies and
// takes fields over from another manager (a controller's object says what it wants; an edit of
// those fields by hand is undone at the next reconcile, as by any controller).
func (m FieldManager) ApplyOptions() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: string(m), Force: true}
}

// Resource is where an apply goes: client-go's dynamic.ResourceInterface (this package stays on
// apimachinery).
type Resource interface {
	Apply(ctx context.Context, name string, obj *unstructured.Unstructured, options metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error)
	ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, options metav1.ApplyOptions) (*unstructured.Unstructured, error)
}

// Apply server-side applies obj through r as m (ApplyOptions) and returns the object as the
// server has it afterwards.
func (m FieldManager) Apply(ctx context.Context, r Resource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return r.Apply(ctx, obj.GetName(), obj, m.ApplyOptions())
}

// ApplyStatus is Apply to the status subresource.
func (m FieldManager) ApplyStatus(ctx context.Context, r Resource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return r.ApplyStatus(ctx, obj.GetName(), obj, m.ApplyOptions())
}

// PatchOptions, CreateOptions and UpdateOptions name m as the writer of a write that is not an
// apply (a merge patch of one field, a create that must not overwrite).
func (m FieldManager) PatchOptions() metav1.PatchOptions {
	return metav1.PatchOptions{FieldManager: string(m)}
}

func (m FieldManager) CreateOptions() metav1.CreateOptions {
	return metav1.CreateOptions{FieldManager: string(m)}
}

func (m FieldManager) UpdateOptions() metav1.UpdateOptions {
	return metav1.UpdateOptions{FieldManager: string(m)}
}
