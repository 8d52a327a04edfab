package machines

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// APIEndpointSlice is the endpoint of the tenant's kubernetes Service the provider writes for
// pods on real nodes: a local tenant's kube-apiserver listens on the host's loopback, which it
// cannot publish (Endpoints refuse loopback addresses; its reconciler is off), and no pod could
// reach it there. Every node serves the API at the nodes' API address instead (RealNodes.APIAddress).
const APIEndpointSlice = "kubernetes-butler-nodes"

// applyAPIEndpoint publishes the nodes' API address as the kubernetes Service's endpoint in the
// machine's tenant, when the tenant's endpoint is on the host's loopback (elsewhere its
// kube-apiserver publishes its own).
func (c *Controller) applyAPIEndpoint(ctx context.Context, lm *external.LocalMachine, info *bootstrap.JoinInfo) error {
	if !isLoopbackEndpoint(info.Endpoint) {
		return nil
	}
	client, err := c.tenantClient(lm, clusterOf(nil, lm.Labels, ""))
	if err != nil || client == nil {
		return fmt.Errorf("no credentials of the tenant cluster to publish its API to pods: %v", err)
	}
	host, portText, _ := net.SplitHostPort(c.nodes.APIAddress(info.Endpoint))
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return fmt.Errorf("the tenant's endpoint %q: %w", info.Endpoint, err)
	}
	slice := discoveryv1ac.EndpointSlice(APIEndpointSlice, metav1.NamespaceDefault).
		WithLabels(map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: string(external.LocalProvider)}).
		WithAddressType(discoveryv1.AddressTypeIPv4).
		WithEndpoints(discoveryv1ac.Endpoint().WithAddresses(host).WithConditions(discoveryv1ac.EndpointConditions().WithReady(true))).
		WithPorts(discoveryv1ac.EndpointPort().WithName("https").WithPort(int32(port)).WithProtocol(corev1.ProtocolTCP))
	if _, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Apply(ctx, slice,
		metav1.ApplyOptions{FieldManager: string(external.LocalProvider), Force: true}); err != nil {
		return fmt.Errorf("publishing the tenant's API to pods (EndpointSlice %s): %w", APIEndpointSlice, err)
	}
	return nil
}
