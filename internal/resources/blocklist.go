package resources

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/api/v1alpha1"
)

// BlockedNodes is spec.nodeBlockList sorted and without duplicates.
func BlockedNodes(c *v1alpha1.AerospikeCluster) []string {
	nodes := slices.Clone(c.Spec.NodeBlockList)
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// blockNodes keeps the template's pods off the blocked nodes: a required node affinity term
// kubernetes.io/hostname NotIn <nodes>, added to every required term of the user's affinity (the terms
// are ORed, the expressions of a term ANDed, so every way onto a node now excludes them), or as the one
// term when the user requires none. The list is recorded in AnnotationNodeBlockList. It is applied after
// the pod spec hash is taken: the pods on other nodes are not outdated by a change of the list.
func blockNodes(tmpl *corev1.PodTemplateSpec, nodes []string) {
	if len(nodes) == 0 {
		return
	}
	tmpl.Annotations[v1alpha1.AnnotationNodeBlockList] = strings.Join(nodes, ",")
	tmpl.Spec.Affinity = BlockAffinity(tmpl.Spec.Affinity, nodes)
}

// BlockAffinity is the affinity a with a required node affinity that excludes the nodes (a is not changed).
func BlockAffinity(a *corev1.Affinity, nodes []string) *corev1.Affinity {
	out := &corev1.Affinity{}
	if a != nil {
		out = a.DeepCopy()
	}
	notIn := corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn,
		Values: slices.Clone(nodes)}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{notIn}}},
		}
		return out
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, *notIn.DeepCopy())
	}
	return out
}
