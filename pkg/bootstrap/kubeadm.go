package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// The kubeadm JoinConfiguration written for rocky, flatcar and kairos. kubeadm's own types
// live in k8s.io/kubernetes (not importable as a library), so these mirror the fields we set
// of kubeadm.k8s.io/v1beta3 and v1beta4, the way CAPI's kubeadm provider keeps its
// upstreamv1beta3/4 copies.

const (
	kubeadmV1beta3 = "kubeadm.k8s.io/v1beta3"
	kubeadmV1beta4 = "kubeadm.k8s.io/v1beta4"

	// Where rocky (as CAPI writes it) and flatcar put the join configuration and patches.
	kubeadmJoinConfigPath = "/run/kubeadm/kubeadm-join-config.yaml"
	kubeadmPatchesDir     = "/run/kubeadm/patches"
	// The kubelet configuration patch: target kubeletconfiguration (kubeadm >= 1.25), a JSON
	// merge patch so clusterDNS is replaced whole.
	kubeletPatchFile = "kubeletconfiguration+merge.yaml"
)

// kubeadmSince is the kubeadm minor that first reads each configuration API.
var kubeadmSince = map[string]*version.Version{
	kubeadmV1beta3: version.MajorMinor(1, 22),
	kubeadmV1beta4: version.MajorMinor(1, 31),
}

// kubeadmAPIVersion: v1beta4 from Kubernetes 1.31 (pre-releases included), v1beta3 before;
// the rule of CAPI's kubeadm provider.
func kubeadmAPIVersion(k8sVersion string) string {
	v, err := version.ParseSemantic(k8sVersion)
	if since := kubeadmSince[kubeadmV1beta4]; err == nil && v.Major() == since.Major() && v.Minor() < since.Minor() {
		return kubeadmV1beta3
	}
	return kubeadmV1beta4
}

// KubeadmReads says whether the kubeadm of a Kubernetes release reads a configuration of
// apiVersion, and if not why: v1beta4 came with kubeadm 1.31, v1beta3 with 1.22. A machine
// image's kubeadm is of its Kubernetes version, so data rendered for another minor can fail
// there ("no kind JoinConfiguration is registered for version kubeadm.k8s.io/v1beta4").
func KubeadmReads(k8sVersion, apiVersion string) error {
	v, err := version.ParseSemantic(k8sVersion)
	if err != nil {
		return fmt.Errorf("kubeadm version %q: %w", k8sVersion, err)
	}
	since := kubeadmSince[apiVersion]
	if since == nil {
		return fmt.Errorf("kubeadm reads no %s configuration", apiVersion)
	}
	// Pre-releases of the minor that introduced the API know it too.
	if v.Major() != since.Major() || v.Minor() < since.Minor() {
		return fmt.Errorf("kubeadm %s does not know %s (kubeadm %d.%d and later do)", k8sVersion, apiVersion, since.Major(), since.Minor())
	}
	return nil
}

type kubeadmJoinConfiguration struct {
	APIVersion       string                  `json:"apiVersion"`
	Kind             string                  `json:"kind"`
	NodeRegistration kubeadmNodeRegistration `json:"nodeRegistration"`
	Discovery        kubeadmDiscovery        `json:"discovery"`
	Patches          *kubeadmPatches         `json:"patches,omitempty"`
}

type kubeadmNodeRegistration struct {
	Name string `json:"name,omitempty"`
	// Taints are registered with the Node (kubelet --register-with-taints); written even when
	// empty, since kubeadm reads an absent list as "defaults".
	Taints []corev1.Taint `json:"taints"`
	// KubeletExtraArgs is a map in v1beta3 and a list of {name, value} in v1beta4.
	KubeletExtraArgs json.RawMessage `json:"kubeletExtraArgs,omitempty"`
}

type kubeadmArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type kubeadmDiscovery struct {
	BootstrapToken *kubeadmBootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
}

type kubeadmBootstrapTokenDiscovery struct {
	Token             string   `json:"token"`
	APIServerEndpoint string   `json:"apiServerEndpoint,omitempty"`
	CACertHashes      []string `json:"caCertHashes,omitempty"`
}

type kubeadmPatches struct {
	Directory string `json:"directory,omitempty"`
}

// kubeletConfigPatch is the part of a kubelet.config.k8s.io/v1beta1 KubeletConfiguration
// the data sets.
type kubeletConfigPatch struct {
	APIVersion    string   `json:"apiVersion"`
	Kind          string   `json:"kind"`
	ClusterDNS    []string `json:"clusterDNS,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`
}

func newKubeletConfigPatch(in *Input) kubeletConfigPatch {
	p := kubeletConfigPatch{
		APIVersion:    "kubelet.config.k8s.io/v1beta1",
		Kind:          "KubeletConfiguration",
		ClusterDomain: in.clusterDomain(),
	}
	if in.ClusterDNS != "" {
		p.ClusterDNS = []string{in.ClusterDNS}
	}
	return p
}

// kubeletArgs are the kubelet flags every kubeadm-based format sets, in a stable order.
func kubeletArgs(in *Input) []kubeadmArg {
	var args []kubeadmArg
	if l := labelsArg(in.NodeLabels); l != "" {
		args = append(args, kubeadmArg{Name: "node-labels", Value: l})
	}
	if in.ProviderID != "" {
		args = append(args, kubeadmArg{Name: "provider-id", Value: in.ProviderID})
	}
	return args
}

func newJoinConfiguration(in *Input, patchesDir string) (*kubeadmJoinConfiguration, error) {
	pin, err := CAPin(in.CACert)
	if err != nil {
		return nil, err
	}
	apiVersion := kubeadmAPIVersion(in.KubernetesVersion)
	args := kubeletArgs(in)
	var raw []byte
	if apiVersion == kubeadmV1beta3 {
		m := map[string]string{}
		for _, a := range args {
			m[a.Name] = a.Value
		}
		raw, err = json.Marshal(m)
	} else {
		raw, err = json.Marshal(args)
	}
	if err != nil {
		return nil, err
	}
	taints := in.NodeTaints
	if taints == nil {
		taints = []corev1.Taint{}
	}
	jc := &kubeadmJoinConfiguration{
		APIVersion: apiVersion,
		Kind:       "JoinConfiguration",
		NodeRegistration: kubeadmNodeRegistration{
			Name:   in.NodeName,
			Taints: taints,
		},
		Discovery: kubeadmDiscovery{BootstrapToken: &kubeadmBootstrapTokenDiscovery{
			Token:             in.Token,
			APIServerEndpoint: in.Endpoint,
			CACertHashes:      []string{pin},
		}},
	}
	if len(args) > 0 {
		jc.NodeRegistration.KubeletExtraArgs = raw
	}
	if patchesDir != "" {
		jc.Patches = &kubeadmPatches{Directory: patchesDir}
	}
	return jc, nil
}

func marshalYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// joinInfoFromKubeadm reads a JoinConfiguration document (YAML or JSON) into a JoinInfo.
func joinInfoFromKubeadm(doc []byte) (JoinInfo, error) {
	var jc kubeadmJoinConfiguration
	if err := yaml.Unmarshal(doc, &jc); err != nil {
		return JoinInfo{}, fmt.Errorf("JoinConfiguration: %w", err)
	}
	if jc.Kind != "JoinConfiguration" || (jc.APIVersion != kubeadmV1beta3 && jc.APIVersion != kubeadmV1beta4) {
		return JoinInfo{}, fmt.Errorf("want a kubeadm.k8s.io/v1beta3 or v1beta4 JoinConfiguration, got %s %s", jc.APIVersion, jc.Kind)
	}
	bt := jc.Discovery.BootstrapToken
	if bt == nil {
		return JoinInfo{}, errors.New("JoinConfiguration has no discovery.bootstrapToken")
	}
	info := JoinInfo{
		KubeadmAPIVersion: jc.APIVersion,
		Endpoint:          bt.APIServerEndpoint,
		Token:             bt.Token,
		CACertHashes:      bt.CACertHashes,
		NodeName:          jc.NodeRegistration.Name,
	}
	if len(jc.NodeRegistration.Taints) > 0 {
		info.NodeTaints = jc.NodeRegistration.Taints
	}
	args, err := decodeKubeletArgs(jc.APIVersion, jc.NodeRegistration.KubeletExtraArgs)
	if err != nil {
		return JoinInfo{}, err
	}
	for _, a := range args {
		switch a.Name {
		case "node-labels":
			if info.NodeLabels, err = parseLabelsArg(a.Value); err != nil {
				return JoinInfo{}, err
			}
		case "provider-id":
			info.ProviderID = a.Value
		}
	}
	return info, nil
}

func decodeKubeletArgs(apiVersion string, raw json.RawMessage) ([]kubeadmArg, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if apiVersion == kubeadmV1beta4 {
		var args []kubeadmArg
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("v1beta4 kubeletExtraArgs must be a list of {name, value}: %w", err)
		}
		return args, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("v1beta3 kubeletExtraArgs must be a map: %w", err)
	}
	var args []kubeadmArg
	for k, v := range m {
		args = append(args, kubeadmArg{Name: k, Value: v})
	}
	return args, nil
}

// applyKubeletPatch copies clusterDNS/clusterDomain of a kubelet configuration patch.
func (j *JoinInfo) applyKubeletPatch(doc []byte) error {
	var p kubeletConfigPatch
	if err := yaml.Unmarshal(doc, &p); err != nil {
		return fmt.Errorf("kubelet configuration patch: %w", err)
	}
	if p.Kind != "" && p.Kind != "KubeletConfiguration" {
		return fmt.Errorf("kubelet configuration patch has kind %q", p.Kind)
	}
	j.ClusterDNS = p.ClusterDNS
	j.ClusterDomain = p.ClusterDomain
	return nil
}
