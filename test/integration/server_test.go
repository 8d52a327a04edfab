// Package integration starts butler-apiserver in-process, standalone on an embedded etcd in a
// temporary directory, and drives it through the generated clientset.
package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/butlerdotdev/butler-apiserver/cmd/butler-apiserver/app"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

// testServer is one running butler-apiserver.
type testServer struct {
	Config  *rest.Config
	Client  clientset.Interface
	DataDir string
	// EtcdURL is the embedded etcd's client URL.
	EtcdURL string
	stop    func() error
}

// start runs a standalone server on dataDir and waits until it is ready; configure, if any,
// changes its options first.
func start(dataDir string, out io.Writer, configure ...func(*app.Options)) (*testServer, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	opts := app.NewOptions()
	opts.Standalone = true
	opts.DataDir = dataDir
	opts.Out = out
	opts.Recommended.SecureServing.Listener = listener
	opts.Recommended.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	for _, c := range configure {
		c(opts)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, opts) }()

	var once sync.Once
	var stopErr error
	s := &testServer{DataDir: dataDir}
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(stopLimit):
				// Who still runs, for the failure's reader.
				_ = pprof.Lookup("goroutine").WriteTo(out, 1)
				stopErr = fmt.Errorf("server in %s did not stop within %s", dataDir, stopLimit)
			}
		})
		return stopErr
	}

	kubeconfig := filepath.Join(dataDir, app.AdminKubeconfigFile)
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true,
		func(ctx context.Context) (bool, error) {
			select {
			case err := <-done:
				return false, fmt.Errorf("server exited before it was ready: %v", err)
			default:
			}
			if _, err := os.Stat(kubeconfig); err != nil {
				return false, nil
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return false, err
			}
			client, err := clientset.NewForConfig(cfg)
			if err != nil {
				return false, err
			}
			body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			if err != nil || string(body) != "ok" {
				return false, nil
			}
			s.Config, s.Client = cfg, client
			// Run set it before serving.
			s.EtcdURL = opts.Recommended.Etcd.StorageConfig.Transport.ServerList[0]
			return true, nil
		})
	if err != nil {
		_ = s.stop()
		return nil, fmt.Errorf("server in %s not ready: %w", dataDir, err)
	}
	return s, nil
}

// stopLimit bounds a server's stop: above the generic server's own bound on its HTTP server's
// shutdown (60 s, the request timeout), which a stop under load was seen to reach (RunWithContext
// waiting for the HTTP server while two integration suites and a build shared two cores).
const stopLimit = 90 * time.Second

// startServer runs a server of the test's own, stopped when the test ends.
func startServer(t *testing.T, dataDir string, configure ...func(*app.Options)) *testServer {
	t.Helper()
	s, err := start(dataDir, testWriter{t}, configure...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Stop shuts the server down and waits for it, etcd included.
func (s *testServer) Stop() error { return s.stop() }

// shared is one server for the tests that need no restart; each of them works in its own
// namespace or with its own names.
var shared *testServer

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "butler-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared, err = start(dir, io.Discard)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := shared.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// decoder reads the example manifests into v1alpha1 objects.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// readManifest decodes one YAML manifest from the repository into obj.
func readManifest(t *testing.T, path string, obj runtime.Object) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := decoder.Decode(data, nil, obj); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
