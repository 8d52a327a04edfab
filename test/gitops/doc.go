// Package gitops holds TestGitOpsManagement, which the one-node cluster's GitOps stage
// (hack/lib/gitops.sh, in hack/test-cluster.sh's bring-up) runs against that cluster: Flux on
// the management cluster, installed by a ManagementAddon, applying a Team's TenantClusters from
// a Git server of this machine through kube-apiserver and the APIService. Without the stage's
// environment (BUTLER_GITOPS_KUBECONFIG) it skips.
package gitops
