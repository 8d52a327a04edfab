package addons

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// DefaultMaxFetchBytes bounds one download (an index, a chart archive, an OCI blob).
const DefaultMaxFetchBytes = 64 << 20

// FetchPolicy is what every fetch butler-apiserver makes for a tenant may reach: a size limit
// on each response body, and no loopback, link-local, private (RFC 1918, unique local),
// carrier-grade NAT, unspecified or multicast address unless the platform allows that
// host:port. The address is checked where it is dialled, after name resolution, so a name
// that resolves to an internal address (DNS rebinding) and every redirect are refused alike;
// proxies from the environment are not used.
type FetchPolicy struct {
	// MaxBytes bounds each response body; DefaultMaxFetchBytes when 0.
	MaxBytes int64
	// Allowed says whether host:port, as the URL names it (a name or an address, with its
	// port or the scheme's default), may be reached though it is internal.
	Allowed func(hostport string) bool
}

// FetchError is a refused or failed fetch, in words fit for status: never a raw transport
// error (those go to the log).
type FetchError struct {
	URL, Reason string
}

func (e *FetchError) Error() string { return fmt.Sprintf("fetching %s: %s", e.URL, e.Reason) }

// refusal is a dial the policy refused.
type refusal struct{ addr, why string }

func (r *refusal) Error() string {
	return fmt.Sprintf("%s is %s; the platform may allow it by host:port", r.addr, r.why)
}

// tooLarge is a body past the size limit.
type tooLarge struct{ limit int64 }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("the download is larger than the limit of %s", resource.NewQuantity(e.limit, resource.BinarySI))
}

func (p FetchPolicy) maxBytes() int64 {
	if p.MaxBytes > 0 {
		return p.MaxBytes
	}
	return DefaultMaxFetchBytes
}

// internal says why an address may not be reached, or "".
func internal(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsUnspecified():
		return "an unspecified address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	case netip.MustParsePrefix("100.64.0.0/10").Contains(ip):
		return "a carrier-grade NAT address"
	}
	return ""
}

// Client returns an HTTP client that fetches under the policy, each request bounded by timeout.
func (p FetchPolicy) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy: nil, // a proxy would dial for us, past the check
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p.Allowed != nil && p.Allowed(addr) {
				return dialer.DialContext(ctx, network, addr)
			}
			d := *dialer
			d.Control = func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return &refusal{addr: address, why: "not an address"}
				}
				if why := internal(ap.Addr()); why != "" {
					return &refusal{addr: addr + " (" + address + ")", why: why}
				}
				return nil
			}
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{Timeout: timeout, Transport: limitBodies{transport, p.maxBytes()}}
}

// limitBodies ends every response body at the limit with an error, for every user of the
// client (the repository fetch and the OCI registry client alike), before it is buffered.
type limitBodies struct {
	next  http.RoundTripper
	limit int64
}

func (l limitBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > l.limit {
		resp.Body.Close()
		return nil, &tooLarge{l.limit}
	}
	resp.Body = &limitedBody{rc: resp.Body, left: l.limit, limit: l.limit}
	return resp, nil
}

type limitedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more than the limit says whether the body goes on.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, &tooLarge{b.limit}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// fetchTo streams url's body under the policy into w, never holding it whole: a download cut
// at the limit has cost a buffer in memory, not the limit. A FetchError when the fetch fails.
func (p FetchPolicy) fetchTo(ctx context.Context, client *http.Client, rawURL string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return &FetchError{URL: rawURL, Reason: "not a valid URL"}
	}
	req.Header.Set("User-Agent", "butler-apiserver")
	resp, err := client.Do(req)
	if err != nil {
		return fetchFailure(ctx, rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &FetchError{URL: rawURL, Reason: "the server answered " + resp.Status}
	}
	dst := &writeErr{w: w}
	if _, err := io.Copy(dst, resp.Body); err != nil {
		if dst.err != nil {
			return dst.err // ours (the disk), not the server's
		}
		return fetchFailure(ctx, rawURL, err)
	}
	return nil
}

// writeErr remembers its writer's error, to tell it from the body's.
type writeErr struct {
	w   io.Writer
	err error
}

func (e *writeErr) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// fetchFailure turns a transport error into a FetchError: the policy's refusals and the size
// limit in their own words, anything else as "could not be reached", logged in full.
func fetchFailure(ctx context.Context, rawURL string, err error) error {
	var r *refusal
	var big *tooLarge
	var ue *url.Error
	switch {
	case errors.As(err, &r):
		return &FetchError{URL: rawURL, Reason: "refused: " + r.Error()}
	case errors.As(err, &big):
		return &FetchError{URL: rawURL, Reason: big.Error()}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ue) && ue.Timeout():
		return &FetchError{URL: rawURL, Reason: "timed out"}
	case errors.Is(err, context.Canceled):
		return err
	}
	klog.FromContext(ctx).V(2).Info("Fetch failed", "url", rawURL, "err", err)
	return &FetchError{URL: rawURL, Reason: "the server could not be reached"}
}

// hostPort is a URL's host:port, with the scheme's default port.
func hostPort(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		default:
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), true
}

// AllowHostPorts is an Allowed over a fixed list of host:port (URLs are taken for their
// host:port too).
func AllowHostPorts(list []string) func(string) bool {
	set := map[string]bool{}
	for _, s := range list {
		if strings.Contains(s, "://") {
			if hp, ok := hostPort(s); ok {
				s = hp
			}
		}
		set[s] = true
	}
	return func(hp string) bool { return set[hp] }
}
