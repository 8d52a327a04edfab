package localports

import (
	"fmt"
	"net"
	"testing"
)

func TestFreeAvoidsEphemeralAndTenants(t *testing.T) {
	eph := Ephemeral()
	for range 200 {
		port, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if eph.Contains(port) || Tenants.Contains(port) || !plane.Contains(port) {
			t.Fatalf("Free gave %d: inside the ephemeral range %s or the tenants' %s", port, eph, Tenants)
		}
	}
}

func TestAvailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if Available(port) {
		t.Fatalf("port %d is listened on, yet Available says it is free", port)
	}
	_, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if !InUse(err) {
		t.Fatalf("InUse(%v) = false for a second bind of one port", err)
	}
}

func TestParseRange(t *testing.T) {
	for in, want := range map[string]Range{"30000-32000": {30000, 32000}, " 1 - 2 ": {1, 2}} {
		if got, err := ParseRange(in); err != nil || got != want {
			t.Errorf("ParseRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5", "2-1", "0-5", "1-70000", "a-b"} {
		if _, err := ParseRange(in); err == nil {
			t.Errorf("ParseRange(%q) accepted", in)
		}
	}
	if !(Range{1, 5}).Overlaps(Range{5, 9}) || (Range{1, 4}).Overlaps(Range{5, 9}) {
		t.Error("Overlaps is wrong at the edges")
	}
}
