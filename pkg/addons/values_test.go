package addons

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func mustValues(t *testing.T, s string) Values {
	t.Helper()
	v, err := ValuesFrom(raw(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMergeLayers(t *testing.T) {
	definition := `{"replicas": 1, "image": {"repository": "a", "tag": "1"}, "ipam": {"mode": "kubernetes"}, "list": [1, 2]}`
	cluster := `{"image": {"tag": "2"}, "ipam": null, "cluster": "c1", "list": [3]}`
	addon := `{"image": {"pullPolicy": "Always"}, "replicas": 3}`
	for _, tc := range []struct {
		name   string
		layers []string
		want   string
	}{
		{"no layers", nil, `{}`},
		{"one layer", []string{definition}, definition},
		{
			name:   "later layers win key by key, tables merge, lists replace, nulls stay",
			layers: []string{definition, cluster, addon},
			want:   `{"replicas": 3, "image": {"repository": "a", "tag": "2", "pullPolicy": "Always"}, "ipam": null, "cluster": "c1", "list": [3]}`,
		},
		{"empty layers are skipped", []string{definition, `{}`, `null`}, definition},
		{
			name:   "a scalar replaces a table",
			layers: []string{`{"a": {"b": 1}}`, `{"a": "flat"}`},
			want:   `{"a": "flat"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var layers []Values
			for _, l := range tc.layers {
				layers = append(layers, mustValues(t, l))
			}
			got, err := Merge(layers...)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustValues(t, tc.want); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("Merge = %v, want %v", got, want)
			}
		})
	}
}

func TestMergeLeavesLayersAlone(t *testing.T) {
	base := mustValues(t, `{"a": {"b": 1}}`)
	top := mustValues(t, `{"a": {"c": 2}}`)
	if _, err := Merge(base, top); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(base, mustValues(t, `{"a": {"b": 1}}`)) || !reflect.DeepEqual(top, mustValues(t, `{"a": {"c": 2}}`)) {
		t.Errorf("Merge changed its inputs: %v %v", base, top)
	}
}

func TestHash(t *testing.T) {
	a := mustValues(t, `{"x": 1, "y": {"b": true, "a": "s"}}`)
	b := Values{"y": map[string]any{"a": "s", "b": true}, "x": int64(1)}
	if Hash(a) != Hash(b) {
		t.Errorf("same values, different hashes: %s %s", Hash(a), Hash(b))
	}
	if Hash(nil) != Hash(Values{}) {
		t.Errorf("nil and empty values hash differently")
	}
	if Hash(a) == Hash(mustValues(t, `{"x": 2, "y": {"b": true, "a": "s"}}`)) {
		t.Errorf("different values, same hash")
	}
}

func TestValuesFromRejectsNonObjects(t *testing.T) {
	if _, err := ValuesFrom(raw(`[1,2]`)); err == nil {
		t.Error("a JSON list was taken as values")
	}
	if v, err := ValuesFrom(nil); err != nil || v != nil {
		t.Errorf("ValuesFrom(nil) = %v, %v", v, err)
	}
}
