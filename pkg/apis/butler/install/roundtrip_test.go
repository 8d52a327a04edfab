package install

import (
	"bytes"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/fuzzer"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// TestRoundTripTypes fuzzes every kind and checks internal -> v1alpha1 -> internal, through
// JSON, YAML, CBOR and protobuf, loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, fuzzer.Funcs)
}

// TestEveryKindHasProtobuf checks that every v1alpha1 kind, the subresource kinds included,
// has generated protobuf (hack/update-codegen.sh writes it), so a client asking for
// application/vnd.kubernetes.protobuf never gets an error.
func TestEveryKindHasProtobuf(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	serializer := protobuf.NewSerializer(scheme, scheme)
	want := reflect.TypeFor[v1alpha1.TenantCluster]().PkgPath()
	kinds := 0
	for kind, goType := range scheme.KnownTypes(v1alpha1.SchemeGroupVersion) {
		if goType.PkgPath() != want { // metav1's options and WatchEvent, registered into every group
			continue
		}
		kinds++
		gvk := v1alpha1.SchemeGroupVersion.WithKind(kind)
		obj, err := scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		var buf bytes.Buffer
		if err := serializer.Encode(obj, &buf); err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if !bytes.HasPrefix(buf.Bytes(), []byte{'k', '8', 's', 0}) {
			t.Errorf("%s: encoding lacks the protobuf envelope", kind)
		}
		if _, _, err := serializer.Decode(buf.Bytes(), nil, nil); err != nil {
			t.Errorf("%s: decoding: %v", kind, err)
		}
	}
	if kinds < 17 {
		t.Errorf("checked only %d kinds", kinds)
	}
}
