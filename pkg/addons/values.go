package addons

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/runtime"
)

// Values is a tree of chart values, as Helm reads them from a values file.
type Values = map[string]any

// ValuesFrom decodes raw (a JSON object) into Values; nil or empty gives nil.
func ValuesFrom(raw *runtime.RawExtension) (Values, error) {
	if raw == nil {
		return nil, nil
	}
	data := raw.Raw
	if len(data) == 0 && raw.Object != nil {
		var err error
		if data, err = json.Marshal(raw.Object); err != nil {
			return nil, err
		}
	}
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var v Values
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("values are not a JSON object: %w", err)
	}
	return v, nil
}

// Merge layers values as Helm layers several values files: each later layer wins key by key,
// tables merge recursively, and a null in a later layer is kept (Helm then removes that key
// from the chart's defaults when it renders). The layers are not modified.
func Merge(layers ...Values) (Values, error) {
	merged := Values{}
	for _, layer := range layers {
		if len(layer) == 0 {
			continue
		}
		top, err := deepCopy(layer)
		if err != nil {
			return nil, err
		}
		// MergeTables gives dst precedence and keeps its nulls: the later layer is dst.
		merged = chartutil.MergeTables(top, merged)
	}
	return merged, nil
}

// Hash is a stable digest of values: sha256 over their JSON form (keys sorted), so the same
// values hash the same whether they came from a spec or back from Helm's release storage.
func Hash(values Values) string {
	if values == nil {
		values = Values{}
	}
	data, err := json.Marshal(values)
	if err != nil {
		// Values decoded from JSON or from a release always encode; this is not reached.
		data = fmt.Appendf(nil, "%#v", values)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// deepCopy copies values through JSON, which also turns every number into the float64 Helm
// would read back from its release storage.
func deepCopy(v Values) (Values, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("values cannot be encoded: %w", err)
	}
	var out Values
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}
