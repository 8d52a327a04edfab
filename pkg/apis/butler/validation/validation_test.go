package validation

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fieldErr is what a test asserts of a field.Error: its type and exact path.
type fieldErr struct {
	typ   field.ErrorType
	field string
}

func (e fieldErr) String() string { return fmt.Sprintf("%s (%s)", e.field, e.typ) }

func invalid(path string) fieldErr   { return fieldErr{field.ErrorTypeInvalid, path} }
func required(path string) fieldErr  { return fieldErr{field.ErrorTypeRequired, path} }
func forbidden(path string) fieldErr { return fieldErr{field.ErrorTypeForbidden, path} }
func notSupp(path string) fieldErr   { return fieldErr{field.ErrorTypeNotSupported, path} }
func dup(path string) fieldErr       { return fieldErr{field.ErrorTypeDuplicate, path} }
func tooLong(path string) fieldErr   { return fieldErr{field.ErrorTypeTooLong, path} }
func tooMany(path string) fieldErr   { return fieldErr{field.ErrorTypeTooMany, path} }

// expectErrors asserts that got holds exactly want (as a multiset, in any order).
func expectErrors(t *testing.T, got field.ErrorList, want ...fieldErr) {
	t.Helper()
	gotKeys := make([]string, 0, len(got))
	for _, e := range got {
		gotKeys = append(gotKeys, fieldErr{e.Type, e.Field}.String())
	}
	wantKeys := make([]string, 0, len(want))
	for _, w := range want {
		wantKeys = append(wantKeys, w.String())
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("errors mismatch\n got: %v\nwant: %v\nfull: %v", gotKeys, wantKeys, got.ToAggregate())
	}
}

// expectDetail asserts that the error at path mentions every fragment.
func expectDetail(t *testing.T, errs field.ErrorList, path string, fragments ...string) {
	t.Helper()
	for _, e := range errs {
		if e.Field != path {
			continue
		}
		for _, f := range fragments {
			if !strings.Contains(e.Error(), f) {
				t.Errorf("error at %s = %q, want it to mention %q", path, e.Error(), f)
			}
		}
		return
	}
	t.Errorf("no error at %s in %v", path, errs.ToAggregate())
}

// createCase mutates a valid object and lists the errors its create validator must return.
type createCase[T any] struct {
	name   string
	mutate func(*T)
	want   []fieldErr
}

func runCreateCases[T any](t *testing.T, valid func() *T, validate func(*T) field.ErrorList, cases []createCase[T]) {
	t.Helper()
	t.Run("valid", func(t *testing.T) {
		expectErrors(t, validate(valid()))
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := valid()
			tc.mutate(obj)
			expectErrors(t, validate(obj), tc.want...)
		})
	}
}

// updateCase mutates a copy of a valid stored object and lists the errors of the update.
type updateCase[T any] struct {
	name   string
	mutate func(*T)
	want   []fieldErr
}

func runUpdateCases[T any](t *testing.T, valid func() *T, validate func(obj, old *T) field.ErrorList, cases []updateCase[T]) {
	t.Helper()
	t.Run("unchanged", func(t *testing.T) {
		expectErrors(t, validate(valid(), valid()))
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, old := valid(), valid()
			tc.mutate(obj)
			expectErrors(t, validate(obj, old), tc.want...)
		})
	}
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestParsePrefix(t *testing.T) {
	p := field.NewPath("cidr")
	for _, s := range []string{"10.0.0.0/8", "10.244.0.0/16", "0.0.0.0/0", "fd00::/64", "192.168.1.7/32", "::/0"} {
		if _, errs := parsePrefix(s, p); len(errs) != 0 {
			t.Errorf("parsePrefix(%q) = %v, want valid", s, errs)
		}
	}
	for _, s := range []string{"", "10.0.0.0/33", "10.0.0.0", "10.0.0.5/24", "300.0.0.0/8", "fd00::1/64", "010.0.0.0/8", "fe80::%eth0/64"} {
		if _, errs := parsePrefix(s, p); len(errs) != 1 {
			t.Errorf("parsePrefix(%q) = %v, want one error", s, errs)
		}
	}
	_, errs := parsePrefix("10.0.0.5/24", p)
	expectDetail(t, errs, "cidr", "use 10.0.0.0/24")
}

func TestLastAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.0/24":  "10.0.0.255",
		"10.0.0.0/32":  "10.0.0.0",
		"10.0.0.0/9":   "10.127.255.255",
		"fd00::/64":    "fd00::ffff:ffff:ffff:ffff",
		"0.0.0.0/0":    "255.255.255.255",
		"10.96.0.0/12": "10.111.255.255",
	} {
		if got := lastAddr(netip.MustParsePrefix(in)).String(); got != want {
			t.Errorf("lastAddr(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestParseKubeVersion(t *testing.T) {
	for in, want := range map[string]kubeVersion{
		"v1.30.2":  {1, 30, 2},
		"v1.0.0":   {1, 0, 0},
		"v2.10.11": {2, 10, 11},
	} {
		got, ok := parseKubeVersion(in)
		if !ok || got != want {
			t.Errorf("parseKubeVersion(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "1.30.2", "v1.30", "v1.30.2-rc.1", "v1.30.2+k3s1", "V1.30.2", "v1.30.x", "v99999999999999999999.0.0"} {
		if _, ok := parseKubeVersion(in); ok {
			t.Errorf("parseKubeVersion(%q) accepted, want rejected", in)
		}
	}
}

func TestValidateJSONObject(t *testing.T) {
	p := field.NewPath("values")
	for _, s := range []string{`{}`, `{"a":{"b":[1,2]}}`, ` {"x": true} `, `null`, ``} {
		if errs := validateJSONObject(raw(s), p); len(errs) != 0 {
			t.Errorf("validateJSONObject(%q) = %v, want valid", s, errs)
		}
	}
	if errs := validateJSONObject(nil, p); len(errs) != 0 {
		t.Errorf("validateJSONObject(nil) = %v, want valid", errs)
	}
	for _, s := range []string{`[1,2]`, `"str"`, `42`, `{"a":`, `true`} {
		expectErrors(t, validateJSONObject(raw(s), p), invalid("values"))
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"0123456789ab", 10, "0123456789..."},
		{"ééééé", 3, "é..."}, // never splits a two-byte character
	} {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestValidateURL(t *testing.T) {
	p := field.NewPath("url")
	for _, s := range []string{"https://charts.example.com", "http://10.0.0.1:8080/charts", "oci://ghcr.io/org/charts", "HTTPS://example.com"} {
		expectErrors(t, validateURL(s, chartSchemes, p))
	}
	for _, s := range []string{"ftp://example.com", "charts.example.com", "https://", "oci:ghcr.io", "://x"} {
		expectErrors(t, validateURL(s, chartSchemes, p), invalid("url"))
	}
	expectErrors(t, validateURL("", chartSchemes, p), required("url"))
	expectDetail(t, validateURL("ftp://x", chartSchemes, p), "url", "http://, https:// or oci://")
}

func TestValidateAddrRange(t *testing.T) {
	s, e := field.NewPath("start"), field.NewPath("end")
	cases := []struct {
		start, end string
		want       []fieldErr
	}{
		{"10.0.0.1", "10.0.0.9", nil},
		{"10.0.0.1", "10.0.0.1", nil},
		{"fd00::1", "fd00::ff", nil},
		{"10.0.0.9", "10.0.0.1", []fieldErr{invalid("end")}},
		{"10.0.0.1", "fd00::1", []fieldErr{invalid("end")}},
		{"bogus", "10.0.0.1", []fieldErr{invalid("start")}},
		{"", "", []fieldErr{required("start"), required("end")}},
		{"fe80::1%eth0", "fe80::2", []fieldErr{invalid("start")}},
	}
	for _, tc := range cases {
		_, ok, errs := validateAddrRange(tc.start, tc.end, s, e)
		expectErrors(t, errs, tc.want...)
		if ok != (len(tc.want) == 0) {
			t.Errorf("validateAddrRange(%q, %q) ok = %v", tc.start, tc.end, ok)
		}
	}
}
