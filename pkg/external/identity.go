package external

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AWSClusterStaticIdentity is the part of CAPA's cluster-scoped identity butler reads: the
// credentials Secret it names (in CAPA's namespace).
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type AWSClusterStaticIdentity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AWSClusterStaticIdentitySpec `json:"spec,omitempty"`
}

// AWSClusterStaticIdentitySpec names the credentials Secret.
//
// +k8s:deepcopy-gen=true
type AWSClusterStaticIdentitySpec struct {
	SecretRef string `json:"secretRef,omitempty"`
}

// AzureClusterIdentity is the part of CAPZ's identity butler reads: the Secret holding the client
// secret.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type AzureClusterIdentity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AzureClusterIdentitySpec `json:"spec,omitempty"`
}

// AzureClusterIdentitySpec names the client secret's Secret.
//
// +k8s:deepcopy-gen=true
type AzureClusterIdentitySpec struct {
	ClientSecret SecretReference `json:"clientSecret,omitempty"`
}

// SecretReference names a Secret, as CAPZ's (and core/v1's) SecretReference.
//
// +k8s:deepcopy-gen=true
type SecretReference struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}
