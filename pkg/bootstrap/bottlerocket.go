package bootstrap

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"

	toml "github.com/pelletier/go-toml/v2"
)

// The bottlerocket format: user-data TOML of Bottlerocket's settings API
// (bottlerocket.dev .../api/settings/kubernetes). Off AWS the kubelet authenticates with the
// bootstrap token ("tls" mode) against api-server, trusting cluster-certificate.

type bottlerocketUserData struct {
	Settings bottlerocketSettings `toml:"settings"`
}

type bottlerocketSettings struct {
	Kubernetes bottlerocketKubernetes `toml:"kubernetes"`
}

type bottlerocketKubernetes struct {
	APIServer string `toml:"api-server"`
	// ClusterCertificate is the CA PEM, base64-encoded.
	ClusterCertificate string `toml:"cluster-certificate"`
	BootstrapToken     string `toml:"bootstrap-token"`
	AuthenticationMode string `toml:"authentication-mode"`
	ClusterName        string `toml:"cluster-name"`
	// ClusterDNSIP is a string or a list of strings in Bottlerocket's schema.
	ClusterDNSIP     any    `toml:"cluster-dns-ip,omitempty"`
	ClusterDomain    string `toml:"cluster-domain,omitempty"`
	HostnameOverride string `toml:"hostname-override,omitempty"`
	ProviderID       string `toml:"provider-id,omitempty"`
	// NodeLabels and NodeTaints are tables; a taint key maps to a list of "value:Effect"
	// (a single string is accepted too).
	NodeLabels map[string]string `toml:"node-labels,omitempty"`
	NodeTaints map[string]any    `toml:"node-taints,omitempty"`
}

func renderBottlerocket(in *Input) ([]byte, error) {
	k := bottlerocketKubernetes{
		APIServer:          "https://" + in.Endpoint,
		ClusterCertificate: base64.StdEncoding.EncodeToString(in.CACert),
		BootstrapToken:     in.Token,
		AuthenticationMode: "tls",
		ClusterName:        in.ClusterName,
		ClusterDomain:      in.clusterDomain(),
		HostnameOverride:   in.NodeName,
		ProviderID:         in.ProviderID,
	}
	if k.ClusterName == "" {
		return nil, fmt.Errorf("%w: bottlerocket needs the cluster name", ErrInvalidInput)
	}
	if in.ClusterDNS != "" {
		k.ClusterDNSIP = in.ClusterDNS
	}
	if len(in.NodeLabels) > 0 {
		k.NodeLabels = in.NodeLabels
	}
	if len(in.NodeTaints) > 0 {
		byKey := map[string][]string{}
		for _, t := range in.NodeTaints {
			byKey[t.Key] = append(byKey[t.Key], taintValue(t))
		}
		k.NodeTaints = map[string]any{}
		for key, vals := range byKey {
			k.NodeTaints[key] = vals
		}
	}
	return toml.Marshal(bottlerocketUserData{Settings: bottlerocketSettings{Kubernetes: k}})
}

func parseBottlerocket(data []byte) (JoinInfo, error) {
	var ud bottlerocketUserData
	if err := toml.Unmarshal(data, &ud); err != nil {
		return JoinInfo{}, err
	}
	k := ud.Settings.Kubernetes
	info := JoinInfo{
		Token:         k.BootstrapToken,
		NodeName:      k.HostnameOverride,
		ClusterDomain: k.ClusterDomain,
		ProviderID:    k.ProviderID,
	}
	if k.AuthenticationMode != "tls" {
		return JoinInfo{}, fmt.Errorf("settings.kubernetes.authentication-mode is %q; a bootstrap token needs \"tls\"", k.AuthenticationMode)
	}
	if k.APIServer != "" {
		u, err := url.Parse(k.APIServer)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return JoinInfo{}, fmt.Errorf("settings.kubernetes.api-server %q is not an https URL", k.APIServer)
		}
		info.Endpoint = u.Host
		if u.Port() == "" {
			info.Endpoint = net.JoinHostPort(u.Hostname(), "443")
		}
	}
	if k.ClusterCertificate == "" {
		return JoinInfo{}, errors.New("settings.kubernetes.cluster-certificate is empty")
	}
	ca, err := base64.StdEncoding.DecodeString(k.ClusterCertificate)
	if err != nil {
		return JoinInfo{}, fmt.Errorf("settings.kubernetes.cluster-certificate: %w", err)
	}
	if _, err := parseCert(ca); err != nil {
		return JoinInfo{}, fmt.Errorf("settings.kubernetes.cluster-certificate: %w", err)
	}
	info.CACert = ca
	if info.ClusterDNS, err = stringOrList(k.ClusterDNSIP); err != nil {
		return JoinInfo{}, fmt.Errorf("settings.kubernetes.cluster-dns-ip: %w", err)
	}
	if len(k.NodeLabels) > 0 {
		info.NodeLabels = k.NodeLabels
	}
	keys := make([]string, 0, len(k.NodeTaints))
	for key := range k.NodeTaints {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		vals, err := stringOrList(k.NodeTaints[key])
		if err != nil {
			return JoinInfo{}, fmt.Errorf("settings.kubernetes.node-taints.%s: %w", key, err)
		}
		for _, v := range vals {
			t, err := parseTaintValue(key, v)
			if err != nil {
				return JoinInfo{}, fmt.Errorf("settings.kubernetes.node-taints: %w", err)
			}
			info.NodeTaints = append(info.NodeTaints, t)
		}
	}
	sortTaints(info.NodeTaints)
	return info, nil
}

func stringOrList(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("list element %v is not a string", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%v is neither a string nor a list of strings", v)
}
