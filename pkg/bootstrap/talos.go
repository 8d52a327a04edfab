package bootstrap

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The talos format: a Talos v1alpha1 machine config for a worker. Talos' Go module
// (pkg/machinery) is not available here, so these structs mirror the documented schema
// (talos.dev reference/configuration/v1alpha1) for the fields we set.

const talosKubeletImage = "ghcr.io/siderolabs/kubelet"

type talosConfig struct {
	Version string       `json:"version"`
	Debug   bool         `json:"debug"`
	Persist bool         `json:"persist"`
	Machine talosMachine `json:"machine"`
	Cluster talosCluster `json:"cluster"`
}

type talosMachine struct {
	Type       string            `json:"type"`
	Token      string            `json:"token"`
	CA         talosPEM          `json:"ca"`
	Kubelet    talosKubelet      `json:"kubelet"`
	Network    talosNetwork      `json:"network"`
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// NodeTaints maps a key to "value:Effect"; Talos applies them after registration.
	NodeTaints map[string]string `json:"nodeTaints,omitempty"`
}

type talosPEM struct {
	// Crt is the PEM certificate, base64-encoded.
	Crt string `json:"crt"`
	Key string `json:"key"`
}

type talosKubelet struct {
	Image      string            `json:"image"`
	ClusterDNS []string          `json:"clusterDNS,omitempty"`
	ExtraArgs  map[string]string `json:"extraArgs,omitempty"`
}

type talosNetwork struct {
	Hostname string `json:"hostname"`
}

type talosCluster struct {
	ClusterName  string              `json:"clusterName,omitempty"`
	ControlPlane talosControlPlane   `json:"controlPlane"`
	Network      talosClusterNetwork `json:"network"`
	Token        string              `json:"token"`
	CA           talosPEM            `json:"ca"`
}

type talosControlPlane struct {
	Endpoint string `json:"endpoint"`
}

type talosClusterNetwork struct {
	DNSDomain      string   `json:"dnsDomain"`
	PodSubnets     []string `json:"podSubnets,omitempty"`
	ServiceSubnets []string `json:"serviceSubnets,omitempty"`
}

func renderTalos(in *Input) ([]byte, error) {
	ca := talosPEM{Crt: base64.StdEncoding.EncodeToString(in.CACert)}
	m := talosMachine{
		Type: "worker",
		// No trustd without Talos control plane nodes: see doc.go.
		Token: in.Token,
		CA:    ca,
		Kubelet: talosKubelet{
			Image: talosKubeletImage + ":" + in.KubernetesVersion,
		},
		Network: talosNetwork{Hostname: in.NodeName},
	}
	if in.ClusterDNS != "" {
		m.Kubelet.ClusterDNS = []string{in.ClusterDNS}
	}
	if in.ProviderID != "" {
		m.Kubelet.ExtraArgs = map[string]string{"provider-id": in.ProviderID}
	}
	if len(in.NodeLabels) > 0 {
		m.NodeLabels = in.NodeLabels
	}
	if len(in.NodeTaints) > 0 {
		m.NodeTaints = map[string]string{}
		for _, t := range in.NodeTaints {
			if _, dup := m.NodeTaints[t.Key]; dup {
				return nil, fmt.Errorf("%w: talos takes one taint per key, %q has several", ErrInvalidInput, t.Key)
			}
			m.NodeTaints[t.Key] = taintValue(t)
		}
	}
	cfg := talosConfig{
		Version: "v1alpha1",
		Persist: true,
		Machine: m,
		Cluster: talosCluster{
			ClusterName:  in.ClusterName,
			ControlPlane: talosControlPlane{Endpoint: "https://" + in.Endpoint},
			Network: talosClusterNetwork{
				DNSDomain:      in.clusterDomain(),
				PodSubnets:     splitList(in.PodCIDR),
				ServiceSubnets: splitList(in.ServiceCIDR),
			},
			Token: in.Token,
			CA:    ca,
		},
	}
	return yaml.Marshal(cfg)
}

func parseTalos(data []byte) (JoinInfo, error) {
	var cfg talosConfig
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return JoinInfo{}, err
	}
	if cfg.Version != "v1alpha1" {
		return JoinInfo{}, fmt.Errorf("version %q is not v1alpha1", cfg.Version)
	}
	if cfg.Machine.Type != "worker" {
		return JoinInfo{}, fmt.Errorf("machine.type %q is not worker", cfg.Machine.Type)
	}
	info := JoinInfo{
		Token:         cfg.Cluster.Token,
		NodeName:      cfg.Machine.Network.Hostname,
		ClusterDNS:    cfg.Machine.Kubelet.ClusterDNS,
		ClusterDomain: cfg.Cluster.Network.DNSDomain,
		ProviderID:    cfg.Machine.Kubelet.ExtraArgs["provider-id"],
	}
	if len(cfg.Machine.NodeLabels) > 0 {
		info.NodeLabels = cfg.Machine.NodeLabels
	}
	if img := cfg.Machine.Kubelet.Image; img != "" {
		if _, tag, ok := strings.Cut(strings.TrimPrefix(img, talosKubeletImage), ":"); ok {
			info.KubernetesVersion = tag
		}
	}
	if ep := cfg.Cluster.ControlPlane.Endpoint; ep != "" {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return JoinInfo{}, fmt.Errorf("cluster.controlPlane.endpoint %q is not an https URL", ep)
		}
		info.Endpoint = u.Host
		if u.Port() == "" {
			info.Endpoint = net.JoinHostPort(u.Hostname(), "443")
		}
	}
	if cfg.Cluster.CA.Crt == "" {
		return JoinInfo{}, errors.New("cluster.ca.crt is empty")
	}
	ca, err := base64.StdEncoding.DecodeString(cfg.Cluster.CA.Crt)
	if err != nil {
		return JoinInfo{}, fmt.Errorf("cluster.ca.crt: %w", err)
	}
	if _, err := parseCert(ca); err != nil {
		return JoinInfo{}, fmt.Errorf("cluster.ca.crt: %w", err)
	}
	info.CACert = ca
	keys := make([]string, 0, len(cfg.Machine.NodeTaints))
	for k := range cfg.Machine.NodeTaints {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t, err := parseTaintValue(k, cfg.Machine.NodeTaints[k])
		if err != nil {
			return JoinInfo{}, fmt.Errorf("machine.nodeTaints: %w", err)
		}
		info.NodeTaints = append(info.NodeTaints, t)
	}
	sortTaints(info.NodeTaints)
	return info, nil
}
