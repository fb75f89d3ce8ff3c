package config

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
)

// Validate reports what would keep aerospikeConfig from rendering into a config Aerospike CE 8.1 starts
// with, for every rack: unknown or Enterprise-only settings, settings the operator owns, namespaces without
// a name or a usable storage engine, sizes below Aerospike's minimums, and device or file paths that are
// not volumes of spec.storage. An error caused by a rack's override points into that rack; an error in the
// cluster's config is reported once, at spec.aerospikeConfig. The webhook and the reconciler both call it.
func Validate(c *v1alpha1.AerospikeCluster) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, rack := range c.RackPlan() {
		for _, e := range rackErrors(c, rack) {
			if key := e.Error(); !seen[key] {
				seen[key] = true
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// Warnings lists risky but legal settings, for the webhook to return as admission warnings.
func Warnings(c *v1alpha1.AerospikeCluster) []string {
	var out []string
	for _, rack := range c.RackPlan() {
		namespaces, _ := mergeRack(c, rack).tree[keyNamespaces].([]any)
		for _, ns := range namespaces {
			for _, w := range namespaceWarnings(c, ns) {
				if !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

func namespaceWarnings(c *v1alpha1.AerospikeCluster, ns any) []string {
	m, _ := ns.(map[string]any)
	rf, ok := intValue(m[keyReplicationFactor])
	if !ok {
		return nil
	}
	name := nameOf(ns)
	switch {
	case rf > int64(c.Spec.Size):
		return []string{fmt.Sprintf("namespace %q: replication-factor %d is greater than the cluster size %d: "+
			"Aerospike keeps only %d copies until the cluster grows", name, rf, c.Spec.Size, c.Spec.Size)}
	case rf == 1 && c.Spec.Size > 1:
		return []string{fmt.Sprintf("namespace %q: replication-factor 1 keeps a single copy of each record: "+
			"every restarted pod takes its data offline (and loses it with storage-engine memory)", name)}
	}
	return nil
}

func rackErrors(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement) field.ErrorList {
	m := mergeRack(c, rack)
	return m.resolve(check(c, m.tree))
}

// issue is one problem in a merged config. Its place is relative (to the config root, or to the namespace
// ns of the merged list) because the same merged value may come from the cluster or from the rack.
type issue struct {
	ns  int   // index in the merged namespaces list; -1 outside namespaces
	rel []any // map keys (string) and list indexes (int)
	mk  func(*field.Path) *field.Error
}

// resolve turns issues into field errors at the layer that holds the offending value: the rack when its
// override sets it (or the namespace exists only there), otherwise the cluster's aerospikeConfig.
func (m mergedConfig) resolve(issues []issue) field.ErrorList {
	errs := make(field.ErrorList, 0, len(issues))
	for _, is := range issues {
		errs = append(errs, is.mk(m.pathOf(is)))
	}
	return errs
}

func (m mergedConfig) pathOf(is issue) *field.Path {
	if is.ns < 0 {
		if m.rack != nil && has(m.rack.tree, is.rel) {
			return child(m.rack.root, is.rel)
		}
		return child(m.base.root, is.rel)
	}
	o := m.origins[is.ns]
	if o.rack >= 0 {
		rackNS := m.rack.tree[keyNamespaces].([]any)[o.rack]
		if o.base < 0 || has(rackNS, is.rel) {
			return child(m.rack.root.Child(keyNamespaces).Index(o.rack), is.rel)
		}
	}
	return child(m.base.root.Child(keyNamespaces).Index(o.base), is.rel)
}

// has reports whether the value at rel exists in v.
func has(v any, rel []any) bool {
	for _, step := range rel {
		switch s := step.(type) {
		case string:
			m, _ := v.(map[string]any)
			var ok bool
			if v, ok = m[s]; !ok {
				return false
			}
		case int:
			l, _ := v.([]any)
			if s >= len(l) {
				return false
			}
			v = l[s]
		}
	}
	return true
}

func child(p *field.Path, rel []any) *field.Path {
	for _, step := range rel {
		switch s := step.(type) {
		case string:
			p = p.Child(s)
		case int:
			p = p.Index(s)
		}
	}
	return p
}

// at extends a relative path without sharing the backing array of rel.
func at(rel []any, steps ...any) []any { return slices.Concat(rel, steps) }
