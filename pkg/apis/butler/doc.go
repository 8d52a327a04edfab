// +k8s:deepcopy-gen=package
// +groupName=butler.butlerlabs.dev

// Package butler is the internal version of the butler.butlerlabs.dev API.
package butler
