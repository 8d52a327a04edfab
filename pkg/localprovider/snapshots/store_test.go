package snapshots

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/snapshot"
)

// An S3 store is made from its Secret on use; a Secret that is missing or lacks a key is an
// error that names the Secret and the keys, never a key's value.
func TestS3StoreFromSecret(t *testing.T) {
	ctx := context.Background()
	const secretValue = "do-not-print-me"
	kube := fake.NewSimpleClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: "butler-system"},
			Data: map[string][]byte{accessKeyIDKey: []byte("id"), secretAccessKeyKey: []byte(secretValue)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "half", Namespace: "butler-system"},
			Data: map[string][]byte{accessKeyIDKey: []byte(secretValue)}})
	c := &Controller{deps: &controllerkit.Deps{Kube: kube}}
	store := func(secret string) *v1alpha1.S3SnapshotStore {
		return &v1alpha1.S3SnapshotStore{Endpoint: "http://127.0.0.1:8333", Bucket: "snapshots", Prefix: "butler/",
			CredentialsSecretRef: v1alpha1.NamespacedObjectReference{Name: secret, Namespace: "butler-system"}}
	}
	st, err := c.s3Store(ctx, store("s3"))
	if err != nil {
		t.Fatal(err)
	}
	if s3, ok := st.(*snapshot.S3); !ok || s3.Bucket != "snapshots" || st.Location("team-a/x") != "s3://snapshots/butler/team-a/x.snap" {
		t.Fatalf("store %#v at %s", st, st.Location("team-a/x"))
	}
	for _, name := range []string{"missing", "half"} {
		_, err := c.s3Store(ctx, store(name))
		if err == nil || !strings.Contains(err.Error(), "butler-system/"+name) || strings.Contains(err.Error(), secretValue) {
			t.Errorf("Secret %s: %v", name, err)
		}
	}
}
