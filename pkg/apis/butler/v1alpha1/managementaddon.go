package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ManagementAddon is an addon the platform installs into the management cluster itself (Flux,
// for one), on the TenantAddons' Helm engine. It is cluster-scoped and a platform admin's; its
// status is a TenantAddon's.
type ManagementAddon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   ManagementAddonSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status TenantAddonStatus   `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// ManagementAddonSpec is the desired addon. Exactly one of addon and helm is set.
type ManagementAddonSpec struct {
	// Addon names an AddonDefinition from the catalog.
	// +optional
	Addon string `json:"addon,omitempty" protobuf:"bytes,1,opt,name=addon"`
	// Helm installs a chart that is not in the catalog; its namespace is required.
	// +optional
	Helm *HelmChartSpec `json:"helm,omitempty" protobuf:"bytes,2,opt,name=helm"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,3,opt,name=version"`
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty" protobuf:"bytes,4,opt,name=values"`
	// ServiceAccountRef is the account of the management cluster the release is installed,
	// upgraded and uninstalled as: the controller impersonates it, and holds no rights of its own
	// for the addon.
	ServiceAccountRef NamespacedObjectReference `json:"serviceAccountRef" protobuf:"bytes,5,opt,name=serviceAccountRef"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ManagementAddonList is a list of ManagementAddon.
type ManagementAddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ManagementAddon `json:"items" protobuf:"bytes,2,rep,name=items"`
}
