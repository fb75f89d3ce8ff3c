package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/acko-io/acko/api/v1alpha1"
)

func hostnameNotIn(nodes ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: nodes}
}

func TestBlockAffinityMerge(t *testing.T) {
	zone := corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	disk := corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpExists}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{disk}}}}
	anti := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname}}}
	for _, tc := range []struct {
		name string
		in   *corev1.Affinity
		want *corev1.Affinity
	}{
		{"none", nil, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{hostnameNotIn("n1", "n2")}}}}}}},
		{"pod anti-affinity and preferred node affinity kept",
			&corev1.Affinity{PodAntiAffinity: anti, NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			&corev1.Affinity{PodAntiAffinity: anti, NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{hostnameNotIn("n1", "n2")}}}}}}},
		{"added to every required term (ORed)",
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{zone}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{disk}}}}}},
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{zone, hostnameNotIn("n1", "n2")}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{disk, hostnameNotIn("n1", "n2")}}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *corev1.Affinity
			if tc.in != nil {
				before = tc.in.DeepCopy()
			}
			got := BlockAffinity(tc.in, []string{"n1", "n2"})
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if tc.in != nil && !equality.Semantic.DeepEqual(tc.in, before) {
				t.Errorf("the user's affinity was changed: %+v", tc.in)
			}
		})
	}
}

// A change of the block list reaches the StatefulSet (its template takes the affinity) but not the pod
// spec hash: the pods on other nodes are not outdated by it.
func TestBlockListKeepsThePodSpecHash(t *testing.T) {
	c := newCluster()
	before := StatefulSet(c, c.RackPlan()[0], "cafe")
	c.Spec.NodeBlockList = []string{"n2", "n1", "n2"}
	after := StatefulSet(c, c.RackPlan()[0], "cafe")
	tb, ta := before.Spec.Template, after.Spec.Template
	if tb.Annotations[v1alpha1.AnnotationPodSpecHash] != ta.Annotations[v1alpha1.AnnotationPodSpecHash] {
		t.Errorf("the pod spec hash changed with the block list")
	}
	if got := ta.Annotations[v1alpha1.AnnotationNodeBlockList]; got != "n1,n2" {
		t.Errorf("%s = %q, want n1,n2", v1alpha1.AnnotationNodeBlockList, got)
	}
	req := ta.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || !equality.Semantic.DeepEqual(req.NodeSelectorTerms[0].MatchExpressions, []corev1.NodeSelectorRequirement{hostnameNotIn("n1", "n2")}) {
		t.Errorf("required node affinity = %+v", req)
	}
	if ta.Spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("the default pod anti-affinity was dropped")
	}
	if !NeedsUpdate(before, after) || !NeedsUpdate(after, before) {
		t.Errorf("a change of the block list does not update the StatefulSet")
	}
	if NeedsUpdate(after, after.DeepCopy()) {
		t.Errorf("the same block list updates the StatefulSet")
	}
	pod := &corev1.Pod{ObjectMeta: *tb.ObjectMeta.DeepCopy(), Spec: *tb.Spec.DeepCopy()}
	if reason, outdated := RestartReason(pod, after); outdated {
		t.Errorf("a pod created before the block list is outdated by it: %s", reason)
	}
}
