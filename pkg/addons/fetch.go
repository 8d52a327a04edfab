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
// carrier-grade NAT, unspecified, multicast or otherwise reserved address (IPv4 ones also
// when carried in IPv6: mapped, NAT64, 6to4, Teredo) unless the platform allows that
// host:port. The address is checked where it is dialled, after name resolution, so a name that
// resolves to an internal address (DNS rebinding) and every redirect are refused alike; proxies
// from the environment are not used.
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

// reserved are IPv4 ranges that are not the public internet (IANA's special-purpose registry)
// beyond those netip names: no public chart repository is there, an internal service may be.
var reserved = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
}

// IPv6 forms that carry an IPv4 address (RFC 6052, 3056, 4291).
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64LocalUse  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
	v4Compatible   = netip.MustParsePrefix("::/96")
)

// internal says why an address may not be reached, or "". An IPv6 address that carries an
// IPv4 one (IPv4-mapped, NAT64's well-known prefix, 6to4) is judged by the IPv4 address it
// reaches, so a public address through a NAT64 gateway stays reachable (IPv6-only clusters
// fetch that way) while 10.0.0.1 behind 64:ff9b:: is refused as 10.0.0.1 would be.
func internal(ip netip.Addr) string {
	if v4, form, ok := embeddedIPv4(ip); ok {
		if why := internal(v4); why != "" {
			return form + " of " + v4.String() + ", " + why
		}
		return ""
	}
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
	case nat64LocalUse.Contains(ip):
		// Where the IPv4 address sits depends on the network's own prefix length, so it
		// cannot be read: a local-use prefix is internal, as a unique local address is.
		return "a local-use NAT64 address"
	case v4Compatible.Contains(ip):
		// Deprecated since 2006 and routed nowhere public; refused rather than interpreted.
		return "an IPv4-compatible address"
	}
	for _, r := range reserved {
		if r.prefix.Contains(ip) {
			return r.why
		}
	}
	return ""
}

// embeddedIPv4 is the IPv4 address an IPv6 address reaches through a translator or tunnel,
// where the form fixes its place: IPv4-mapped and NAT64's well-known prefix in the last 32
// bits, 6to4 in bits 16 to 47, Teredo's client (where a relay delivers) inverted in the last 32.
func embeddedIPv4(ip netip.Addr) (netip.Addr, string, bool) {
	if ip.Is4In6() {
		return ip.Unmap(), "an IPv4-mapped address", true
	}
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, "", false
	case nat64WellKnown.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "a NAT64 address", true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "a 6to4 address", true
	case teredo.Contains(ip):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), "a Teredo address", true
	}
	return netip.Addr{}, "", false
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
		case "ssh":
			port = "22"
		default:
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), true
}

// RefusedURL says why the policy refuses rawURL before any name is resolved, or "": its host is
// an internal address written as one (or localhost, which resolves to loopback everywhere, an
// empty host, or a number other than a.b.c.d), and the platform does not allow its host:port.
// For admission, where no fetch is made: a name that resolves to an internal address is refused
// where the fetch is dialled. A URL without a host (an scp-like git@host:path a ratchet kept) is
// refused: what another program makes of it is not what url.Parse does.
func (p FetchPolicy) RefusedURL(rawURL string) string {
	if _, ok := hostPort(rawURL); !ok {
		return "the URL names no host the policy can judge: write it as scheme://host/path"
	}
	hp, host, judge := p.hostToJudge(rawURL)
	if !judge {
		return ""
	}
	if why := writtenInternal(host); why != "" {
		return (&refusal{addr: hp, why: why}).Error()
	}
	return ""
}

// writtenInternal says why a URL's host reaches an internal address as written, before any
// lookup, or "".
func writtenInternal(host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	ip, err := netip.ParseAddr(host)
	switch {
	case host == "":
		return "an empty host, which dials the local system"
	case err == nil:
		return internal(ip.WithZone(""))
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return "a loopback address"
	case endsInNumber(h):
		return "a host written as a number other than a.b.c.d, which resolvers read as different addresses"
	}
	return ""
}

// endsInNumber says whether a host name's last label is a number, decimal or 0x hex: no DNS
// name ends so, and the URL standard and C's inet_aton read such a host as an IPv4 address
// (2130706433, 0177.0.0.1 and 0x7f.1 are 127.0.0.1 to them) where netip reads a name.
func endsInNumber(host string) bool {
	label := host[strings.LastIndexByte(host, '.')+1:]
	if rest, ok := strings.CutPrefix(label, "0x"); ok {
		return !strings.ContainsFunc(rest, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) })
	}
	return label != "" && !strings.ContainsFunc(label, func(r rune) bool { return r < '0' || r > '9' })
}

// hostToJudge is rawURL's host:port and host, and whether the policy judges them: not when the
// URL has no host (RefusedURL refuses it) or the platform allows that host:port.
func (p FetchPolicy) hostToJudge(rawURL string) (hp, host string, judge bool) {
	hp, ok := hostPort(rawURL)
	if !ok || (p.Allowed != nil && p.Allowed(hp)) {
		return "", "", false
	}
	host, _, _ = net.SplitHostPort(hp)
	return hp, host, true
}

// Resolver looks a host name up, as net.Resolver.LookupNetIP does.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// RefusedResolved is RefusedURL after name resolution, for a fetch another program makes (Flux's
// clone of a tenant's repository, in the tenant): refused when any address the host resolves to
// is internal and the host:port is not allowed, or when it does not resolve. The program resolves
// again when it fetches, so a name whose answers change (DNS rebinding) is not stopped here; this
// is the check before butler hands the URL on, not the fetch's own.
func (p FetchPolicy) RefusedResolved(ctx context.Context, rawURL string, lookup Resolver) string {
	if why := p.RefusedURL(rawURL); why != "" {
		return why
	}
	hp, host, judge := p.hostToJudge(rawURL)
	if !judge {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return "" // an address, judged by RefusedURL
	}
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return host + " does not resolve"
	}
	for _, ip := range addrs {
		if why := internal(ip.WithZone("")); why != "" {
			return (&refusal{addr: hp + " (" + ip.String() + ")", why: why}).Error()
		}
	}
	return ""
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
