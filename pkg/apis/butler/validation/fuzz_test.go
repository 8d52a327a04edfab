package validation_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/install"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
)

// The fuzz targets feed arbitrary bytes to the decoders the server uses for request bodies,
// then to the validation the registry runs, and encode the result again: none of it may panic.
// The scheme and codec factory are built as pkg/apiserver builds them for the butler group;
// importing pkg/apiserver instead would pull etcd and the registry into the instrumented build.
var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func init() {
	install.Install(scheme)
}

// fuzzKind is one kind a request body can decode to, with the validation run on it.
type fuzzKind struct {
	name string
	// validate runs every validator of the kind and returns the create validation's errors.
	validate func(obj runtime.Object) field.ErrorList
}

// kindOf checks obj as a create, and as an update and a status update against a copy of itself.
func kindOf[T runtime.Object](name string, create func(T) field.ErrorList, update, status func(obj, old T) field.ErrorList) fuzzKind {
	return fuzzKind{name: name, validate: func(obj runtime.Object) field.ErrorList {
		o := obj.(T)
		errs := create(o)
		if update != nil {
			update(o, o.DeepCopyObject().(T))
		}
		if status != nil {
			status(o, o.DeepCopyObject().(T))
		}
		return errs
	}}
}

// fuzzKinds is indexed by the fuzzer's kind byte, which plays the resource a body is posted to.
var fuzzKinds = []fuzzKind{
	kindOf("ButlerConfig", validation.ValidateButlerConfig, validation.ValidateButlerConfigUpdate, validation.ValidateButlerConfigStatusUpdate),
	kindOf("Team", validation.ValidateTeam, validation.ValidateTeamUpdate, validation.ValidateTeamStatusUpdate),
	kindOf("TenantCluster", func(obj *butler.TenantCluster) field.ErrorList {
		validation.TenantClusterWarnings(obj)
		return validation.ValidateTenantCluster(obj)
	}, validation.ValidateTenantClusterUpdate, validation.ValidateTenantClusterStatusUpdate),
	kindOf("KubeconfigRequest", validation.ValidateKubeconfigRequest, nil, nil),
	kindOf("TenantAddon", validation.ValidateTenantAddon, validation.ValidateTenantAddonUpdate, validation.ValidateTenantAddonStatusUpdate),
	kindOf("AddonDefinition", validation.ValidateAddonDefinition, validation.ValidateAddonDefinitionUpdate, nil),
	kindOf("NetworkPool", validation.ValidateNetworkPool, validation.ValidateNetworkPoolUpdate, validation.ValidateNetworkPoolStatusUpdate),
	kindOf("IPAllocation", validation.ValidateIPAllocation, validation.ValidateIPAllocationUpdate, validation.ValidateIPAllocationStatusUpdate),
	kindOf("ProviderConfig", validation.ValidateProviderConfig, validation.ValidateProviderConfigUpdate, validation.ValidateProviderConfigStatusUpdate),
	kindOf("TenantClusterSnapshot", validation.ValidateTenantClusterSnapshot, validation.ValidateTenantClusterSnapshotUpdate, validation.ValidateTenantClusterSnapshotStatusUpdate),
	kindOf("UpdateStrategy", validation.ValidateUpdateStrategy, validation.ValidateUpdateStrategyUpdate, nil),
	kindOf("UpdateRun", validation.ValidateUpdateRun, validation.ValidateUpdateRunUpdate, validation.ValidateUpdateRunStatusUpdate),
	kindOf("UpdateRunApproval", validation.ValidateUpdateRunApproval, nil, nil),
	kindOf("ManagementAddon", validation.ValidateManagementAddon, validation.ValidateManagementAddonUpdate, validation.ValidateManagementAddonStatusUpdate),
}

func FuzzDecodeJSON(f *testing.F)     { fuzzDecode(f, runtime.ContentTypeJSON) }
func FuzzDecodeYAML(f *testing.F)     { fuzzDecode(f, runtime.ContentTypeYAML) }
func FuzzDecodeProtobuf(f *testing.F) { fuzzDecode(f, runtime.ContentTypeProtobuf) }

func fuzzDecode(f *testing.F, mediaType string) {
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		f.Fatalf("no serializer for %s", mediaType)
	}
	for _, s := range seeds(f) {
		f.Add(s.kind, s.data[mediaType])
	}
	f.Fuzz(func(t *testing.T, kindIndex uint8, data []byte) {
		decodeAndValidate(t, info, fuzzKinds[int(kindIndex)%len(fuzzKinds)], data)
	})
}

// decodeAndValidate decodes data as the create handler does: the strict decoder where there is
// one (its errors only become warnings by default), the resource's kind as the default, and
// conversion to the internal version, defaulting included.
func decodeAndValidate(t *testing.T, info runtime.SerializerInfo, kind fuzzKind, data []byte) {
	decodeSerializer := info.Serializer
	if info.StrictSerializer != nil {
		decodeSerializer = info.StrictSerializer
	}
	defaultGVK := v1alpha1.SchemeGroupVersion.WithKind(kind.name)
	into, err := scheme.New(butler.SchemeGroupVersion.WithKind(kind.name))
	if err != nil {
		t.Fatal(err)
	}
	decoder := codecs.DecoderToVersion(decodeSerializer, butler.SchemeGroupVersion)
	obj, _, err := decoder.Decode(data, &defaultGVK, into)
	if err != nil && !runtime.IsStrictDecodingError(err) {
		return
	}
	if obj == nil {
		t.Fatalf("decoding returned no object and %v", err)
	}
	errs := kind.validate(obj)

	// Encoding must not panic either; an object the server would store must also read back.
	encoder := codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion)
	var buf bytes.Buffer
	encErr := encoder.Encode(obj, &buf)
	if len(errs) > 0 {
		return
	}
	if encErr != nil {
		t.Fatalf("encoding a valid %s: %v", kind.name, encErr)
	}
	again, err := scheme.New(butler.SchemeGroupVersion.WithKind(kind.name))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := codecs.DecoderToVersion(info.Serializer, butler.SchemeGroupVersion).Decode(buf.Bytes(), &defaultGVK, again); err != nil {
		t.Fatalf("decoding a valid %s as encoded: %v\n%q", kind.name, err, buf.Bytes())
	}
}

// seed is one corpus entry: a kind index and the same object in each media type.
type seed struct {
	kind uint8
	data map[string][]byte
}

// seeds are every object in artifacts/examples, and an empty object of each kind (kinds without
// an example, and nil fields for the defaulters).
func seeds(f *testing.F) []seed {
	f.Helper()
	indexOf := map[string]uint8{}
	for i, k := range fuzzKinds {
		indexOf[k.name] = uint8(i)
	}
	// Every kind the server serves must be in fuzzKinds.
	butlerPkg := reflect.TypeFor[v1alpha1.TenantCluster]().PkgPath()
	for name, goType := range scheme.KnownTypes(v1alpha1.SchemeGroupVersion) {
		if _, ok := indexOf[name]; !ok && goType.PkgPath() == butlerPkg && !strings.HasSuffix(name, "List") {
			f.Fatalf("kind %s has no entry in fuzzKinds", name)
		}
	}

	var docs [][]byte
	files, err := filepath.Glob("../../../../artifacts/examples/*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no examples found: %v", err)
	}
	for _, file := range files {
		content, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Fatalf("%s: %v", file, err)
			}
			if len(bytes.TrimSpace(doc)) > 0 {
				docs = append(docs, doc)
			}
		}
	}

	var out []seed
	for _, doc := range docs {
		jsonDoc, err := utilyaml.ToJSON(doc)
		if err != nil {
			f.Fatal(err)
		}
		obj, gvk, err := codecs.UniversalDeserializer().Decode(jsonDoc, nil, nil)
		if err != nil {
			f.Fatalf("decoding example: %v\n%s", err, doc)
		}
		out = append(out, seed{kind: indexOf[gvk.Kind], data: map[string][]byte{
			runtime.ContentTypeYAML:     doc,
			runtime.ContentTypeJSON:     jsonDoc,
			runtime.ContentTypeProtobuf: encode(f, runtime.ContentTypeProtobuf, obj),
		}})
	}
	for i, k := range fuzzKinds {
		obj, err := scheme.New(v1alpha1.SchemeGroupVersion.WithKind(k.name))
		if err != nil {
			f.Fatal(err)
		}
		data := map[string][]byte{}
		for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf} {
			data[mediaType] = encode(f, mediaType, obj)
		}
		out = append(out, seed{kind: uint8(i), data: data})
	}
	return out
}

func encode(f *testing.F, mediaType string, obj runtime.Object) []byte {
	f.Helper()
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	var buf bytes.Buffer
	if err := codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion).Encode(obj, &buf); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}
