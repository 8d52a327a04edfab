package plane

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// TestGeneratedClientset drives the API through kube-apiserver with the generated clientset, as
// a controller would: create, list, watch, scale, the kubeconfig subresource; in JSON and in
// protobuf.
func TestGeneratedClientset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := framework.Namespace(t, "e2e-clientset")

	protobuf := rest.CopyConfig(framework.Plane.Config)
	protobuf.ContentType = runtime.ContentTypeProtobuf
	protobuf.AcceptContentTypes = runtime.ContentTypeProtobuf
	// Every answer kube-apiserver relays from butler-apiserver must really be protobuf.
	var protobufAnswers, otherAnswers []string
	var mu sync.Mutex
	protobuf.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				mu.Lock()
				answer := req.Method + " " + req.URL.Path + ": " + resp.Header.Get("Content-Type")
				if strings.HasPrefix(resp.Header.Get("Content-Type"), runtime.ContentTypeProtobuf) {
					protobufAnswers = append(protobufAnswers, answer)
				} else {
					otherAnswers = append(otherAnswers, answer)
				}
				mu.Unlock()
			}
			return resp, err
		})
	})
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		if len(otherAnswers) > 0 || len(protobufAnswers) < 6 {
			t.Errorf("protobuf client: %d protobuf answers, others: %q", len(protobufAnswers), otherAnswers)
		}
	}()
	for name, config := range map[string]*rest.Config{"json": framework.Plane.Config, "protobuf": protobuf} {
		t.Run(name, func(t *testing.T) {
			client := clientset.NewForConfigOrDie(config).ButlerV1alpha1().TenantClusters(ns)
			w, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			created, err := client.Create(ctx, newTenantCluster(name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if created.Spec.ControlPlane.Replicas == nil || *created.Spec.ControlPlane.Replicas == 0 {
				t.Errorf("defaults not applied: controlPlane.replicas %v", created.Spec.ControlPlane.Replicas)
			}
			expectEvent(t, w, watch.Added, created.ResourceVersion)

			list, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !containsName(list.Items, name) {
				t.Errorf("list of %s has no %s", ns, name)
			}

			scale, err := client.GetScale(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			scale.Spec.Replicas = 6
			if _, err := client.UpdateScale(ctx, name, scale, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			got, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Workers.Replicas != 6 {
				t.Errorf("replicas after UpdateScale = %d, want 6", got.Spec.Workers.Replicas)
			}
			expectEvent(t, w, watch.Modified, got.ResourceVersion)

			_, err = client.CreateKubeconfig(ctx, name, &v1alpha1.KubeconfigRequest{}, metav1.CreateOptions{})
			if err == nil {
				t.Errorf("kubeconfig of a cluster with no control plane: want an error")
			}
		})
	}

	// With the control plane's admin kubeconfig and CA Secrets in place (the management cluster
	// stands in for the tenant), the typed client gets a kubeconfig minted for the asker.
	tenantNS := fixtureTenantNamespace(t, ns, "json")
	adminConf, err := os.ReadFile(framework.Plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := os.ReadFile(filepath.Join(framework.Plane.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := os.ReadFile(filepath.Join(framework.Plane.Dir, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "json-admin-kubeconfig"}, Data: map[string][]byte{"admin.conf": adminConf}},
		{ObjectMeta: metav1.ObjectMeta{Name: "json-ca"}, Data: map[string][]byte{"ca.crt": caCert, "ca.key": caKey}},
	} {
		if _, err := framework.Plane.Kube.CoreV1().Secrets(tenantNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	client := framework.Plane.Butler.ButlerV1alpha1().TenantClusters(ns)
	tc, err := client.Get(ctx, "json", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tc.Status.KubeconfigSecretRef = &v1alpha1.LocalObjectReference{Name: "json-admin-kubeconfig"}
	tc.Status.TenantNamespace = tenantNS
	if _, err := client.UpdateStatus(ctx, tc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	answer, err := client.CreateKubeconfig(ctx, "json", &v1alpha1.KubeconfigRequest{
		Spec: v1alpha1.KubeconfigRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(answer.Status.Kubeconfig) == string(adminConf) || !strings.HasPrefix(answer.Status.User, "butler:") {
		t.Errorf("the kubeconfig is the stored admin's, or its user %q is not the asker's", answer.Status.User)
	}
	if _, err := clientcmd.RESTConfigFromKubeConfig(answer.Status.Kubeconfig); err != nil {
		t.Errorf("the minted kubeconfig does not load: %v", err)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func newTenantCluster(name string) *v1alpha1.TenantCluster {
	return &v1alpha1.TenantCluster{
		// Paused: the test writes the status the lifecycle controller would.
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{external.TenantClusterPausedAnnotation: "true"}},
		Spec: v1alpha1.TenantClusterSpec{
			KubernetesVersion: "v1.31.4",
			ProviderConfigRef: &v1alpha1.NamespacedObjectReference{Name: "harvester"},
			ControlPlane:      v1alpha1.ControlPlaneSpec{Type: v1alpha1.ControlPlaneHosted},
			Workers: v1alpha1.WorkersSpec{Replicas: 3, MachineTemplate: v1alpha1.MachineTemplate{
				OS: v1alpha1.OSSpec{Type: v1alpha1.OSTalos}}},
			Networking: v1alpha1.NetworkingSpec{PodCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12"},
		},
	}
}

func containsName(items []v1alpha1.TenantCluster, name string) bool {
	for _, item := range items {
		if item.Name == name {
			return true
		}
	}
	return false
}

// expectEvent waits for the next watch event and checks its type and resourceVersion.
func expectEvent(t *testing.T, w watch.Interface, want watch.EventType, resourceVersion string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		obj, isCluster := ev.Object.(*v1alpha1.TenantCluster)
		if ev.Type != want || !isCluster || obj.ResourceVersion != resourceVersion {
			t.Fatalf("watch event %s %T, want %s of resourceVersion %s", ev.Type, ev.Object, want, resourceVersion)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s event within 30s", want)
	}
}
