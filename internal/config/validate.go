package config

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config/params"
)

// Validate reports what would keep aerospikeConfig from rendering into a config the image's Aerospike CE
// server starts with, for every rack: Check's errors and violations together, in the order of the config.
// The webhook refuses all of them when a cluster is created.
func Validate(c *v1alpha1.AerospikeCluster) field.ErrorList {
	all := validate(c)
	out := make(field.ErrorList, 0, len(all))
	for _, e := range all {
		out = append(out, e.err)
	}
	return out
}

// Check splits Validate's answer in two:
//   - errs: the structural rules (what the renderer cannot render, Enterprise-only features and stanzas
//     ACKO has always refused, settings the operator owns, namespaces without a name or a usable storage
//     engine, sizes below Aerospike's minimums, device and file paths that are not volumes of
//     spec.storage). A spec with one of these never reaches a pod.
//   - violations: the server's own rules, checked against the parameter table of the image's version
//     (unknown parameters, values of the wrong type, out of bounds or not allowed, Enterprise-only
//     parameters, a parameter of another storage engine, Community Edition's 2 namespaces, the checks
//     asd makes when it starts). These are the rules a cluster accepted before them may already break:
//     the webhook refuses the ones an update changes or adds and lets untouched ones through with a
//     warning, and the reconciler can report them instead of stopping.
//
// An error caused by a rack's override points into that rack; an error in the cluster's config is
// reported once, at spec.aerospikeConfig.
func Check(c *v1alpha1.AerospikeCluster) (errs, violations field.ErrorList) {
	for _, e := range validate(c) {
		if e.server {
			violations = append(violations, e.err)
		} else {
			errs = append(errs, e.err)
		}
	}
	return errs, violations
}

// classified is a field error and whether it breaks a server rule (see Check).
type classified struct {
	err    *field.Error
	server bool
}

func validate(c *v1alpha1.AerospikeCluster) []classified {
	t := tableOf(c)
	var out []classified
	seen := map[string]bool{}
	for _, rack := range c.RackPlan() {
		m := mergeRack(c, rack)
		for _, e := range m.resolveClassified(check(c, t, m.tree)) {
			if key := e.err.Error(); !seen[key] {
				seen[key] = true
				out = append(out, e)
			}
		}
	}
	return append(out, clusterNameAcrossRacks(c)...)
}

// tableOf is the parameter table of the cluster's image (the newest one when the image's version is
// unknown or unsupported: the image's own check reports that).
func tableOf(c *v1alpha1.AerospikeCluster) *params.Table {
	t, _, _ := TableFor(c.Spec.Image)
	return t
}

// clusterNameAcrossRacks: nodes of different cluster names never join one cluster, so a rack may not
// give its nodes a cluster-name of their own.
func clusterNameAcrossRacks(c *v1alpha1.AerospikeCluster) []classified {
	plan := c.RackPlan()
	if len(plan) < 2 {
		return nil
	}
	first := ClusterName(c, plan[0])
	var out []classified
	for _, rack := range plan[1:] {
		name := ClusterName(c, rack)
		if name == first {
			continue
		}
		m := mergeRack(c, rack)
		p := m.pathOf(issue{ns: -1, rel: []any{keyService, keyClusterName}})
		out = append(out, classified{server: true, err: field.Invalid(p, name, fmt.Sprintf(
			"every rack must have the same cluster-name (rack %d has %q): nodes of different cluster names "+
				"never form one cluster", plan[0].ID, first))})
	}
	return out
}

// ClusterName is the cluster-name a rack's nodes run with: service.cluster-name, or the
// AerospikeCluster's name.
func ClusterName(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement) string {
	svc, _ := mergeRack(c, rack).tree[keyService].(map[string]any)
	if v, ok := svc[keyClusterName]; ok {
		if s, isScalar := scalarString(v); isScalar {
			return s
		}
	}
	return c.Name
}

// Warnings lists risky but legal settings, for the webhook to return as admission warnings.
func Warnings(c *v1alpha1.AerospikeCluster) []string {
	var out []string
	for _, rack := range c.RackPlan() {
		tree := mergeRack(c, rack).tree
		namespaces, _ := tree[keyNamespaces].([]any)
		warnings := enforceBestPracticesWarning(tree)
		for _, ns := range namespaces {
			warnings = append(warnings, namespaceWarnings(c, ns)...)
		}
		for _, w := range warnings {
			if !slices.Contains(out, w) {
				out = append(out, w)
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
	case rf == 1:
		return []string{fmt.Sprintf("namespace %q: replication-factor 1 keeps a single copy of each record: "+
			"each restart loses that node's in-memory data (storage-engine memory) and takes its records offline "+
			"until the node is back; a rolling restart, a scale-down or a PodRestart costs that much for every "+
			"pod, one pod at a time", name)}
	}
	return nil
}

func rackErrors(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement) field.ErrorList {
	m := mergeRack(c, rack)
	return m.resolve(check(c, tableOf(c), m.tree))
}

// issue is one problem in a merged config. Its place is relative (to the config root, or to the namespace
// ns of the merged list) because the same merged value may come from the cluster or from the rack.
type issue struct {
	ns  int   // index in the merged namespaces list; -1 outside namespaces
	rel []any // map keys (string) and list indexes (int)
	mk  func(*field.Path) *field.Error
	// server marks a breach of the server's own rules (see Check).
	server bool
}

// resolve turns the structural issues into field errors at the layer that holds the offending value: the
// rack when its override sets it (or the namespace exists only there), otherwise the cluster's
// aerospikeConfig. The server's rules do not stop a render: asd holds a pod to them.
func (m mergedConfig) resolve(issues []issue) field.ErrorList {
	var errs field.ErrorList
	for _, e := range m.resolveClassified(issues) {
		if !e.server {
			errs = append(errs, e.err)
		}
	}
	return errs
}

func (m mergedConfig) resolveClassified(issues []issue) []classified {
	out := make([]classified, 0, len(issues))
	for _, is := range issues {
		out = append(out, classified{err: is.mk(m.pathOf(is)), server: is.server})
	}
	return out
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
