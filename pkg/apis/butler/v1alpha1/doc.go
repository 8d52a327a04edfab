// +k8s:openapi-gen=true
// +k8s:protobuf-gen=package
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/butlerdotdev/butler-apiserver/pkg/apis/butler
// +k8s:defaulter-gen=TypeMeta
// +groupName=butler.butlerlabs.dev
// +k8s:openapi-model-package=dev.butlerlabs.butler.v1alpha1

// Package v1alpha1 is the v1alpha1 version of the butler.butlerlabs.dev API, also its storage version.
package v1alpha1
