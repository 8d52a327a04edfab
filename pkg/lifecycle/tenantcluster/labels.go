package tenantcluster

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

const (
	// Finalizer holds a deleted TenantCluster until everything it made is gone.
	Finalizer = "butler.butlerlabs.dev/tenantcluster"
	// TeamLabel names the cluster's Team on its tenant namespace.
	TeamLabel = "butler.butlerlabs.dev/tenant-team"
)

// TenantNamespace is the namespace of a TenantCluster's objects: <name>-<first 8 of its UID>.
func TenantNamespace(tc *v1alpha1.TenantCluster) string {
	uid := string(tc.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return tc.Name + "-" + uid
}

// labels are the labels of everything the controller writes for tc.
func labels(tc *v1alpha1.TenantCluster) map[string]string {
	return component.Labels(component.Input{Cluster: tc})
}

// keyOf maps an object carrying the cluster labels to its TenantCluster's key.
func keyOf(obj any) []string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	l := m.GetLabels()
	if l[external.TenantClusterLabel] == "" || l[external.TenantClusterNamespaceLabel] == "" {
		return nil
	}
	return []string{l[external.TenantClusterNamespaceLabel] + "/" + l[external.TenantClusterLabel]}
}
