package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// GVR is a GroupVersionResource, for the dynamic client.
func GVR(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// ClustersGVR and the three below are the Cluster API and Steward resources butler makes for a
// TenantCluster.
var ClustersGVR = GVR("cluster.x-k8s.io", "v1beta2", "clusters")

var MachineDeploymentsGVR = GVR("cluster.x-k8s.io", "v1beta2", "machinedeployments")

var StewardCPGVR = GVR("controlplane.cluster.x-k8s.io", "v1alpha1", "stewardcontrolplanes")

var TenantCPGVR = GVR("steward.butlerlabs.dev", "v1alpha1", "tenantcontrolplanes")

// DynamicClient is a dynamic client of the management cluster as its admin.
func DynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(Plane.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WaitCluster polls the TenantCluster until ok says so, and fails with its status otherwise.
func WaitCluster(t *testing.T, ns, name string, timeout time.Duration, what string, ok func(*v1alpha1.TenantCluster) bool) *v1alpha1.TenantCluster {
	t.Helper()
	var last *v1alpha1.TenantCluster
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		tc, err := Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = tc
		return ok(tc), nil
	})
	if err != nil {
		t.Fatalf("%s/%s: %s: %v; last status %+v", ns, name, what, err, StatusOf(last))
	}
	return last
}

// StatusOf is a TenantCluster's status on one line, for a failure's message.
func StatusOf(tc *v1alpha1.TenantCluster) string {
	if tc == nil {
		return "<none>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s", tc.Status.Phase)
	if op := tc.Status.LastOperation; op != nil {
		fmt.Fprintf(&b, " op=%s/%s %d%% %q", op.Type, op.State, op.Progress, op.Description)
	}
	for _, c := range tc.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// Hibernated says whether the TenantCluster is asleep, as its status reports for its current generation.
func Hibernated(tc *v1alpha1.TenantCluster) bool {
	return tc.Status.Phase == v1alpha1.TenantClusterHibernated && meta.IsStatusConditionTrue(tc.Status.Conditions, "Hibernated") &&
		tc.Status.ObservedGeneration == tc.Generation
}

// RotationOfCluster is the TenantCluster's credentials rotation status, nil if none.
func RotationOfCluster(tc *v1alpha1.TenantCluster) *v1alpha1.CredentialsRotation {
	if tc.Status.Credentials == nil {
		return nil
	}
	return tc.Status.Credentials.Rotation
}
