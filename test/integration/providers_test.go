package integration

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Admission reads ProviderConfigs from the watch cache and remembers, for a while, that one does
// not exist. Each change of a ProviderConfig written through this server applies to the very
// next create all the same: its creation, its scope (ProviderConfigUse), and its deletion
// (ProviderSupport, which checks a machine OS only against a ProviderConfig that exists).
func TestProviderConfigChangesApplyToTheNextCreate(t *testing.T) {
	ctx := context.Background()
	const owner, user = "pc-owner", "pc-user"
	providers := shared.Client.ButlerV1alpha1().ProviderConfigs(owner)
	pc := &v1alpha1.ProviderConfig{}
	readManifest(t, "artifacts/examples/02-providerconfig.yaml", pc)
	pc.Namespace, pc.Name = owner, "shared"

	// A cluster of another namespace using owner's ProviderConfig.
	n := 0
	createIn := func(ns string, os v1alpha1.OSType) error {
		n++
		tc := exampleCluster(t, ns, fmt.Sprint("c", n))
		tc.Spec.ProviderConfigRef.Namespace, tc.Spec.ProviderConfigRef.Name = owner, pc.Name
		tc.Spec.Workers.MachineTemplate.OS.Type = os
		_, err := shared.Client.ButlerV1alpha1().TenantClusters(ns).Create(ctx, tc, metav1.CreateOptions{})
		return err
	}
	expectForbidden(t, createIn(user, v1alpha1.OSTalos), "does not exist or is not shared")

	pc.Spec.Scope = v1alpha1.ProviderScope{Type: v1alpha1.ScopePlatform}
	created, err := providers.Create(ctx, pc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := createIn(user, v1alpha1.OSTalos); err != nil {
		t.Fatalf("right after the ProviderConfig is shared with the platform: %v", err)
	}

	created.Spec.Scope = v1alpha1.ProviderScope{Type: v1alpha1.ScopeTeam, TeamRef: &v1alpha1.LocalObjectReference{Name: "someone-else"}}
	if _, err := providers.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectForbidden(t, createIn(user, v1alpha1.OSTalos), "does not exist or is not shared")

	// The owner's own clusters: Bottlerocket cannot boot on Harvester, until the ProviderConfig
	// is gone (the TenantCluster controller checks again once there is one).
	expectInvalidFields(t, createIn(owner, v1alpha1.OSBottlerocket), "spec.workers.machineTemplate.os.type")
	if err := providers.Delete(ctx, pc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := createIn(owner, v1alpha1.OSBottlerocket); err != nil {
		t.Fatalf("right after the ProviderConfig is deleted: %v", err)
	}
}
