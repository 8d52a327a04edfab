package infra

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// Nutanix: CAPX talks to Prism Central with the credentials Secret (credentialRef).
var nutanix = provider{
	cluster:     external.NutanixClusterGVK,
	template:    external.NutanixMachineTemplateGVK,
	clusterSpec: nutanixCluster,
	machineSpec: nutanixMachine,
}

const prismCentralPort = 9440

func nutanixConfig(in component.Input) (*v1alpha1.NutanixConfig, error) {
	c := in.Provider.Spec.Nutanix
	switch {
	case c == nil:
		return nil, missing(in, "nutanix")
	case c.Endpoint == "":
		return nil, missing(in, "nutanix.endpoint")
	case c.ClusterUUID == "":
		return nil, missing(in, "nutanix.clusterUUID")
	case c.SubnetUUID == "":
		return nil, missing(in, "nutanix.subnetUUID")
	}
	return c, nil
}

// prismAddress splits the endpoint ("pc.example.com", "pc:9440" or "https://pc:9440/") into
// the address and port CAPX wants.
func prismAddress(c *v1alpha1.NutanixConfig) (string, int64) {
	host, port := c.Endpoint, int64(c.Port)
	if strings.Contains(host, "://") {
		if u, err := url.Parse(host); err == nil {
			host = u.Host
		}
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		host = h
		if n, err := strconv.ParseInt(p, 10, 32); err == nil && port == 0 {
			port = n
		}
	}
	if port == 0 {
		port = prismCentralPort
	}
	return host, port
}

func nutanixCluster(in component.Input) (map[string]any, error) {
	c, err := nutanixConfig(in)
	if err != nil {
		return nil, err
	}
	name, namespace, err := credentials(in)
	if err != nil {
		return nil, err
	}
	address, port := prismAddress(c)
	pc := map[string]any{
		"address":       address,
		"port":          port,
		"credentialRef": map[string]any{"kind": "Secret", "name": name, "namespace": namespace},
	}
	if c.Insecure {
		pc["insecure"] = true
	}
	return map[string]any{"prismCentral": pc}, nil
}

func nutanixMachine(in component.Input, mt v1alpha1.MachineTemplate) (map[string]any, error) {
	c, err := nutanixConfig(in)
	if err != nil {
		return nil, err
	}
	image := mt.OS.ImageRef
	if image == "" {
		image = c.ImageUUID
	}
	if image == "" {
		return nil, missing(in, "nutanix.imageUUID (or the pool's os.imageRef)")
	}
	imageID := map[string]any{"type": "name", "name": image}
	if isUUID(image) {
		imageID = map[string]any{"type": "uuid", "uuid": image}
	}
	return map[string]any{
		"vcpusPerSocket": int64(1),
		"vcpuSockets":    cpus(mt),
		"memorySize":     quantity(mt.Memory),
		"systemDiskSize": quantity(mt.DiskSize),
		"image":          imageID,
		"cluster":        map[string]any{"type": "uuid", "uuid": c.ClusterUUID},
		"subnet":         []any{map[string]any{"type": "uuid", "uuid": c.SubnetUUID}},
	}, nil
}
