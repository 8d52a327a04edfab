// Package fuzzer fills butler objects with random values for round-trip tests.
package fuzzer

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// Funcs returns the fuzz functions of the butler API group. Decoding applies defaults, so
// every defaulted struct is fuzzed and then defaulted with the real v1alpha1 defaulters;
// free-form Helm values are plain JSON objects, not API objects.
var Funcs = func(runtimeserializer.CodecFactory) []any {
	return []any{
		func(r *runtime.RawExtension, c randfill.Continue) {
			values := map[string]any{}
			for i := 0; i < c.Intn(4); i++ {
				values[c.String(8)] = map[string]any{"replicas": c.Intn(10), "enabled": c.Bool()}
			}
			raw, err := json.Marshal(values)
			if err != nil {
				panic(err)
			}
			r.Raw = raw
		},
		defaulted(v1alpha1.Convert_butler_ButlerConfigSpec_To_v1alpha1_ButlerConfigSpec,
			v1alpha1.SetDefaults_ButlerConfigSpec, v1alpha1.Convert_v1alpha1_ButlerConfigSpec_To_butler_ButlerConfigSpec),
		defaulted(v1alpha1.Convert_butler_TeamMember_To_v1alpha1_TeamMember,
			v1alpha1.SetDefaults_TeamMember, v1alpha1.Convert_v1alpha1_TeamMember_To_butler_TeamMember),
		defaulted(v1alpha1.Convert_butler_ControlPlaneSpec_To_v1alpha1_ControlPlaneSpec,
			v1alpha1.SetDefaults_ControlPlaneSpec, v1alpha1.Convert_v1alpha1_ControlPlaneSpec_To_butler_ControlPlaneSpec),
		defaulted(v1alpha1.Convert_butler_NetworkingSpec_To_v1alpha1_NetworkingSpec,
			v1alpha1.SetDefaults_NetworkingSpec, v1alpha1.Convert_v1alpha1_NetworkingSpec_To_butler_NetworkingSpec),
		defaulted(v1alpha1.Convert_butler_MachineTemplate_To_v1alpha1_MachineTemplate,
			v1alpha1.SetDefaults_MachineTemplate, v1alpha1.Convert_v1alpha1_MachineTemplate_To_butler_MachineTemplate),
		defaulted(v1alpha1.Convert_butler_NetworkPoolSpec_To_v1alpha1_NetworkPoolSpec,
			v1alpha1.SetDefaults_NetworkPoolSpec, v1alpha1.Convert_v1alpha1_NetworkPoolSpec_To_butler_NetworkPoolSpec),
		defaulted(v1alpha1.Convert_butler_ProviderNetwork_To_v1alpha1_ProviderNetwork,
			v1alpha1.SetDefaults_ProviderNetwork, v1alpha1.Convert_v1alpha1_ProviderNetwork_To_butler_ProviderNetwork),
		defaulted(v1alpha1.Convert_butler_LoadBalancerAllocation_To_v1alpha1_LoadBalancerAllocation,
			v1alpha1.SetDefaults_LoadBalancerAllocation, v1alpha1.Convert_v1alpha1_LoadBalancerAllocation_To_butler_LoadBalancerAllocation),
		defaulted(v1alpha1.Convert_butler_ProviderScope_To_v1alpha1_ProviderScope,
			v1alpha1.SetDefaults_ProviderScope, v1alpha1.Convert_v1alpha1_ProviderScope_To_butler_ProviderScope),
		defaulted(v1alpha1.Convert_butler_HelmChartSpec_To_v1alpha1_HelmChartSpec,
			v1alpha1.SetDefaults_HelmChartSpec, v1alpha1.Convert_v1alpha1_HelmChartSpec_To_butler_HelmChartSpec),
		defaulted(v1alpha1.Convert_butler_UpdateStage_To_v1alpha1_UpdateStage,
			v1alpha1.SetDefaults_UpdateStage, v1alpha1.Convert_v1alpha1_UpdateStage_To_butler_UpdateStage),
		defaulted(v1alpha1.Convert_butler_UpdateRunSpec_To_v1alpha1_UpdateRunSpec,
			v1alpha1.SetDefaults_UpdateRunSpec, v1alpha1.Convert_v1alpha1_UpdateRunSpec_To_butler_UpdateRunSpec),
	}
}

// defaulted returns a fuzz function for the internal type I that fills it randomly and then
// applies the defaulter of its versioned form V.
func defaulted[I, V any](toVersioned func(*I, *V, conversion.Scope) error, setDefaults func(*V),
	toInternal func(*V, *I, conversion.Scope) error) func(*I, randfill.Continue) {
	return func(in *I, c randfill.Continue) {
		c.FillNoCustom(in)
		var versioned V
		if err := toVersioned(in, &versioned, nil); err != nil {
			panic(err)
		}
		setDefaults(&versioned)
		if err := toInternal(&versioned, in, nil); err != nil {
			panic(err)
		}
	}
}
