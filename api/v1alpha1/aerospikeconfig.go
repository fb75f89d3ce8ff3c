package v1alpha1

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

// MarshalJSON writes the configuration tree as a plain JSON object.
func (c AerospikeConfig) MarshalJSON() ([]byte, error) {
	if c.Value == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(c.Value)
}

// UnmarshalJSON reads a JSON object, keeping integers exact (as int64) rather than as float64,
// so that sizes such as data-size render unchanged.
func (c *AerospikeConfig) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	c.Value = normalizeNumbers(raw).(map[string]any)
	return nil
}

// normalizeNumbers turns json.Number into int64 or float64, the types runtime.DeepCopyJSONValue accepts.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	default:
		return v
	}
}

// DeepCopyInto copies the configuration tree.
func (c *AerospikeConfig) DeepCopyInto(out *AerospikeConfig) {
	if c.Value == nil {
		out.Value = nil
		return
	}
	out.Value = runtime.DeepCopyJSON(c.Value)
}

// DeepCopy copies the configuration tree.
func (c *AerospikeConfig) DeepCopy() *AerospikeConfig {
	if c == nil {
		return nil
	}
	out := new(AerospikeConfig)
	c.DeepCopyInto(out)
	return out
}

// MarshalJSON writes the sidecar as a plain container object.
func (s Sidecar) MarshalJSON() ([]byte, error) { return json.Marshal(s.Container) }

// UnmarshalJSON reads a container object. Unknown fields are dropped, not refused: a refusal here would
// break the decoding of the whole list the operator watches; the webhook rejects them instead.
func (s *Sidecar) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, &s.Container) }

// MarshalJSON writes the volume as a plain volume object.
func (v PodVolume) MarshalJSON() ([]byte, error) { return json.Marshal(v.Volume) }

// UnmarshalJSON reads a volume object; unknown fields are dropped, as a sidecar's (the webhook refuses them).
func (v *PodVolume) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, &v.Volume) }

// MarshalJSON writes the affinity as a plain affinity object.
func (a RackAffinity) MarshalJSON() ([]byte, error) { return json.Marshal(a.Affinity) }

// UnmarshalJSON reads an affinity object; unknown fields are dropped, as a sidecar's (the webhook refuses them).
func (a *RackAffinity) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, &a.Affinity) }
