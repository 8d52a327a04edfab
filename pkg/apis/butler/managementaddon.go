package butler

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ManagementAddon is an addon the platform installs into the management cluster itself (Flux,
// for one), on the TenantAddons' Helm engine. It is cluster-scoped and a platform admin's.
type ManagementAddon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ManagementAddonSpec `json:"spec,omitempty"`
	Status TenantAddonStatus   `json:"status,omitempty"`
}

// ManagementAddonSpec is the desired addon. Exactly one of addon and helm is set.
type ManagementAddonSpec struct {
	// Addon names an AddonDefinition from the catalog.
	Addon string `json:"addon,omitempty"`
	// Helm installs a chart that is not in the catalog; its namespace is required.
	Helm    *HelmChartSpec        `json:"helm,omitempty"`
	Version string                `json:"version,omitempty"`
	Values  *runtime.RawExtension `json:"values,omitempty"`
	// ServiceAccountRef is the account of the management cluster the release is installed,
	// upgraded and uninstalled as: the controller impersonates it, and holds no rights of its own
	// for the addon.
	ServiceAccountRef NamespacedObjectReference `json:"serviceAccountRef"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ManagementAddonList is a list of ManagementAddon.
type ManagementAddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagementAddon `json:"items"`
}
