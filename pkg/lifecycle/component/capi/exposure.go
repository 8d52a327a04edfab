package capi

import (
	"fmt"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// exposure is how a hosted control plane is reached.
type exposure struct {
	mode v1alpha1.ExposureMode
	// hostname is <tc>.<tenant namespace>.<ButlerConfig hostname> for Ingress and Gateway.
	hostname     string
	certSANs     []string
	ingressClass string
	gateway      *v1alpha1.NamespacedObjectReference
}

// exposureOf reads spec.controlPlane.serviceType, else ButlerConfig's controlPlaneExposure.mode,
// else LoadBalancer. Ingress and Gateway need ButlerConfig's hostname (and Gateway its
// gatewayRef); their hostname is the first certificate SAN.
func exposureOf(in component.Input) (exposure, error) {
	var cfg v1alpha1.ControlPlaneExposure
	if in.Config != nil {
		cfg = in.Config.Spec.ControlPlaneExposure
	}
	e := exposure{mode: in.Cluster.Spec.ControlPlane.ServiceType}
	if e.mode == "" {
		e.mode = cfg.Mode
	}
	if e.mode == "" {
		e.mode = v1alpha1.ExposureLoadBalancer
	}
	switch e.mode {
	case v1alpha1.ExposureLoadBalancer:
	case v1alpha1.ExposureIngress, v1alpha1.ExposureGateway:
		if cfg.Hostname == "" {
			return e, fmt.Errorf("ButlerConfig butler: spec.controlPlaneExposure.hostname is required for %s exposure of TenantCluster %s/%s", e.mode, in.Cluster.Namespace, in.Cluster.Name)
		}
		e.hostname = fmt.Sprintf("%s.%s.%s", in.Cluster.Name, in.Namespace, cfg.Hostname)
		e.certSANs = []string{e.hostname}
		e.ingressClass = cfg.IngressClassName
		if e.mode == v1alpha1.ExposureGateway {
			if cfg.GatewayRef == nil || cfg.GatewayRef.Name == "" {
				return e, fmt.Errorf("ButlerConfig butler: spec.controlPlaneExposure.gatewayRef is required for Gateway exposure of TenantCluster %s/%s", in.Cluster.Namespace, in.Cluster.Name)
			}
			e.gateway = cfg.GatewayRef.DeepCopy()
		}
	default:
		return e, fmt.Errorf("TenantCluster %s/%s: unknown control plane exposure %q", in.Cluster.Namespace, in.Cluster.Name, e.mode)
	}
	for _, san := range in.Cluster.Spec.ControlPlane.CertSANs {
		if san != e.hostname {
			e.certSANs = append(e.certSANs, san)
		}
	}
	return e, nil
}

// serviceType is the control plane Service's type: behind an Ingress or Gateway it needs no
// load balancer of its own.
func (e exposure) serviceType() string {
	if e.mode == v1alpha1.ExposureLoadBalancer {
		return steward.ServiceTypeLoadBalancer
	}
	return steward.ServiceTypeClusterIP
}
