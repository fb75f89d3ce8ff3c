package cluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
)

// The budget follows the readings: replication-factor − 1 while the latest reading shows the cluster
// stable, 0 while a node migrates, has not rejoined, does not answer or the nodes are split (its pods
// are Ready meanwhile: the budget, not readiness, keeps a drain from taking a second copy).
func TestPDBMaxUnavailable(t *testing.T) {
	node := func(st *clusterState, i int, mut func(*aerospike.NodeHealth)) {
		name := st.members[i]
		n := st.health.Nodes[name]
		mut(&n)
		st.health.Nodes[name] = n
	}
	withBudget := func(st *clusterState, n int32) {
		st.existingPDB = &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(n))}}
	}
	for _, tc := range []struct {
		name   string
		change func(st *clusterState)
		want   int
	}{
		{"stable", func(*clusterState) {}, 2},
		{"a node migrates", func(st *clusterState) {
			node(st, 1, func(n *aerospike.NodeHealth) { n.Facts.MigratePartitionsRemaining = 40 })
		}, 0},
		{"a node restarted and has not rejoined", func(st *clusterState) {
			node(st, 2, func(n *aerospike.NodeHealth) { n.Facts.ClusterSize, n.Facts.ClusterKey = 0, "0" })
		}, 0},
		{"a node does not answer", func(st *clusterState) {
			node(st, 0, func(n *aerospike.NodeHealth) { n.Err = aerospike.ErrUnreachable })
		}, 0},
		{"the server's cluster-stable refuses", func(st *clusterState) {
			node(st, 0, func(n *aerospike.NodeHealth) {
				n.Facts.ClusterStableErr = &aerospike.InfoError{Command: "cluster-stable", Code: 7, Message: "unstable cluster"}
			})
		}, 0},
		{"a node alone", func(st *clusterState) {
			node(st, 2, func(n *aerospike.NodeHealth) { n.Facts.ClusterSize, n.Facts.ClusterKey = 1, "B2" })
		}, 0},
		{"a new pod runs that the prober has not read yet", func(st *clusterState) {
			st.members = append(st.members, "aero-3")
		}, 0},
		{"no pod runs", func(st *clusterState) { st.members = nil }, 0},
		// Once the StatefulSet deletes a leaving pod the budget counts one pod fewer: at maxUnavailable
		// 1 a drain could evict a second node before a reading shows the migrations (model seed 14).
		{"a pod leaves the cluster", func(st *clusterState) {
			st.cluster.Status.Pods = map[string]ackov1alpha1.PodStatus{st.members[2]: {Update: &ackov1alpha1.PodUpdate{
				Method: ackov1alpha1.UpdateRemove}}}
		}, 0},
		{"an old stable reading still counts (the prober reads a steady cluster every 10 s)", func(st *clusterState) {
			st.now = st.now.Add(time.Minute)
		}, 2},
		{"before the first reading the budget stays as it is", func(st *clusterState) {
			st.healthOK = false
			withBudget(st, 1)
		}, 1},
		{"before the first reading, never above the rule", func(st *clusterState) {
			st.healthOK = false
			withBudget(st, 3)
		}, 2},
		{"before the first reading, no budget yet", func(st *clusterState) { st.healthOK = false }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			tc.change(st)
			if got := st.pdbMaxUnavailable(2); got != tc.want {
				t.Errorf("pdbMaxUnavailable(2) = %d, want %d", got, tc.want)
			}
		})
	}
}

// After a failed reconcile Ready follows the pods, but is never True for a generation whose spec was
// not applied in full: a Service or budget change that failed must not let `kubectl wait` pass.
func TestFailedReadiness(t *testing.T) {
	applied := func(st *clusterState) *ackov1alpha1.AerospikeClusterStatus {
		return &ackov1alpha1.AerospikeClusterStatus{ObservedGeneration: st.cluster.Generation,
			AppliedSpecHash: specHash(&st.cluster.Spec)}
	}
	for _, tc := range []struct {
		name   string
		status func(st *clusterState) *ackov1alpha1.AerospikeClusterStatus
		reason string
	}{
		{"the spec was applied: the failure leaves Ready true", applied, ackov1alpha1.ReasonClusterReady},
		{"a new generation not applied yet", func(st *clusterState) *ackov1alpha1.AerospikeClusterStatus {
			s := applied(st)
			s.ObservedGeneration--
			return s
		}, ackov1alpha1.ReasonReconcileError},
		{"a change made while paused, not applied", func(st *clusterState) *ackov1alpha1.AerospikeClusterStatus {
			s := applied(st)
			s.AppliedSpecHash = "0123456789abcdef"
			return s
		}, ackov1alpha1.ReasonReconcileError},
		{"the pods say why first", func(st *clusterState) *ackov1alpha1.AerospikeClusterStatus {
			st.pods["aero-1"].Status.Conditions = nil
			return &ackov1alpha1.AerospikeClusterStatus{}
		}, ackov1alpha1.ReasonPodsNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			s := tc.status(st)
			ready, reason, message := st.failedReadiness(s)
			if ready != (tc.reason == ackov1alpha1.ReasonClusterReady) || reason != tc.reason {
				t.Errorf("failedReadiness = %t %q %q, want reason %q", ready, reason, message, tc.reason)
			}
		})
	}
}

// A reading of an earlier instance of a pod's name (at its old address, or taken before the pod was
// created) is not the new pod's: the new pod has no reading until its own node answers.
func TestAReadingOfAnEarlierInstanceIsNotTheNewPods(t *testing.T) {
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "aero-2", CreationTimestamp: metav1.NewTime(created)},
		Status: corev1.PodStatus{PodIP: "10.0.0.7"}}
	pods := map[string]*corev1.Pod{"aero-2": pod}
	for _, tc := range []struct {
		name    string
		reading aerospike.NodeHealth
		kept    bool
	}{
		{"its own", aerospike.NodeHealth{Addr: "10.0.0.7:3000", ReadAt: created.Add(time.Second)}, true},
		{"the old address", aerospike.NodeHealth{Addr: "10.0.0.3:3000", ReadAt: created.Add(time.Second)}, false},
		{"taken before the pod was created", aerospike.NodeHealth{Addr: "10.0.0.7:3000", ReadAt: created.Add(-time.Second)}, false},
	} {
		got := readingsOfTheirPods(map[string]aerospike.NodeHealth{"aero-2": tc.reading}, pods)
		if _, kept := got["aero-2"]; kept != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.name, kept, tc.kept)
		}
	}
}
