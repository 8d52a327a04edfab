package butlerconfig

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	butlerfake "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/fake"
	butlerinformers "github.com/butlerdotdev/butler-apiserver/pkg/generated/informers/externalversions"
)

func eventually(t *testing.T, what string, cond func(ctx context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true,
		func(ctx context.Context) (bool, error) { return cond(ctx), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestButlerConfigStatusCounts(t *testing.T) {
	ctx := context.Background()
	client := butlerfake.NewSimpleClientset()
	configs := client.ButlerV1alpha1().ButlerConfigs()
	if _, err := configs.Create(ctx, &v1alpha1.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: "butler", Generation: 2},
		Spec: v1alpha1.ButlerConfigSpec{ControlPlaneExposure: v1alpha1.ControlPlaneExposure{Mode: v1alpha1.ExposureIngress}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := client.ButlerV1alpha1().Teams().Create(ctx, &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	bf := butlerinformers.NewSharedInformerFactory(client, 0)
	b := bf.Butler().V1alpha1()
	c, err := NewController(client, b.ButlerConfigs(), b.Teams(), b.TenantClusters())
	if err != nil {
		t.Fatal(err)
	}
	bf.Start(runCtx.Done())
	go c.Run(runCtx)

	status := func() v1alpha1.ButlerConfigStatus {
		got, err := configs.Get(ctx, "butler", metav1.GetOptions{})
		if err != nil {
			return v1alpha1.ButlerConfigStatus{}
		}
		return got.Status
	}
	eventually(t, "two teams, no clusters, Ingress", func(context.Context) bool {
		s := status()
		return s.TeamCount == 2 && s.ClusterCount == 0 && s.ControlPlaneExposureMode == v1alpha1.ExposureIngress
	})
	for _, name := range []string{"x", "y", "z"} {
		tc := &v1alpha1.TenantCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
		if _, err := client.ButlerV1alpha1().TenantClusters("a").Create(ctx, tc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.ButlerV1alpha1().Teams().Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one team, three clusters", func(context.Context) bool {
		s := status()
		return s.TeamCount == 1 && s.ClusterCount == 3
	})
}
