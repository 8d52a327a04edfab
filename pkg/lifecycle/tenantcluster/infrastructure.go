package tenantcluster

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/capi"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/infra"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/steps"
)

// ensureInfrastructure applies the provider's infrastructure cluster and worker machine
// template (and, for a standalone control plane, its machine template); ready once the
// infrastructure cluster says it is provisioned.
func (c *Controller) ensureInfrastructure(ctx context.Context, s *state) (steps.Result, error) {
	cluster, template, err := infra.ForProvider(s.in)
	if err != nil {
		return steps.Failure("InvalidProviderConfig", "%v", err), nil
	}
	objs := []*unstructured.Unstructured{cluster, template}
	if s.tc.Spec.ControlPlane.Type == v1alpha1.ControlPlaneStandalone {
		cpTemplate, err := infra.ControlPlaneTemplate(s.in)
		if err != nil {
			return steps.Failure("InvalidProviderConfig", "%v", err), nil
		}
		objs = append(objs, cpTemplate)
	}
	applied, failed, err := c.applyAll(ctx, objs...)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	got := applied[0]
	typed, err := external.FromUnstructured[external.InfrastructureCluster](got)
	if err != nil {
		return steps.Result{}, err
	}
	if typed.Status.Provisioned() {
		return steps.Ready("Provisioned", "%s %s/%s is provisioned", got.GetKind(), got.GetNamespace(), got.GetName()), nil
	}
	if typed.Spec.ControlPlaneEndpoint.Host == "" &&
		s.tc.Spec.ControlPlane.Type != v1alpha1.ControlPlaneStandalone {
		// A hosted control plane's provider sets the endpoint; until then the provider of the
		// infrastructure cluster waits, and so does this step.
		return steps.Waiting("WaitingForControlPlaneEndpoint", "%s %s/%s waits for its endpoint from the %s provider",
			got.GetKind(), got.GetNamespace(), got.GetName(), capi.ControlPlaneGVK(s.in).Kind), nil
	}
	return steps.Waiting("Provisioning", "%s %s/%s is not provisioned yet", got.GetKind(), got.GetNamespace(), got.GetName()), nil
}

func (c *Controller) cleanupInfrastructure(ctx context.Context, s *state) (bool, error) {
	gone := true
	for _, p := range allProviders {
		clusterKind, templateKind := infra.Kinds(p)
		for _, o := range []struct {
			gvk  schema.GroupVersionKind
			name string
		}{{clusterKind, s.tc.Name}, {templateKind, s.tc.Name + "-workers"}, {templateKind, s.tc.Name + "-control-plane"}} {
			ok, err := c.objects.remove(ctx, o.gvk, s.namespace, o.name)
			if err != nil {
				return false, err
			}
			// Templates have no finalizers and are not watched: only the cluster is waited for.
			if o.gvk == clusterKind && o.name == s.tc.Name {
				gone = gone && ok
			}
		}
	}
	return gone, nil
}
