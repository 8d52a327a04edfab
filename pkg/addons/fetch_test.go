package addons

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"
)

// get fetches url under p into memory.
func get(ctx context.Context, p FetchPolicy, url string) ([]byte, error) {
	var body bytes.Buffer
	err := p.fetchTo(ctx, p.Client(time.Minute), url, &body)
	return body.Bytes(), err
}

// allowing is a FetchPolicy that allows the test server at url (on loopback).
func allowing(url string) FetchPolicy {
	return FetchPolicy{Allowed: AllowHostPorts([]string{url})}
}

func TestFetchRefusesInternalAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	ctx := context.Background()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, tc := range []struct{ url, want string }{
		{srv.URL + "/index.yaml", "is a loopback address; the platform may allow it by host:port"},
		// A name that resolves to loopback is refused on the address it resolved to.
		{"http://localhost:" + port + "/index.yaml", "is a loopback address"},
		{"http://[::1]:" + port + "/", "is a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "is a link-local address"},
		{"http://10.1.2.3:8080/", "is a private address"},
		{"http://0.0.0.0:" + port + "/", "is an unspecified address"},
	} {
		p := FetchPolicy{}
		_, err := get(ctx, p, tc.url)
		if err == nil || !strings.Contains(err.Error(), "refused: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want refused saying %q", tc.url, err, tc.want)
		}
	}
	// Allowed by host:port, exactly that one.
	p := allowing(srv.URL)
	if data, err := get(ctx, p, srv.URL+"/index.yaml"); err != nil || string(data) != "ok" {
		t.Errorf("the allowed host:port: %q %v", data, err)
	}
}

func TestFetchChecksEveryRedirect(t *testing.T) {
	internalSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("secret")) }))
	defer internalSrv.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internalSrv.URL+"/latest", http.StatusFound)
	}))
	defer front.Close()
	p := allowing(front.URL) // the repository, not where it redirects
	_, err := get(context.Background(), p, front.URL+"/index.yaml")
	if err == nil || !strings.Contains(err.Error(), "is a loopback address") {
		t.Errorf("a redirect to an internal address: %v, want refused", err)
	}
}

// TestFetchStopsAtTheLimit: a server streaming 2 GiB (written as it goes, never held) is cut
// at the limit with a clear error, and the client streams it on (to the disk, in the chart
// cache) instead of holding it.
func TestFetchStopsAtTheLimit(t *testing.T) {
	const size = 2 << 30
	chunk := make([]byte, 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/declared" {
			w.Header().Set("Content-Length", "2147483648")
		}
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	p := allowing(srv.URL)
	p.MaxBytes = 8 << 20
	for _, path := range []string{"/streamed", "/declared"} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		err := p.fetchTo(context.Background(), p.Client(time.Minute), srv.URL+path+"/demo-1.0.0.tgz", io.Discard)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "the download is larger than the limit of 8Mi") {
			t.Fatalf("%s: %v, want the size limit", path, err)
		}
		grown := int64(after.TotalAlloc - before.TotalAlloc)
		t.Logf("%s: stopped after %s, %d MiB allocated in all", path, time.Since(start).Round(time.Millisecond), grown>>20)
		if grown > 4<<20 {
			t.Errorf("%s: %d MiB allocated for a download limited to 8 MiB", path, grown>>20)
		}
	}
}

func TestFetchErrorsSayNoTransportDetail(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	p := allowing(closed)
	_, err = get(context.Background(), p, closed+"/index.yaml")
	if err == nil || err.Error() != "fetching "+closed+"/index.yaml: the server could not be reached" {
		t.Errorf("a closed port: %v", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	p = allowing(srv.URL)
	_, err = get(context.Background(), p, srv.URL+"/index.yaml")
	if err == nil || !strings.HasSuffix(err.Error(), "the server answered 404 Not Found") {
		t.Errorf("404: %v", err)
	}
}

// TestFetchRefusesEveryInternalRange lists each range the policy refuses, IPv4 ones also in
// the IPv6 forms that carry them to an IPv4 network (mapped, NAT64, 6to4, Teredo), and the
// public addresses those forms may still reach.
func TestFetchRefusesEveryInternalRange(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", "a loopback address"},
		{"::1", "a loopback address"},
		{"169.254.169.254", "a link-local address"},
		{"fe80::1", "a link-local address"},
		{"10.1.2.3", "a private address"},
		{"172.16.0.1", "a private address"},
		{"192.168.1.1", "a private address"},
		{"fd00::1", "a private address"},
		{"0.0.0.0", "an unspecified address"},
		{"::", "an unspecified address"},
		{"239.1.2.3", "a multicast address"},
		{"ff05::1", "a multicast address"},
		{"100.64.0.1", "a carrier-grade NAT address"},
		{"0.1.2.3", `a "this network" address`},
		{"192.0.0.170", "an IETF protocol address"},
		{"198.18.0.1", "a benchmarking address"},
		{"198.19.255.254", "a benchmarking address"},
		{"240.0.0.1", "a reserved address"},
		{"255.255.255.255", "a reserved address"},
		{"::ffff:127.0.0.1", "an IPv4-mapped address of 127.0.0.1, a loopback address"},
		{"::ffff:169.254.169.254", "an IPv4-mapped address of 169.254.169.254, a link-local address"},
		{"64:ff9b::10.0.0.1", "a NAT64 address of 10.0.0.1, a private address"},
		{"64:ff9b::169.254.169.254", "a NAT64 address of 169.254.169.254, a link-local address"},
		{"64:ff9b::127.0.0.1", "a NAT64 address of 127.0.0.1, a loopback address"},
		{"64:ff9b:1::a00:1", "a local-use NAT64 address"},
		{"64:ff9b:1:ffff::8.8.8.8", "a local-use NAT64 address"},
		{"2002:a9fe:a9fe::1", "a 6to4 address of 169.254.169.254, a link-local address"},
		{"2002:7f00:1::", "a 6to4 address of 127.0.0.1, a loopback address"},
		{"2002:c0a8:101::1", "a 6to4 address of 192.168.1.1, a private address"},
		{"2001:0:4136:e378:8000:63bf:f5fe:fffe", "a Teredo address of 10.1.0.1, a private address"},
		{"::10.0.0.1", "an IPv4-compatible address"},
		{"::8.8.8.8", "an IPv4-compatible address"},
		// Public, directly or through a translator: allowed.
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::8.8.8.8", ""},
		{"2002:808:808::1", ""},
	} {
		if got := internal(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// RefusedURL is the policy on a URL as written, before any fetch (admission): internal
// addresses written in it and localhost are refused unless their host:port is allowed; names
// are left to the dial.
func TestRefusedURL(t *testing.T) {
	p := FetchPolicy{Allowed: AllowHostPorts([]string{"127.0.0.1:8080", "ssh://10.0.0.5/"})}
	for _, tc := range []struct{ url, want string }{
		{"https://127.0.0.1/fleet.git", "127.0.0.1:443 is a loopback address; the platform may allow it by host:port"},
		{"http://[::1]:3000/fleet.git", "[::1]:3000 is a loopback address"},
		{"https://localhost/fleet.git", "localhost:443 is a loopback address"},
		{"https://git.localhost./fleet.git", "is a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254:80 is a link-local address"},
		{"ssh://git@10.0.0.6/fleet.git", "10.0.0.6:22 is a private address"},
		{"https://[fe80::1%25eth0]/x.git", "is a link-local address"},
		{"https://[::ffff:10.0.0.1]/x.git", "an IPv4-mapped address of 10.0.0.1, a private address"},
		// Allowed by host:port (the test's Git server), that port only.
		{"http://127.0.0.1:8080/fleet.git", ""},
		{"http://127.0.0.1:8081/fleet.git", "127.0.0.1:8081 is a loopback address"},
		{"ssh://git@10.0.0.5/fleet.git", ""},
		// Public, or a name: the dial decides.
		{"https://github.com/example/fleet.git", ""},
		{"https://8.8.8.8/fleet.git", ""},
		{"https://git.internal.example/fleet.git", ""},
		{"not a url", "names no host"},
	} {
		if got := p.RefusedURL(tc.url); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.url, got, tc.want)
		}
	}
}

// RefusedResolved also judges what a name resolves to: a name with any internal answer is
// refused (rebinding through several answers included), unless its host:port is allowed.
func TestRefusedResolved(t *testing.T) {
	answers := map[string][]string{
		"git.example.com":      {"203.0.113.7"},
		"metadata.example.com": {"169.254.169.254"},
		"mixed.example.com":    {"203.0.113.7", "10.0.0.9"},
		"git.test.internal":    {"10.0.0.5"},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range answers[host] {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
	p := FetchPolicy{Allowed: AllowHostPorts([]string{"git.test.internal:443"})}
	for _, tc := range []struct{ url, want string }{
		{"https://git.example.com/fleet.git", ""},
		{"https://metadata.example.com/x.git", "metadata.example.com:443 (169.254.169.254) is a link-local address"},
		{"https://mixed.example.com/x.git", "(10.0.0.9) is a private address"},
		{"https://git.test.internal/fleet.git", ""},
		{"ssh://git@git.test.internal/fleet.git", "git.test.internal:22 (10.0.0.5) is a private address"},
		{"https://nowhere.example.com/x.git", "nowhere.example.com does not resolve"},
		{"https://127.0.0.1/x.git", "127.0.0.1:443 is a loopback address"},
		{"https://203.0.113.9/x.git", ""},
	} {
		if got := p.RefusedResolved(context.Background(), tc.url, lookup); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.url, got, tc.want)
		}
	}
}

// Hosts the policy read as names while a dial reads them as addresses, and URLs it could not
// read at all: an empty host dials the local system (Go's net.Dial of ":443"); a host ending in
// a number is an IPv4 address to the URL standard and C's inet_aton (2130706433, 0177.0.0.1 and
// 0x7f.1 are 127.0.0.1 there), a name to netip; an scp-like address kept by the rules' ratchet
// (`git@host:path`) has no host url.Parse finds, and was allowed unjudged.
func TestAttackRefusedURLReadOtherwise(t *testing.T) {
	p := FetchPolicy{Allowed: AllowHostPorts([]string{"127.0.0.1:8080"})}
	lookup := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
	}
	for _, tc := range []struct{ url, want string }{
		{"https://:443/fleet.git", ":443 is an empty host, which dials the local system"},
		{"ssh://git@:22/fleet.git", "an empty host"},
		{"https://2130706433/fleet.git", "a host written as a number"},
		{"https://0177.0.0.1/fleet.git", "a host written as a number"},
		{"https://0x7f.1/fleet.git", "a host written as a number"},
		{"https://10.0.0.1.:443/fleet.git", "a host written as a number"},
		{"https://git.example.0x0a/fleet.git", "a host written as a number"},
		{"git@10.0.0.1:fleet.git", "names no host"},
		{"not a url", "names no host"},
		// Names that only begin with digits are names; the allowed host:port stays allowed.
		{"https://1password.example.com/fleet.git", ""},
		{"https://git.example.com/fleet.git", ""},
		{"http://127.0.0.1:8080/fleet.git", ""},
	} {
		for name, got := range map[string]string{
			"RefusedURL":      p.RefusedURL(tc.url),
			"RefusedResolved": p.RefusedResolved(context.Background(), tc.url, lookup),
		} {
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s(%s): %q, want %q", name, tc.url, got, tc.want)
			}
		}
	}
}
