// Package validation checks butler.butlerlabs.dev objects before they are stored.
//
// Validators run on internal objects after defaulting and return every problem at once, with
// field paths that match the JSON a user wrote (spec.networking.podCIDR, spec.access.users[1].name).
// Enum fields that have a default accept the empty string as "use the default": the defaulter
// fills them in before validation, so accepting "" never lets a bad value through, and it keeps
// objects built in code (tests, the registry's own writes) from failing on fields nobody set.
package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// providerTypes is shared by ProviderConfig.spec.provider and Team allowedProviders.
var providerTypes = sets.New(
	butler.ProviderHarvester, butler.ProviderNutanix, butler.ProviderProxmox,
	butler.ProviderAWS, butler.ProviderAzure, butler.ProviderGCP, butler.ProviderLocal,
)

// validateEnum reports value as NotSupported unless allowed has it; the supported values are
// listed sorted so the message is stable.
func validateEnum[T ~string](value T, allowed sets.Set[T], fldPath *field.Path) field.ErrorList {
	if allowed.Has(value) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, string(value), sets.List(allowed))}
}

// validateOptionalEnum is validateEnum for fields where empty means "the default".
func validateOptionalEnum[T ~string](value T, allowed sets.Set[T], fldPath *field.Path) field.ErrorList {
	if value == "" {
		return nil
	}
	return validateEnum(value, allowed, fldPath)
}

// validateRequiredEnum is validateEnum for fields with no default.
func validateRequiredEnum[T ~string](value T, allowed sets.Set[T], fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "must be one of "+quotedList(sets.List(allowed)))}
	}
	return validateEnum(value, allowed, fldPath)
}

func quotedList[T ~string](values []T) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(string(v))
	}
	return strings.Join(quoted, ", ")
}

// validateMinimum reports value if it is below minimum.
func validateMinimum[T int32 | int64](value, minimum T, fldPath *field.Path) field.ErrorList {
	if value >= minimum {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, value, fmt.Sprintf("must be greater than or equal to %d", minimum))}
}

// validateOptionalMinimum is validateMinimum for optional (pointer) fields.
func validateOptionalMinimum(value *int32, minimum int32, fldPath *field.Path) field.ErrorList {
	if value == nil {
		return nil
	}
	return validateMinimum(*value, minimum, fldPath)
}

// validateNonNegativeQuantity accepts nil and quantities >= 0.
func validateNonNegativeQuantity(q *resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q == nil || q.Sign() >= 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, q.String(), "must be greater than or equal to 0")}
}

// validatePositiveQuantity accepts nil and quantities > 0.
func validatePositiveQuantity(q *resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q == nil || q.Sign() > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, q.String(), "must be greater than 0")}
}

// validateName reports an empty name as Required and otherwise every message of nameFn.
func validateName(name string, nameFn func(string) []string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range nameFn(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// validateDNSLabel requires a DNS-1123 label: namespaces, Team names, Helm release names.
func validateDNSLabel(name string, fldPath *field.Path) field.ErrorList {
	return validateName(name, utilvalidation.IsDNS1123Label, fldPath)
}

// validateDNSSubdomain requires a DNS-1123 subdomain, the name rule of most objects.
func validateDNSSubdomain(name string, fldPath *field.Path) field.ErrorList {
	return validateName(name, utilvalidation.IsDNS1123Subdomain, fldPath)
}

// validateOptionalDNSLabel accepts "" and otherwise requires a DNS-1123 label.
func validateOptionalDNSLabel(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return nil
	}
	return validateDNSLabel(name, fldPath)
}

// validateLocalRef checks a reference by name; nameFn is the name rule of the referenced kind.
func validateLocalRef(ref *butler.LocalObjectReference, nameFn func(string) []string, fldPath *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	return validateName(ref.Name, nameFn, fldPath.Child("name"))
}

// validateNamespacedRef checks a reference whose namespace, when set, must be a namespace name.
func validateNamespacedRef(ref *butler.NamespacedObjectReference, nameFn func(string) []string, fldPath *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	allErrs := validateName(ref.Name, nameFn, fldPath.Child("name"))
	allErrs = append(allErrs, validateOptionalDNSLabel(ref.Namespace, fldPath.Child("namespace"))...)
	return allErrs
}

// requireString reports a blank required string field.
func requireString(value string, fldPath *field.Path) field.ErrorList {
	if strings.TrimSpace(value) == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return nil
}

// validateNonEmptyStrings requires every entry of a string list to be non-blank.
func validateNonEmptyStrings(values []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, v := range values {
		if strings.TrimSpace(v) == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i), "must not be empty"))
		}
	}
	return allErrs
}

// validateUniqueStrings reports the second and later occurrences of a value as Duplicate.
func validateUniqueStrings(values []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, v := range values {
		if v == "" {
			continue
		}
		if seen.Has(v) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), v))
		}
		seen.Insert(v)
	}
	return allErrs
}

// validateJSONObject requires free-form values to be a JSON object, as Helm values are a map.
func validateJSONObject(raw *runtime.RawExtension, fldPath *field.Path) field.ErrorList {
	if raw == nil {
		return nil
	}
	data := bytes.TrimSpace(raw.Raw)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil // same as unset
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return field.ErrorList{field.Invalid(fldPath, truncate(string(data), 64), "must be a JSON object")}
	}
	return nil
}

// truncate shortens s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := 0
	for i := range s {
		if i > n {
			break
		}
		cut = i
	}
	return s[:cut] + "..."
}

// validateURL requires an absolute URL with a host and one of schemes.
func validateURL(s string, schemes sets.Set[string], fldPath *field.Path) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	detail := "must be a " + schemeList(schemes) + " URL"
	u, err := url.Parse(s)
	if err != nil || !schemes.Has(u.Scheme) || u.Host == "" {
		return field.ErrorList{field.Invalid(fldPath, s, detail)}
	}
	return nil
}

func schemeList(schemes sets.Set[string]) string {
	list := sets.List(schemes)
	for i := range list {
		list[i] += "://"
	}
	if len(list) == 1 {
		return list[0]
	}
	return strings.Join(list[:len(list)-1], ", ") + " or " + list[len(list)-1]
}

var (
	httpSchemes  = sets.New("http", "https")
	chartSchemes = sets.New("http", "https", "oci")
)

// parseAddr parses a single IP address. Zones (fe80::1%eth0) are rejected: they name an
// interface, not an address that can be handed out or routed.
func parseAddr(s string, fldPath *field.Path) (netip.Addr, field.ErrorList) {
	if s == "" {
		return netip.Addr{}, field.ErrorList{field.Required(fldPath, "")}
	}
	addr, err := netip.ParseAddr(s)
	if err != nil || addr.Zone() != "" {
		return netip.Addr{}, field.ErrorList{field.Invalid(fldPath, s, "must be a valid IPv4 or IPv6 address")}
	}
	return addr, nil
}

// parsePrefix parses a CIDR and requires its canonical form: 10.0.0.5/24 most likely means
// 10.0.0.0/24, and saying so beats silently masking what the user wrote.
func parsePrefix(s string, fldPath *field.Path) (netip.Prefix, field.ErrorList) {
	if s == "" {
		return netip.Prefix{}, field.ErrorList{field.Required(fldPath, "")}
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, field.ErrorList{field.Invalid(fldPath, s, "must be a valid CIDR such as 10.0.0.0/16 or fd00::/64")}
	}
	if masked := prefix.Masked(); masked != prefix {
		return netip.Prefix{}, field.ErrorList{field.Invalid(fldPath, s, fmt.Sprintf("must be the network address of the prefix: use %s", masked))}
	}
	return prefix, nil
}

func family(addr netip.Addr) string {
	if addr.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// lastAddr is the highest address of a prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for bit := p.Bits(); bit < len(b)*8; bit++ {
		b[bit/8] |= 0x80 >> (bit % 8)
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr
}

// addrRange is an inclusive range of addresses of one family.
type addrRange struct {
	start, end netip.Addr
}

func (r addrRange) overlaps(o addrRange) bool {
	return r.start.Compare(o.end) <= 0 && o.start.Compare(r.end) <= 0
}

func (r addrRange) String() string {
	return r.start.String() + "-" + r.end.String()
}

func prefixRange(p netip.Prefix) addrRange {
	return addrRange{start: p.Masked().Addr(), end: lastAddr(p)}
}

// validateAddrRange parses an inclusive start/end pair of one family with start <= end.
// ok is false when the pair cannot be used for further checks.
func validateAddrRange(start, end string, startPath, endPath *field.Path) (addrRange, bool, field.ErrorList) {
	s, allErrs := parseAddr(start, startPath)
	e, endErrs := parseAddr(end, endPath)
	allErrs = append(allErrs, endErrs...)
	if len(allErrs) > 0 {
		return addrRange{}, false, allErrs
	}
	if s.Is4() != e.Is4() {
		return addrRange{}, false, field.ErrorList{field.Invalid(endPath, end, fmt.Sprintf("must be the same IP family as start (%s)", family(s)))}
	}
	if e.Less(s) {
		return addrRange{}, false, field.ErrorList{field.Invalid(endPath, end, fmt.Sprintf("must not be before start (%s)", start))}
	}
	return addrRange{start: s, end: e}, true, nil
}

// kubeVersion is a parsed vMAJOR.MINOR.PATCH.
type kubeVersion struct {
	major, minor, patch int
}

func (v kubeVersion) compare(o kubeVersion) int {
	switch {
	case v.major != o.major:
		return v.major - o.major
	case v.minor != o.minor:
		return v.minor - o.minor
	default:
		return v.patch - o.patch
	}
}

func (v kubeVersion) String() string {
	return fmt.Sprintf("v%d.%d.%d", v.major, v.minor, v.patch)
}

var kubeVersionRE = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)

// parseKubeVersion parses vMAJOR.MINOR.PATCH; numbers too large for an int are not versions.
func parseKubeVersion(s string) (kubeVersion, bool) {
	m := kubeVersionRE.FindStringSubmatch(s)
	if m == nil {
		return kubeVersion{}, false
	}
	var parts [3]int
	for i := range parts {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return kubeVersion{}, false
		}
		parts[i] = n
	}
	return kubeVersion{major: parts[0], minor: parts[1], patch: parts[2]}, true
}

// validateKubeVersion requires a vMAJOR.MINOR.PATCH version.
func validateKubeVersion(s string, fldPath *field.Path) (kubeVersion, field.ErrorList) {
	if s == "" {
		return kubeVersion{}, field.ErrorList{field.Required(fldPath, "must be vMAJOR.MINOR.PATCH, e.g. v1.30.2")}
	}
	v, ok := parseKubeVersion(s)
	if !ok {
		return kubeVersion{}, field.ErrorList{field.Invalid(fldPath, s, "must be vMAJOR.MINOR.PATCH, e.g. v1.30.2")}
	}
	return v, nil
}
