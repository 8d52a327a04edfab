package kamaji

import (
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
)

// KamajiControlPlaneSpec is the part of a KamajiControlPlane's spec butler sets.
type KamajiControlPlaneSpec struct {
	Version           string                         `json:"version"`
	Replicas          *int32                         `json:"replicas,omitempty"`
	DataStoreName     string                         `json:"dataStoreName,omitempty"`
	APIServer         *steward.ControlPlaneComponent `json:"apiServer,omitempty"`
	ControllerManager *steward.ControlPlaneComponent `json:"controllerManager,omitempty"`
	Scheduler         *steward.ControlPlaneComponent `json:"scheduler,omitempty"`
	Network           *NetworkComponent              `json:"network,omitempty"`
}

// NetworkComponent says how the control plane is exposed.
type NetworkComponent struct {
	ServiceType string            `json:"serviceType,omitempty"`
	CertSANs    []string          `json:"certSANs,omitempty"`
	Ingress     *IngressComponent `json:"ingress,omitempty"`
	Gateway     *GatewayComponent `json:"gateway,omitempty"`
}

// IngressComponent exposes the control plane through an Ingress.
type IngressComponent struct {
	ClassName string `json:"className,omitempty"`
	Hostname  string `json:"hostname"`
}

// GatewayComponent exposes the control plane through a Gateway: Kamaji names the Gateway
// directly (Steward takes parentRefs).
type GatewayComponent struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Hostname  string `json:"hostname"`
}
