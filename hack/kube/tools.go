//go:build tools

// Package kube pins the Kubernetes commands built by hack/build-kube.sh (and the node's kubelet
// and kube-proxy, built by hack/build-node.sh for the one-node cluster).
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
