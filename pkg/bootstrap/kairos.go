package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"net"

	"sigs.k8s.io/yaml"
)

// The kairos format: a #cloud-config whose cluster section is read by Kairos' agent and handed
// to the provider-kubeadm cluster plugin (kairos-sdk clusterplugin.Cluster: cluster_token,
// control_plane_host, role, config). config is a YAML string with the kubeadm documents by
// field name (joinConfiguration, kubeletConfiguration). discovery.bootstrapToken is set in
// full: without it the plugin derives a token from cluster_token and skips CA verification.

type kairosCloudConfig struct {
	Hostname string        `json:"hostname,omitempty"`
	Cluster  kairosCluster `json:"cluster"`
}

type kairosCluster struct {
	ClusterToken     string `json:"cluster_token"`
	ControlPlaneHost string `json:"control_plane_host"`
	Role             string `json:"role"`
	Config           string `json:"config"`
}

type kairosKubeadmConfig struct {
	JoinConfiguration    *kubeadmJoinConfiguration `json:"joinConfiguration"`
	KubeletConfiguration *kubeletConfigPatch       `json:"kubeletConfiguration,omitempty"`
}

func renderKairos(in *Input) ([]byte, error) {
	jc, err := newJoinConfiguration(in, "")
	if err != nil {
		return nil, err
	}
	kc := newKubeletConfigPatch(in)
	config, err := marshalYAML(kairosKubeadmConfig{JoinConfiguration: jc, KubeletConfiguration: &kc})
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(in.Endpoint)
	if err != nil {
		return nil, err
	}
	body, err := yaml.Marshal(kairosCloudConfig{
		Hostname: in.NodeName,
		Cluster: kairosCluster{
			ClusterToken:     in.Token,
			ControlPlaneHost: host,
			Role:             "worker",
			Config:           config,
		},
	})
	if err != nil {
		return nil, err
	}
	return append([]byte(cloudConfigHeader), body...), nil
}

func parseKairos(data []byte) (JoinInfo, error) {
	if !bytes.HasPrefix(data, []byte("#cloud-config")) {
		return JoinInfo{}, errors.New("not a #cloud-config document")
	}
	var cc kairosCloudConfig
	if err := yaml.Unmarshal(data, &cc); err != nil {
		return JoinInfo{}, err
	}
	if cc.Cluster.Role != "worker" {
		return JoinInfo{}, fmt.Errorf("cluster.role %q is not worker", cc.Cluster.Role)
	}
	if cc.Cluster.Config == "" {
		return JoinInfo{}, errors.New("cluster.config is empty")
	}
	// The documents are read twice: once typed for the join, once for the kubelet part.
	var raw struct {
		JoinConfiguration    map[string]any `json:"joinConfiguration"`
		KubeletConfiguration map[string]any `json:"kubeletConfiguration"`
	}
	if err := yaml.Unmarshal([]byte(cc.Cluster.Config), &raw); err != nil {
		return JoinInfo{}, fmt.Errorf("cluster.config: %w", err)
	}
	if raw.JoinConfiguration == nil {
		return JoinInfo{}, errors.New("cluster.config has no joinConfiguration")
	}
	joinDoc, err := yaml.Marshal(raw.JoinConfiguration)
	if err != nil {
		return JoinInfo{}, err
	}
	info, err := joinInfoFromKubeadm(joinDoc)
	if err != nil {
		return JoinInfo{}, err
	}
	if raw.KubeletConfiguration != nil {
		kubeletDoc, err := yaml.Marshal(raw.KubeletConfiguration)
		if err != nil {
			return JoinInfo{}, err
		}
		if err := info.applyKubeletPatch(kubeletDoc); err != nil {
			return JoinInfo{}, err
		}
	}
	if info.NodeName == "" {
		info.NodeName = cc.Hostname
	}
	return info, nil
}
