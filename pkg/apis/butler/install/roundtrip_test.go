package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/fuzzer"
)

// TestRoundTripTypes fuzzes every kind and checks internal -> v1alpha1 -> internal, through
// JSON, YAML and CBOR, loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, fuzzer.Funcs)
}
