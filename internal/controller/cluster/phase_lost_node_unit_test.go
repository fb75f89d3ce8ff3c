package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/testcluster"
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

// What the operator remembers of lost nodes decides how many of their volumes go together (model hole 40):
// each is recorded with the copies every partition was known to have, a raised factor counting only once
// a reading showed its migrations end; a stable reading without them proves their copies made again only
// when they were too few to hold every copy of a partition; and of those that may hold the last copy,
// fewer than those copies are given up without the user's word.
func TestLostNodesGivenUpTogether(t *testing.T) {
	now := time.Now()
	state := func(rf int64, stableFactor int32, members []string, records map[string]*ackov1alpha1.LostNode) *clusterState {
		c := testcluster.New("ns", "c", 5)
		c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = rf
		c.Status.StableReplicationFactor = stableFactor
		c.Status.Pods = map[string]ackov1alpha1.PodStatus{}
		for name, rec := range records {
			c.Status.Pods[name] = ackov1alpha1.PodStatus{LostNode: rec}
		}
		st := &clusterState{cluster: c, members: members, pods: map[string]*corev1.Pod{}, maxDown: int(rf) - 1, healthOK: true,
			health: aerospike.ClusterHealth{ExpectedSize: len(members), ReadAt: now, Nodes: map[string]aerospike.NodeHealth{}}}
		for _, name := range c.DesiredPodNames() {
			st.pods[name] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		for _, m := range members {
			st.health.Nodes[m] = aerospike.NodeHealth{ReadAt: now, Facts: aerospike.NodeFacts{ClusterKey: "K", ClusterStableKey: "K",
				ClusterSize: len(members), ClusterIntegrity: true}}
		}
		return st
	}
	migrating := func(st *clusterState) *clusterState {
		n := st.health.Nodes[st.members[0]]
		n.Facts.MigratePartitionsRemaining = 12
		st.health.Nodes[st.members[0]] = n
		return st
	}
	rec := func(factor int32, remade bool) *ackov1alpha1.LostNode {
		return &ackov1alpha1.LostNode{Factor: factor, CopiesRemade: remade}
	}
	three := []string{"c-0", "c-1", "c-2"}
	four := []string{"c-0", "c-1", "c-2", "c-3"}

	t.Run("records", func(t *testing.T) {
		cases := []struct {
			name       string
			st         *clusterState
			lost       []string
			deleted    string // a pod deleted on its lost node and not yet recreated
			wantStable int32
			want       map[string]*ackov1alpha1.LostNode
		}{
			{"every node stable: the factor run is the stable one", state(3, 2, []string{"c-0", "c-1", "c-2", "c-3", "c-4"}, nil),
				nil, "", 3, map[string]*ackov1alpha1.LostNode{}},
			{"a raised factor still migrating: a node lost now is recorded at the copies known made",
				migrating(state(3, 2, four, nil)), []string{"c-4"}, "", 2, map[string]*ackov1alpha1.LostNode{"c-4": rec(2, false)}},
			{"never seen stable: the factor run", migrating(state(3, 0, four, nil)), []string{"c-4"}, "", 0,
				map[string]*ackov1alpha1.LostNode{"c-4": rec(3, false)}},
			{"one lost at factor 2, the others stable: its copies are made again", state(2, 2, four, nil), []string{"c-4"}, "", 2,
				map[string]*ackov1alpha1.LostNode{"c-4": rec(2, true)}},
			{"two lost at factor 2: a stable cluster without them proves nothing", state(2, 2, three, nil),
				[]string{"c-3", "c-4"}, "", 2, map[string]*ackov1alpha1.LostNode{"c-3": rec(2, false), "c-4": rec(2, false)}},
			{"the factor raised since: the records keep the copies known when they were lost",
				state(3, 3, three, map[string]*ackov1alpha1.LostNode{"c-3": rec(2, false)}), []string{"c-3", "c-4"}, "", 3,
				map[string]*ackov1alpha1.LostNode{"c-3": rec(2, false), "c-4": rec(3, false)}},
			{"two lost at factor 3, the others stable: their copies are made again", state(3, 3, three, nil),
				[]string{"c-3", "c-4"}, "", 3, map[string]*ackov1alpha1.LostNode{"c-3": rec(3, true), "c-4": rec(3, true)}},
			{"a pod back on its node forgets; one deleted on its lost node keeps its record",
				migrating(state(2, 2, four, map[string]*ackov1alpha1.LostNode{"c-3": rec(2, false), "c-4": rec(2, false)})),
				nil, "c-4", 2, map[string]*ackov1alpha1.LostNode{"c-4": rec(2, false)}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				delete(tc.st.pods, tc.deleted)
				stable, got := tc.st.lostRecords(tc.lost)
				if stable != tc.wantStable || !equality.Semantic.DeepEqual(got, tc.want) {
					t.Fatalf("got stable %d, %v; want %d, %v", stable, describeRecords(got), tc.wantStable, describeRecords(tc.want))
				}
			})
		}
	})

	t.Run("given up together", func(t *testing.T) {
		st := state(3, 3, three, map[string]*ackov1alpha1.LostNode{"c-3": rec(2, false), "c-4": rec(3, false)})
		due := []pinnedPod{{pod: st.pods["c-3"]}, {pod: st.pods["c-4"]}}
		if got := pinnedNames(st.mayGiveUpTogether(due)); !slices.Equal(got, []string{"c-3"}) {
			t.Errorf("two lost before their copies were made again, 2 copies known: %v given up together, want [c-3]", got)
		}
		if got := st.lastCopyKept("c-4"); !strings.Contains(got, "(lost too: c-3)") || !strings.Contains(got, "at most 1 of them") ||
			!strings.HasSuffix(got, "kubectl annotate pod c-4 acko.io/accept-data-loss=true") {
			t.Errorf("NodeLost's line for the pod kept: %q", got)
		}
		st.pods["c-3"].Annotations = map[string]string{ackov1alpha1.AnnotationAcceptDataLoss: "true"}
		if got := pinnedNames(st.mayGiveUpTogether(due)); !slices.Equal(got, []string{"c-3", "c-4"}) {
			t.Errorf("the user accepts losing c-3's copies: %v, want both", got)
		}
		st = state(3, 3, three, map[string]*ackov1alpha1.LostNode{"c-3": rec(2, true), "c-4": rec(2, true)})
		if got := pinnedNames(st.mayGiveUpTogether(due)); !slices.Equal(got, []string{"c-3", "c-4"}) {
			t.Errorf("copies made again: %v, want both (maxDown 2)", got)
		}
		st.maxDown = 1
		if got := pinnedNames(st.mayGiveUpTogether(due)); !slices.Equal(got, []string{"c-3"}) {
			t.Errorf("maxDown 1: %v, want [c-3]", got)
		}
	})
}

func pinnedNames(pinned []pinnedPod) []string {
	names := make([]string, 0, len(pinned))
	for _, p := range pinned {
		names = append(names, p.pod.Name)
	}
	return names
}

func describeRecords(records map[string]*ackov1alpha1.LostNode) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(records)) {
		out = append(out, fmt.Sprintf("%s:%+v", name, *records[name]))
	}
	return strings.Join(out, " ")
}
