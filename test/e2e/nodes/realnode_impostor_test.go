package nodes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"

	"github.com/butlerdotdev/butler-apiserver/test/e2e/framework"
)

// realNodeImpostorKubelet: node's kubelet is dead, and something else in the node's network
// namespace answers at the kubelet's address and port, with a certificate for that address of a
// CA of its own. The tenant's kube-apiserver, which verifies kubelets against the tenant CA,
// reaches it and refuses it: kubectl logs and exec of the node's pod fail on the certificate,
// and no request (nor what a user types into exec) reaches the impostor. Without
// --kubelet-certificate-authority the kube-apiserver would not verify, and the impostor would
// answer.
func realNodeImpostorKubelet(t *testing.T, kubeconfig string, tenant kubernetes.Interface, node, pod string, netns *os.File) {
	t.Helper()
	ip := realNodeIP(t, tenant, node)
	cert := realNodeImpostorCert(t, ip)
	var handshakes, requests atomic.Int32
	l := listenInNetns(t, netns, net.JoinHostPort(ip, "10250"))
	defer l.Close()
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			fmt.Fprintln(w, "the impostor's answer")
		}),
		TLSConfig: &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			handshakes.Add(1)
			return &cert, nil
		}}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	defer srv.Close()
	for _, args := range [][]string{{"logs", pod}, {"exec", pod, "--", "/usr/local/bin/echo", "-say", "a secret typed into exec"}} {
		before := handshakes.Load()
		out, err := framework.KubectlAs(t, kubeconfig, "", args...)
		switch {
		case requests.Load() > 0 || strings.Contains(out, "impostor"):
			t.Errorf("kubectl %s reached an impostor at node %s's kubelet address %s: %v: %s", args[0], node, ip, err, out)
		case err == nil:
			t.Errorf("kubectl %s with an impostor at node %s's kubelet address %s: no error: %s", args[0], node, ip, out)
		case handshakes.Load() == before:
			t.Errorf("kubectl %s never reached the impostor at %s (%v: %s): this proves nothing", args[0], ip, err, out)
		case !strings.Contains(out, "x509") && !strings.Contains(out, "certificate") && !strings.Contains(out, "tls:"):
			t.Errorf("kubectl %s with an impostor at %s: %v: %s; want the kube-apiserver's refusal of its certificate", args[0], ip, err, out)
		default:
			t.Logf("kubectl %s with an impostor at node %s's kubelet address: refused: %s", args[0], node, strings.TrimSpace(out))
		}
	}
}

// realNodeNetns opens the network namespace of the real node of the LocalMachine key
// (namespace/name), from one of its processes (found by the machine's directory in their
// command lines).
func realNodeNetns(t *testing.T, key string) *os.File {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		data, _ := os.ReadFile(f)
		if strings.Contains(string(data), "/machines/"+key+"/") {
			if ns, err := os.Open(filepath.Join(filepath.Dir(f), "ns", "net")); err == nil {
				return ns
			}
		}
	}
	t.Fatalf("found no process of the real node of %s", key)
	return nil
}

// listenInNetns listens at addr in the network namespace netns, and fails the test if it cannot.
func listenInNetns(t *testing.T, netns *os.File, addr string) net.Listener {
	t.Helper()
	l, err := listenInNamespace(netns, addr)
	if err != nil {
		t.Fatalf("listening at %s in the node's network namespace: %v", addr, err)
	}
	return l
}

// listenInNamespace listens at addr in the network namespace netns: from a thread of its own that
// enters the namespace and ends with the goroutine (it stays locked), so no other goroutine
// runs there; the socket stays in the namespace it was made in.
func listenInNamespace(netns *os.File, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(netns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, fmt.Errorf("entering the node's network namespace: %w", err)}
			return
		}
		l, err := net.Listen("tcp", addr)
		done <- result{l, err}
	}()
	r := <-done
	return r.l, r.err
}

// realNodeImpostorCert is a serving certificate for ip of a CA of its own (self-signed).
func realNodeImpostorCert(t *testing.T, ip string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:impostor"},
		IPAddresses: []net.IP{net.ParseIP(ip)}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
