package tenantcluster

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestWriteStatusLostToNewerVersionIsNotStored: a status write that loses to a newer version is
// not stored, so its transitions are not told as Events (the newer version's reconcile tells
// them once); an unchanged status and a written one are.
func TestWriteStatusLostToNewerVersionIsNotStored(t *testing.T) {
	ctx := context.Background()
	tc := cluster()
	ready := &v1alpha1.TenantClusterStatus{Phase: v1alpha1.TenantClusterReady}

	client := butlerfake.NewSimpleClientset(tc)
	c := &Controller{butler: client}
	if stored, err := c.writeStatus(ctx, tc, &tc.Status); !stored || err != nil {
		t.Errorf("unchanged status: stored %v, err %v; want stored", stored, err)
	}
	if stored, err := c.writeStatus(ctx, tc, ready); !stored || err != nil {
		t.Errorf("written status: stored %v, err %v; want stored", stored, err)
	}

	client = butlerfake.NewSimpleClientset(tc)
	client.PrependReactor("update", "tenantclusters", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "butler.butlerlabs.dev", Resource: "tenantclusters"}, tc.Name, nil)
	})
	c = &Controller{butler: client}
	if stored, err := c.writeStatus(ctx, tc, ready); stored || err != nil {
		t.Errorf("conflicting write: stored %v, err %v; want not stored, no error", stored, err)
	}
}
