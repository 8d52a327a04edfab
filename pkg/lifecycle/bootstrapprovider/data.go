package bootstrapprovider

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapdata "github.com/butlerdotdev/butler-apiserver/pkg/bootstrap"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureData renders the data with the token and writes the data Secret; the config comes back
// before the token lapses while the Machine has not joined. For a Machine that joined it only
// finds the Secret, to keep it in the status.
func (c *Controller) ensureData(ctx context.Context, s *state) (steps.Result, error) {
	if s.joined() {
		if secret := c.dataSecret(ctx, s.bc); secret != nil {
			s.secretName = secret.Name
		}
		return steps.Ready(ReasonDataSecretCreated, "node %s joined", s.machine.Status.NodeRef.Name), nil
	}
	data, err := bootstrapdata.Render(s.os, s.in)
	if err != nil {
		return renderFailure(s, err), nil
	}
	if err := c.applyDataSecret(ctx, s.bc, s.cluster, s.os, data); err != nil {
		return s.fail(ReasonDataSecretWriteFailed, err, err), nil
	}
	s.secretName = s.bc.Name
	s.next = controllerkit.RequeueAfter(s.ttl / 3)
	return steps.Ready(ReasonDataSecretCreated, "%s data for node %s in Secret %s", s.os, s.machine.Name, s.bc.Name), nil
}

// providerID is the Machine's spec.providerID, else its infrastructure machine's, else empty
// (the infrastructure provider sets it on the Node then).
func (c *Controller) providerID(ctx context.Context, m *clusterv1.Machine) string {
	if m.Spec.ProviderID != "" {
		return m.Spec.ProviderID
	}
	ref := m.Spec.InfrastructureRef
	for _, k := range external.Kinds {
		if k.GVK.Group != ref.APIGroup || k.GVK.Kind != ref.Kind || ref.Name == "" {
			continue
		}
		u, err := c.dyn.Resource(k.GVR()).Namespace(m.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		im, err := external.FromUnstructured[external.InfrastructureMachine](u)
		if err != nil {
			return ""
		}
		return im.Spec.ProviderID
	}
	return ""
}

// applyDataSecret server-side applies the data Secret CAPI reads (Machine.spec.bootstrap.dataSecretName):
// the data and its contract format, which the infrastructure provider delivers it by.
func (c *Controller) applyDataSecret(ctx context.Context, bc *external.BootstrapConfig, cluster string, os bootstrapdata.OS, data []byte) error {
	lbls := map[string]string{clusterv1.ClusterNameLabel: cluster, external.ManagedByLabel: external.ManagedBy}
	for k, v := range bc.Labels {
		if k == external.TenantClusterLabel || k == external.TenantClusterNamespaceLabel {
			lbls[k] = v
		}
	}
	secret := corev1ac.Secret(bc.Name, bc.Namespace).
		WithType(DataSecretType).
		WithLabels(lbls).
		WithAnnotations(map[string]string{bootstrapdata.OSAnnotation: string(os)}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(external.BootstrapConfigGVK.GroupVersion().String()).
			WithKind(external.BootstrapConfigGVK.Kind).
			WithName(bc.Name).WithUID(bc.UID).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithData(map[string][]byte{bootstrapdata.DataValueKey: data, bootstrapdata.DataFormatKey: []byte(os.DataFormat())})
	_, err := c.kube.CoreV1().Secrets(bc.Namespace).Apply(ctx, secret, external.Workers.ApplyOptions())
	return err
}
