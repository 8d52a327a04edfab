package controllerkit

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// A namespace put to sleep is not watched: its lister holds nothing and Watching says so, so
// readers ask the API server; woken, it is watched again. A namespace asleep before Start stays
// unwatched, and one that goes is forgotten, asleep or not.
func TestTenantSecretsSleepAndWake(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod-1234", Labels: map[string]string{external.TenantClusterLabel: "prod"}}}
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev-5678", Labels: map[string]string{external.TenantClusterLabel: "dev"}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prod-admin-kubeconfig", Namespace: ns.Name},
		Data: map[string][]byte{"admin.conf": []byte("x"), "tls.key": []byte("private")}}
	kube := kubefake.NewSimpleClientset(ns, other, secret)
	d := NewDeps(nil, kube, nil, nil)
	secrets := d.TenantSecrets()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The namespace informer has seen both before Start; dev sleeps before its watch starts.
	d.KubeInformersFor(external.TenantClusterLabel).Start(ctx.Done())
	d.KubeInformersFor(external.TenantClusterLabel).WaitForCacheSync(ctx.Done())
	secrets.Sleep(other.Name)
	secrets.Start(ctx.Done())
	waitFor("prod watched", func() bool { return secrets.Watching(ns.Name) })
	got, err := secrets.Secrets(ns.Name).Get(secret.Name)
	if err != nil || len(got.Data["tls.key"]) != 0 || string(got.Data["admin.conf"]) != "x" {
		t.Fatalf("cached Secret %+v, %v (private keys dropped, the rest kept)", got, err)
	}
	if secrets.Watching(other.Name) {
		t.Error("a namespace asleep before Start is watched")
	}

	secrets.Sleep(ns.Name)
	if secrets.Watching(ns.Name) {
		t.Error("a namespace asleep is watched")
	}
	if _, err := secrets.Secrets(ns.Name).Get(secret.Name); !apierrors.IsNotFound(err) {
		t.Errorf("the lister of a namespace asleep: %v", err)
	}
	secrets.Wake(ns.Name)
	waitFor("prod watched again", func() bool { return secrets.Watching(ns.Name) })
	if _, err := secrets.Secrets(ns.Name).Get(secret.Name); err != nil {
		t.Errorf("after the wake: %v", err)
	}
	secrets.Wake(other.Name)
	waitFor("dev watched once woken", func() bool { return secrets.Watching(other.Name) })

	secrets.Sleep(other.Name)
	secrets.forget(other.Name)
	secrets.Wake(other.Name)
	if secrets.Watching(other.Name) {
		t.Error("a namespace gone is watched after a wake")
	}
}
