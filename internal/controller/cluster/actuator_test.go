package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/acko-io/acko/test/testcluster"
)

// setsFixture is a cluster state whose StatefulSet aero asks for 4 replicas, with pods at the given
// ordinals.
func setsFixture(ordinals ...int) (*clusterState, *appsv1.StatefulSet) {
	c := testcluster.Build()
	st := newClusterState(c, time.Now())
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: "aero"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4)}}
	st.existingSets = map[string]*appsv1.StatefulSet{set.Name: set}
	st.pods = map[string]*corev1.Pod{}
	for _, o := range ordinals {
		name := set.Name + "-" + string(rune('0'+o))
		st.pods[name] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name}}
	}
	return st, set.DeepCopy()
}

// A StatefulSet's replicas go below a pod of its only as far as the door let them in this reconcile.
func TestSetReplicasLowersOnlyWhatTheDoorLetGo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ordinals []int
		granted  *int32
		replicas int32
		refused  string // "" when the replicas are set
	}{
		{name: "the same", ordinals: []int{0, 1, 2, 3}, replicas: 4},
		{name: "more (a scale-up)", ordinals: []int{0, 1, 2, 3}, replicas: 6},
		{name: "fewer, below a pod, no step let go", ordinals: []int{0, 1, 2, 3}, replicas: 3, refused: "taking pod aero-3"},
		{name: "fewer, below a pod, the door let it go", ordinals: []int{0, 1, 2, 3}, granted: ptr.To[int32](3), replicas: 3},
		{name: "fewer than the door let go", ordinals: []int{0, 1, 2, 3}, granted: ptr.To[int32](3), replicas: 2, refused: "taking pod aero-2"},
		{name: "fewer, no pod at those ordinals", ordinals: []int{0, 1}, replicas: 2},
		{name: "a pod above what the set asks for is its own, leaving", ordinals: []int{0, 1, 2, 3, 5}, replicas: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, set := setsFixture(tc.ordinals...)
			if tc.granted != nil {
				if _, err := (scaleDownStep{set: set.Name, replicas: *tc.granted}).do(context.Background(), nil, st); err != nil {
					t.Fatal(err)
				}
			}
			err := st.setReplicas(set, tc.replicas)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused == "" && *set.Spec.Replicas != tc.replicas:
				t.Fatalf("replicas %d, want %d", *set.Spec.Replicas, tc.replicas)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("error %v, want one naming %q", err, tc.refused)
			case tc.refused != "" && *set.Spec.Replicas != 4:
				t.Fatalf("a refused write changed the replicas to %d", *set.Spec.Replicas)
			}
		})
	}
}

// A StatefulSet is deleted with its pods only once it has none.
func TestDeleteSetWithItsPodsOnlyOnceEmpty(t *testing.T) {
	st, set := setsFixture(0)
	pod := st.pods["aero-0"]
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name,
		UID: set.UID, Controller: ptr.To(true)}}
	r := &AerospikeClusterReconciler{}
	if err := r.deleteSet(context.Background(), st, set, false); err == nil || !strings.Contains(err.Error(), "still has 1 pods") {
		t.Fatalf("error %v, want the delete refused while the set has a pod", err)
	}
}
