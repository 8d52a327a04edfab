package plane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// The S3 tests run in make test-s3, which builds SeaweedFS's weed first (hack/build-weed.sh).

const (
	s3AccessKey = "butler-e2e"
	s3SecretKey = "e2e-secret-key-0123456789abcdefghijklmn"
	s3Bucket    = "butler-snapshots"
)

// weedS3 runs SeaweedFS (master, volume, filer and S3 gateway in one process) on loopback with
// one identity, until the test ends, and returns its endpoint and a client of it.
func weedS3(t *testing.T) (string, *minio.Client) {
	t.Helper()
	bin, _ := filepath.Abs(filepath.Join("..", "..", "..", "_output", "bin", "weed"))
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (make test-s3 builds it with hack/build-weed.sh)", bin, err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`{"identities":[{"name":"butler","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","List","Tagging","Write"]}]}`,
		s3AccessKey, s3SecretKey)
	if err := os.WriteFile(filepath.Join(dir, "s3.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := grpcSafePorts(t, 4)
	cmd := exec.Command(bin, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir="+filepath.Join(dir, "data"),
		"-master.port="+strconv.Itoa(ports[0]), "-volume.port="+strconv.Itoa(ports[1]), "-master.volumeSizeLimitMB=64",
		"-filer", "-filer.port="+strconv.Itoa(ports[2]), "-s3", "-s3.port="+strconv.Itoa(ports[3]),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config="+filepath.Join(dir, "s3.json"))
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logFile.Name()); err == nil {
				t.Logf("weed log (tail):\n%s", tail(string(b), 3000))
			}
		}
	})
	endpoint := fmt.Sprintf("127.0.0.1:%d", ports[3])
	client, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return client.MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{}) == nil, nil
	}); err != nil {
		t.Fatalf("weed's S3 gateway did not create bucket %s: %v", s3Bucket, err)
	}
	t.Logf("weed S3 on %s: bucket made %s after start", endpoint, time.Since(start).Round(100*time.Millisecond))
	return "http://" + endpoint, client
}

// grpcSafePorts returns n free loopback ports whose port+10000 (weed's gRPC port for each) is free too.
func grpcSafePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if p+10000 > 65535 {
			continue
		}
		g, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+10000))
		if err != nil {
			continue
		}
		_ = g.Close()
		out = append(out, p)
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// useS3Store points ButlerConfig's snapshot store at the bucket, with its keys in a Secret, until
// the test ends.
func useS3Store(t *testing.T, endpoint, ns string) {
	t.Helper()
	ctx := context.Background()
	if _, err := framework.Plane.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials"},
		Data: map[string][]byte{"accessKeyID": []byte(s3AccessKey), "secretAccessKey": []byte(s3SecretKey)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	configs := framework.Plane.Butler.ButlerV1alpha1().ButlerConfigs()
	store := fmt.Sprintf(`{"spec":{"snapshotStore":{"s3":{"endpoint":%q,"bucket":%q,"prefix":"e2e/","credentialsSecretRef":{"name":"s3-credentials","namespace":%q}}}}}`,
		endpoint, s3Bucket, ns)
	if _, err := configs.Get(ctx, "butler", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		framework.MustApply(t, "apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: ButlerConfig\nmetadata:\n  name: butler\nspec: {}\n")
		t.Cleanup(func() { _ = configs.Delete(context.Background(), "butler", metav1.DeleteOptions{}) })
	}
	if _, err := configs.Patch(ctx, "butler", types.MergePatchType, []byte(store), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = configs.Patch(context.Background(), "butler", types.MergePatchType, []byte(`{"spec":{"snapshotStore":null}}`), metav1.PatchOptions{})
	})
}

// TestS3SnapshotAndRestore: with ButlerConfig's snapshot store in a bucket of a real
// S3-compatible server (SeaweedFS on loopback), a snapshot of a local tenant is uploaded there
// (the object's sha256 is status.checksum; no key in status), the tenant's deleted namespace
// comes back by an in-place restore read from the bucket, and deleting the snapshot deletes the
// object.
func TestS3SnapshotAndRestore(t *testing.T) {
	ctx := context.Background()
	endpoint, s3 := weedS3(t)
	ns := framework.Namespace(t, "e2e-s3")
	useS3Store(t, endpoint, ns)

	localCluster(t, ns, "s3src", framework.PinnedVersion, bootstrap.OSTalos, 0)
	framework.WaitReady(t, ns, "s3src", 0, 4*time.Minute)
	kubeconfig, _ := framework.MintKubeconfig(t, ns, "s3src")
	kube, _, _ := fastClients(t, kubeconfig)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const configMaps = 40
	fillConfigMaps(t, kube, "app", configMaps)

	start := time.Now()
	framework.MustApply(t, fmt.Sprintf("apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: TenantClusterSnapshot\nmetadata: {name: s3src-1, namespace: %s}\nspec: {clusterRef: {name: s3src}}\n", ns))
	snap := waitSnapshot(t, ns, "s3src-1", 2*time.Minute)
	took := time.Since(start)
	key := fmt.Sprintf("e2e/%s/s3src-1-%s.snap", ns, snap.UID)
	if snap.Status.Location != "s3://"+s3Bucket+"/"+key {
		t.Fatalf("location %q, want s3://%s/%s", snap.Status.Location, s3Bucket, key)
	}
	obj, err := s3.GetObject(ctx, s3Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, obj)
	_ = obj.Close()
	if err != nil {
		t.Fatalf("reading the object: %v", err)
	}
	if sum := "sha256:" + hex.EncodeToString(h.Sum(nil)); sum != snap.Status.Checksum || n != snap.Status.Bytes {
		t.Fatalf("object %s: %d bytes %s; status says %d bytes %s", key, n, sum, snap.Status.Bytes, snap.Status.Checksum)
	}
	if raw, _ := framework.Plane.Butler.ButlerV1alpha1().RESTClient().Get().AbsPath("/apis/butler.butlerlabs.dev/v1alpha1/namespaces", ns, "tenantclustersnapshots", "s3src-1").DoRaw(ctx); strings.Contains(string(raw), s3SecretKey) {
		t.Fatal("the snapshot object holds the S3 secret key")
	}
	t.Logf("snapshot in S3: Ready %s after create, %d keys, %d bytes at %s", took.Round(100*time.Millisecond), snap.Status.ObjectCount, n, snap.Status.Location)

	// Roll the cluster back in place from the bucket: the deleted namespace comes back.
	deleteTenantNamespace(t, kube, "app")
	if r, _ := restoreInPlace(t, kube, ns, "s3src", "s3src-1", configMaps); r.Status.Restore.ObjectCount != snap.Status.ObjectCount {
		t.Fatalf("status.restore %+v: not the snapshot's %d objects", r.Status.Restore, snap.Status.ObjectCount)
	}

	// Deleting the snapshot deletes the object.
	framework.MustKubectl(t, "delete", "tcs", "s3src-1", "-n", ns, "--timeout=60s")
	if _, err := s3.StatObject(ctx, s3Bucket, key, minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "NoSuchKey" {
		t.Errorf("the object after the snapshot's delete: %v", err)
	}
}
