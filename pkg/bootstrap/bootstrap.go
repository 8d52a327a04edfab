package bootstrap

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// OS names the bootstrap data of an operating system; it is the value of a BootstrapConfig's
// spec.os.type and of the data Secret's OSAnnotation.
type OS string

const (
	OSTalos        OS = "talos"
	OSRocky        OS = "rocky"
	OSFlatcar      OS = "flatcar"
	OSBottlerocket OS = "bottlerocket"
	OSKairos       OS = "kairos"
)

// OSes lists every supported format.
var OSes = []OS{OSTalos, OSRocky, OSFlatcar, OSBottlerocket, OSKairos}

// OSAnnotation on the data Secret names the OS the data was rendered for. Infrastructure
// providers read DataFormatKey instead; the annotation is for people and the local machines.
const OSAnnotation = "bootstrap.butlerlabs.dev/os"

// The data Secret's keys, per Cluster API's bootstrap contract: the data, and how an
// infrastructure provider must deliver it.
const (
	DataValueKey  = "value"
	DataFormatKey = "format"
)

// DataFormat is Cluster API's bootstrap data format (bootstrapv1.Format): the providers read it
// from DataFormatKey and treat a missing one as cloud-config (CAPA's UseIgnition, CAPV, CAPMOX).
// Ignition data needs the provider's Ignition delivery (CAPA's spec.ignition, for one); anything
// else is handed to the machine as plain user data.
type DataFormat string

const (
	DataFormatCloudConfig DataFormat = "cloud-config"
	DataFormatIgnition    DataFormat = "ignition"
)

// DataFormat is how the OS's first-boot agent takes its data: Flatcar's Ignition reads an
// Ignition config; cloud-init (rocky), Kairos' agent, Talos' machined and Bottlerocket's
// early-boot settings read plain user data, which the contract calls cloud-config.
func (os OS) DataFormat() DataFormat {
	if os == OSFlatcar {
		return DataFormatIgnition
	}
	return DataFormatCloudConfig
}

// SecretDataFormat is the data Secret's format as a provider reads it: cloud-config when unset.
func SecretDataFormat(s *corev1.Secret) DataFormat {
	if f := DataFormat(s.Data[DataFormatKey]); f != "" {
		return f
	}
	return DataFormatCloudConfig
}

// DefaultClusterDomain is used when Input.ClusterDomain is empty.
const DefaultClusterDomain = "cluster.local"

// Input is everything a renderer needs to let one machine join one tenant cluster.
type Input struct {
	// ClusterName is the tenant cluster's name (Talos, Bottlerocket).
	ClusterName string
	// Endpoint is the tenant API server as host:port.
	Endpoint string
	// Token is a bootstrap token <id>.<secret>.
	Token string
	// CACert is the tenant cluster CA certificate, PEM.
	CACert []byte
	// NodeName is the name the Node registers with.
	NodeName string
	// KubernetesVersion (v1.36.3) picks the kubeadm API version and the Talos kubelet image.
	KubernetesVersion string
	NodeLabels        map[string]string
	NodeTaints        []corev1.Taint
	// ClusterDNS is the cluster DNS service IP; ClusterDomain defaults to cluster.local.
	ClusterDNS    string
	ClusterDomain string
	PodCIDR       string
	ServiceCIDR   string
	// ProviderID, when set, is registered on the Node (spec.providerID); CAPI matches the
	// Machine by it.
	ProviderID string
}

// JoinInfo is what a joining kubelet takes from the bootstrap data.
type JoinInfo struct {
	Format   OS
	Endpoint string
	Token    string
	// CACert is the cluster CA when the format carries it (talos, bottlerocket).
	CACert []byte
	// CACertHashes are kubeadm CA pins (sha256:<hex of the SubjectPublicKeyInfo>) when the
	// format carries pins instead (rocky, flatcar, kairos).
	CACertHashes      []string
	NodeName          string
	NodeLabels        map[string]string
	NodeTaints        []corev1.Taint
	ProviderID        string
	ClusterDNS        []string
	ClusterDomain     string
	KubernetesVersion string
	// KubeadmAPIVersion is the kubeadm API of the JoinConfiguration (rocky, flatcar, kairos):
	// only a kubeadm that knows it can join with the data (see KubeadmReads).
	KubeadmAPIVersion string
}

var tokenRE = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// ValidToken reports whether s is a bootstrap token in kubeadm's format.
func ValidToken(s string) bool { return tokenRE.MatchString(s) }

// ErrInvalidInput wraps every validation error from Render, so callers can tell bad input
// (a condition for the user) from a rendering fault.
var ErrInvalidInput = errors.New("invalid bootstrap input")

func (in *Input) validate() error {
	var errs []error
	if in.Endpoint == "" {
		errs = append(errs, errors.New("endpoint is required"))
	} else if err := validEndpoint(in.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if in.Token == "" {
		errs = append(errs, errors.New("token is required"))
	} else if !ValidToken(in.Token) {
		errs = append(errs, errors.New("token is not of the form [a-z0-9]{6}.[a-z0-9]{16}"))
	}
	if len(in.CACert) == 0 {
		errs = append(errs, errors.New("CA certificate is required"))
	} else if _, err := parseCert(in.CACert); err != nil {
		errs = append(errs, err)
	}
	if in.NodeName == "" {
		errs = append(errs, errors.New("node name is required"))
	}
	if in.KubernetesVersion == "" {
		errs = append(errs, errors.New("kubernetes version is required"))
	} else if _, err := version.ParseSemantic(in.KubernetesVersion); err != nil {
		errs = append(errs, fmt.Errorf("kubernetes version %q: %w", in.KubernetesVersion, err))
	}
	if in.ClusterDNS != "" && net.ParseIP(in.ClusterDNS) == nil {
		errs = append(errs, fmt.Errorf("clusterDNS %q is not an IP address", in.ClusterDNS))
	}
	for _, c := range []string{in.PodCIDR, in.ServiceCIDR} {
		for _, cidr := range splitList(c) {
			if _, _, err := net.ParseCIDR(cidr); err != nil {
				errs = append(errs, fmt.Errorf("CIDR %q: %w", cidr, err))
			}
		}
	}
	for _, t := range in.NodeTaints {
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Key, t.Effect))
		}
		if t.Key == "" {
			errs = append(errs, errors.New("taint with an empty key"))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidInput, errors.Join(errs...))
	}
	return nil
}

func validEndpoint(ep string) error {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return fmt.Errorf("endpoint %q is not host:port: %w", ep, err)
	}
	if host == "" {
		return fmt.Errorf("endpoint %q has no host", ep)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("endpoint %q: port is not 1-65535", ep)
	}
	return nil
}

func (in *Input) clusterDomain() string {
	if in.ClusterDomain == "" {
		return DefaultClusterDomain
	}
	return in.ClusterDomain
}

// Render renders the bootstrap data of one OS. Invalid input is an error wrapping
// ErrInvalidInput, never empty output.
func Render(os OS, in Input) ([]byte, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	switch os {
	case OSTalos:
		return renderTalos(&in)
	case OSRocky:
		return renderRocky(&in)
	case OSFlatcar:
		return renderFlatcar(&in)
	case OSBottlerocket:
		return renderBottlerocket(&in)
	case OSKairos:
		return renderKairos(&in)
	}
	return nil, fmt.Errorf("%w: unknown OS %q (want one of %v)", ErrInvalidInput, os, OSes)
}

// Parse reads bootstrap data of one OS back into what a joining kubelet uses. It fails when
// the data lacks an endpoint, a token, or a CA or CA pin.
func Parse(os OS, data []byte) (JoinInfo, error) {
	var (
		info JoinInfo
		err  error
	)
	switch os {
	case OSTalos:
		info, err = parseTalos(data)
	case OSRocky:
		info, err = parseRocky(data)
	case OSFlatcar:
		info, err = parseFlatcar(data)
	case OSBottlerocket:
		info, err = parseBottlerocket(data)
	case OSKairos:
		info, err = parseKairos(data)
	default:
		return JoinInfo{}, fmt.Errorf("unknown bootstrap format %q", os)
	}
	if err != nil {
		return JoinInfo{}, fmt.Errorf("%s bootstrap data: %w", os, err)
	}
	info.Format = os
	if err := info.complete(); err != nil {
		return JoinInfo{}, fmt.Errorf("%s bootstrap data: %w", os, err)
	}
	return info, nil
}

func (j *JoinInfo) complete() error {
	var errs []error
	if j.Endpoint == "" {
		errs = append(errs, errors.New("no API server endpoint"))
	} else if err := validEndpoint(j.Endpoint); err != nil {
		errs = append(errs, err)
	}
	if !ValidToken(j.Token) {
		errs = append(errs, fmt.Errorf("no valid bootstrap token (got %q)", redact(j.Token)))
	}
	if len(j.CACert) == 0 && len(j.CACertHashes) == 0 {
		errs = append(errs, errors.New("neither a CA certificate nor a CA pin"))
	}
	if j.NodeName == "" {
		errs = append(errs, errors.New("no node name"))
	}
	return errors.Join(errs...)
}

// VerifyCA checks a CA certificate (PEM) the machine obtained, or was given, against the data:
// equal to the carried CA, or matching one of the carried pins, as kubeadm's discovery does.
func (j *JoinInfo) VerifyCA(caPEM []byte) error {
	cert, err := parseCert(caPEM)
	if err != nil {
		return err
	}
	if len(j.CACert) > 0 {
		carried, err := parseCert(j.CACert)
		if err != nil {
			return fmt.Errorf("carried CA: %w", err)
		}
		if !carried.Equal(cert) {
			return errors.New("CA certificate differs from the one in the bootstrap data")
		}
	}
	if len(j.CACertHashes) > 0 {
		pin := CAPinOf(cert)
		if !slices.Contains(j.CACertHashes, pin) {
			return fmt.Errorf("CA pin %s matches none of %v", pin, j.CACertHashes)
		}
	}
	return nil
}

// CAPin returns kubeadm's pin of a CA certificate (PEM): sha256:<hex of its
// SubjectPublicKeyInfo>, the value of --discovery-token-ca-cert-hash.
func CAPin(caPEM []byte) (string, error) {
	cert, err := parseCert(caPEM)
	if err != nil {
		return "", err
	}
	return CAPinOf(cert), nil
}

// CAPinOf is CAPin of a parsed certificate.
func CAPinOf(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func parseCert(pemBytes []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("CA certificate is not a PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	return cert, nil
}

func redact(token string) string {
	if id, _, ok := strings.Cut(token, "."); ok {
		return id + ".<redacted>"
	}
	if token == "" {
		return ""
	}
	return "<redacted>"
}

// splitList splits a comma-separated list (dual-stack CIDRs), dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// labelsArg renders labels as the kubelet's --node-labels value, sorted.
func labelsArg(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

func parseLabelsArg(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("node label %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// taintValue is "value:Effect", the form Talos and Bottlerocket use per key.
func taintValue(t corev1.Taint) string { return t.Value + ":" + string(t.Effect) }

func parseTaintValue(key, s string) (corev1.Taint, error) {
	t := corev1.Taint{Key: key}
	if v, eff, ok := strings.Cut(s, ":"); ok {
		t.Value, t.Effect = v, corev1.TaintEffect(eff)
	} else {
		t.Effect = corev1.TaintEffect(s)
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return t, nil
	}
	return t, fmt.Errorf("taint %s=%q: unknown effect %q", key, s, t.Effect)
}

// sortTaints orders taints by key, then effect, so map-based formats parse back to a stable order.
func sortTaints(ts []corev1.Taint) {
	slices.SortFunc(ts, func(a, b corev1.Taint) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(string(a.Effect), string(b.Effect))
	})
}
