package config

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
)

// Top-level keys with a meaning of their own.
const (
	keyService    = "service"
	keyLogging    = "logging"
	keyNetwork    = "network"
	keyModLua     = "mod-lua"
	keyNamespaces = "namespaces"
	keyName       = "name"
)

// layer is one source of configuration: the cluster's aerospikeConfig or a rack's override, with the field
// path it lives at so that an error can point at the place the user has to change.
type layer struct {
	root *field.Path
	tree map[string]any
}

// origin records where a merged namespace came from: its index in the base list and in the rack's list
// (-1 when absent from that layer).
type origin struct{ base, rack int }

// mergedConfig is the configuration of one rack: the cluster's config with the rack's overrides on top.
type mergedConfig struct {
	tree    map[string]any
	origins []origin
	base    layer
	rack    *layer // nil when the rack has no overrides
}

// mergeRack merges the rack's overrides over the cluster's aerospikeConfig. Maps merge key by key and the
// rack wins for any other value; the namespaces list merges by name, rack-only namespaces come last.
// The result shares nothing with the spec, so rendering may change it freely.
func mergeRack(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement) mergedConfig {
	base := layer{root: field.NewPath("spec", "aerospikeConfig"), tree: valueOf(c.Spec.AerospikeConfig)}
	m := mergedConfig{base: base}
	var override map[string]any
	if rack.Rack != nil {
		override = valueOf(rack.Rack.AerospikeConfig)
	}
	if override == nil {
		m.tree = deepCopyMap(base.tree)
		m.origins = baseOrigins(base.tree[keyNamespaces])
		return m
	}
	m.rack = &layer{root: rackPath(c, rack.ID).Child("aerospikeConfig"), tree: override}
	m.tree = mergeMaps(base.tree, override)
	namespaces, origins := mergeNamespaces(base.tree[keyNamespaces], override[keyNamespaces])
	if namespaces != nil {
		m.tree[keyNamespaces] = namespaces
	}
	m.origins = origins
	return m
}

func valueOf(c *v1alpha1.AerospikeConfig) map[string]any {
	if c == nil {
		return nil
	}
	return c.Value
}

// rackPath is the field path of the rack with this id in spec.rackConfig.racks (the spec's order, not the
// sorted order of the rack plan).
func rackPath(c *v1alpha1.AerospikeCluster, id int32) *field.Path {
	racks := field.NewPath("spec", "rackConfig", "racks")
	i := slices.IndexFunc(c.Spec.RackConfig.Racks, func(r v1alpha1.Rack) bool { return r.ID == id })
	return racks.Index(i)
}

func baseOrigins(namespaces any) []origin {
	list, _ := namespaces.([]any)
	origins := make([]origin, len(list))
	for i := range list {
		origins[i] = origin{base: i, rack: -1}
	}
	return origins
}

// mergeMaps returns base with override merged over it, deep-copied. The namespaces key is merged by the
// caller, which knows it is a list keyed by name.
func mergeMaps(base, override map[string]any) map[string]any {
	out := deepCopyMap(base)
	if out == nil && override != nil {
		out = map[string]any{}
	}
	for k, ov := range override {
		bm, baseIsMap := out[k].(map[string]any)
		om, overrideIsMap := ov.(map[string]any)
		if baseIsMap && overrideIsMap {
			out[k] = mergeMaps(bm, om)
			continue
		}
		out[k] = deepCopy(ov)
	}
	return out
}

// mergeNamespaces merges the rack's namespaces over the cluster's by name. Entries that are not objects or
// have no name cannot be matched: they are appended as they are, for validation to report.
func mergeNamespaces(base, override any) ([]any, []origin) {
	bl, _ := base.([]any)
	ol, overrideIsList := override.([]any)
	if !overrideIsList {
		if override != nil {
			return nil, baseOrigins(base) // not a list: validation reports it at the rack's path
		}
		return cloneList(bl), baseOrigins(base)
	}
	out := cloneList(bl)
	origins := baseOrigins(base)
	for j, ov := range ol {
		i := indexByName(bl, nameOf(ov))
		if i < 0 {
			out = append(out, deepCopy(ov))
			origins = append(origins, origin{base: -1, rack: j})
			continue
		}
		bm, _ := bl[i].(map[string]any)
		om, _ := ov.(map[string]any)
		out[i] = mergeMaps(bm, om)
		origins[i].rack = j
	}
	return out, origins
}

func cloneList(l []any) []any {
	if l == nil {
		return nil
	}
	return deepCopy(l).([]any)
}

// nameOf is the name of a namespace entry, "" when it has none.
func nameOf(v any) string {
	m, _ := v.(map[string]any)
	name, _ := m[keyName].(string)
	return name
}

func indexByName(list []any, name string) int {
	if name == "" {
		return -1
	}
	return slices.IndexFunc(list, func(v any) bool { return nameOf(v) == name })
}

// deepCopy copies maps and lists; scalars are immutable and shared. Unlike runtime.DeepCopyJSONValue it
// accepts any scalar type, so a tree built in Go (with int values) is fine too.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}
