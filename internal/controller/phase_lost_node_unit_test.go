package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Which node holds a pod's local volumes, and whether it is lost: the pod's own node, else the
// scheduler's choice for its claim, else the hostname its static volume is pinned to; deleted or not
// Ready counts, a claim of another class or on another node does not pin the pod.
func TestPinnedBy(t *testing.T) {
	down := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	stopped := metav1.NewTime(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC))
	node := func(name string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: ready, LastTransitionTime: down}}}}
	}
	claim := func(class, selected, volume string) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-c-0"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeName: volume}}
		if selected != "" {
			pvc.Annotations = map[string]string{annotationSelectedNode: selected}
		}
		return pvc
	}
	pv := func(hosts ...string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: hosts}}}}}}}}
	}
	pod := func(nodeName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-0"},
			Spec: corev1.PodSpec{NodeName: nodeName, Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-c-0"}}}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, LastTransitionTime: stopped}}}}
	}
	cases := []struct {
		name      string
		pod       *corev1.Pod
		objects   []client.Object
		wantNode  string
		wantLost  string
		wantSince metav1.Time
		claims    int
	}{
		{"bound to a node not Ready", pod("n1"), []client.Object{claim("local", "", ""), node("n1", corev1.ConditionUnknown)},
			"n1", "not Ready", down, 1},
		{"bound to a Ready node", pod("n1"), []client.Object{claim("local", "", ""), node("n1", corev1.ConditionTrue)}, "", "", metav1.Time{}, 0},
		{"pending, the scheduler chose a deleted node", pod(""), []client.Object{claim("local", "n2", "")}, "n2", "deleted", stopped, 1},
		{"pending, a static volume pinned to a deleted node", pod(""), []client.Object{claim("local", "", "pv-1"), pv("n3")},
			"n3", "deleted", stopped, 1},
		{"pending, a volume several nodes may reach", pod(""), []client.Object{claim("local", "", "pv-1"), pv("n3", "n4")},
			"", "", metav1.Time{}, 0},
		{"a claim of another class", pod("n1"), []client.Object{claim("network", "", ""), node("n1", corev1.ConditionFalse)},
			"", "", metav1.Time{}, 0},
		{"its claim given up already, the pod still on the lost node", pod("n1"), []client.Object{node("n1", corev1.ConditionFalse)},
			"n1", "not Ready", down, 0},
		{"no claim and no node", pod(""), nil, "", "", metav1.Time{}, 0},
		// The cache still shows the old pod on the lost node, gone by now; its successor's new claim, on
		// another node, does not pin it there (and is never given up with it).
		{"the old pod on the lost node, the claim a successor's on another node", pod("n1"),
			[]client.Object{claim("local", "n5", ""), node("n1", corev1.ConditionFalse)}, "", "", metav1.Time{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			r := &AerospikeClusterReconciler{APIReader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()}
			p, err := r.pinnedBy(context.Background(), tc.pod, []string{"local"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNode == "" {
				if p != nil {
					t.Fatalf("pinned to %s (%s), want not pinned", p.node, p.lost)
				}
				return
			}
			if p == nil || p.node != tc.wantNode || p.lost != tc.wantLost || !p.since.Equal(tc.wantSince.Time) || len(p.claims) != tc.claims {
				t.Fatalf("got %+v, want node %s %s since %s with its claim", p, tc.wantNode, tc.wantLost, tc.wantSince)
			}
		})
	}
}
