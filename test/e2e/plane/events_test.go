package plane

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestTenantClusterEvents: a local cluster's create -> Ready -> scale -> delete is told by
// Events on the TenantCluster (events.k8s.io/v1): `kubectl describe tc` shows the steps' and
// phases' transitions while it lives, and the deletion's steps are there once it is gone.
func TestTenantClusterEvents(t *testing.T) {
	framework.LongestFirst(t, 67*time.Second)
	ns := framework.Namespace(t, "e2e-events")
	const name = "told"
	localCluster(t, ns, name, framework.PinnedVersion, bootstrap.OSTalos, 0)
	framework.WaitReady(t, ns, name, 0, 3*time.Minute)
	framework.MustKubectl(t, "scale", "tc", name, "-n", ns, "--replicas=1")
	framework.WaitReady(t, ns, name, 1, 3*time.Minute)

	describe := framework.MustKubectl(t, "describe", "tc", name, "-n", ns)
	i := strings.Index(describe, "Events:")
	if i < 0 {
		t.Fatalf("kubectl describe shows no Events:\n%s", describe)
	}
	events := describe[i:]
	for _, want := range []string{
		"phase Pending -> Provisioning", "ControlPlaneWaiting", "ControlPlaneReady", "WorkersReady", "-> Ready",
		"phase Ready -> Updating", "phase Updating -> Ready",
	} {
		if !strings.Contains(events, want) {
			t.Errorf("describe's Events lack %q:\n%s", want, events)
		}
	}

	framework.MustKubectl(t, "delete", "tc", name, "-n", ns, "--wait=false")
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s not gone after its deletion", name)
	}
	out := framework.MustKubectl(t, "get", "events.events.k8s.io", "-n", ns, "-o", "json")
	var list struct {
		Items []struct {
			Reason    string
			Note      string
			Regarding struct{ Kind, Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	deleting := 0
	for _, e := range list.Items {
		if e.Regarding.Kind == "TenantCluster" && e.Regarding.Name == name && e.Reason == "Deleting" {
			deleting++
		}
	}
	if deleting == 0 {
		t.Errorf("no Deleting Event on the TenantCluster among %d Events", len(list.Items))
	}
}
