package flux

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of Flux's objects that butler reads (fluxcd/pkg/apis/meta,
// source-controller/api).
const (
	// ReadyCondition is kstatus' Ready, which both kinds set.
	ReadyCondition = "Ready"
	// FetchFailedCondition is a GitRepository whose clone failed (its reason says how).
	FetchFailedCondition = "FetchFailed"
	// AuthenticationFailedReason is a credential Flux could not use (missing keys, refused).
	AuthenticationFailedReason = "AuthenticationFailed"
	// GitOperationFailedReason is a clone that failed: unreachable, refused, no such branch.
	GitOperationFailedReason = "GitOperationFailed"
	// URLInvalidReason is a URL Flux cannot parse.
	URLInvalidReason = "URLInvalid"
	// ArtifactFailedReason is a Kustomization whose source's artifact could not be used (its
	// path missing: "kustomization path not found").
	ArtifactFailedReason = "ArtifactFailed"
	// BuildFailedReason is a kustomize build that failed.
	BuildFailedReason = "BuildFailed"
	// ReconciliationFailedReason is an apply the tenant refused (Flux dry-runs first).
	ReconciliationFailedReason = "ReconciliationFailed"
	// HealthCheckFailedReason is an applied set that did not become ready in time.
	HealthCheckFailedReason = "HealthCheckFailed"
)

// LocalObjectReference names an object of the same namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// GitRepository is the part of Flux's GitRepository butler writes and reads.
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GitRepositorySpec   `json:"spec,omitempty"`
	Status            GitRepositoryStatus `json:"status,omitempty"`
}

// GitRepositorySpec is where the source is and how often it is fetched.
type GitRepositorySpec struct {
	URL       string                `json:"url"`
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	Interval  metav1.Duration       `json:"interval"`
	Timeout   *metav1.Duration      `json:"timeout,omitempty"`
	Reference *GitRepositoryRef     `json:"ref,omitempty"`
}

// GitRepositoryRef is the branch to follow.
type GitRepositoryRef struct {
	Branch string `json:"branch,omitempty"`
}

// GitRepositoryStatus is the latest fetch.
type GitRepositoryStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Artifact           *Artifact          `json:"artifact,omitempty"`
}

// Artifact is what was fetched; Revision is "<branch>@sha1:<commit>".
type Artifact struct {
	Revision string `json:"revision"`
}

// Kustomization is the part of Flux's Kustomization butler writes and reads.
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              KustomizationSpec   `json:"spec,omitempty"`
	Status            KustomizationStatus `json:"status,omitempty"`
}

// KustomizationSpec is what is applied, from where, as whom.
type KustomizationSpec struct {
	SourceRef          CrossNamespaceSourceReference `json:"sourceRef"`
	Path               string                        `json:"path,omitempty"`
	Prune              bool                          `json:"prune"`
	Wait               bool                          `json:"wait,omitempty"`
	Interval           metav1.Duration               `json:"interval"`
	RetryInterval      *metav1.Duration              `json:"retryInterval,omitempty"`
	Timeout            *metav1.Duration              `json:"timeout,omitempty"`
	ServiceAccountName string                        `json:"serviceAccountName,omitempty"`
}

// CrossNamespaceSourceReference names the source (here, of the same namespace).
type CrossNamespaceSourceReference struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// KustomizationStatus is the latest apply.
type KustomizationStatus struct {
	ObservedGeneration    int64              `json:"observedGeneration,omitempty"`
	Conditions            []metav1.Condition `json:"conditions,omitempty"`
	LastAppliedRevision   string             `json:"lastAppliedRevision,omitempty"`
	LastAttemptedRevision string             `json:"lastAttemptedRevision,omitempty"`
}
