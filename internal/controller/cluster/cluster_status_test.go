package cluster

import (
	"errors"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/testcluster"
)

// The status deciders are pure: these tables run without an API server.

var statusNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func readyPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}}
}

// settledState is a 3-node cluster whose pods are Ready and whose nodes, read just now, report one
// stable cluster: the state in which Ready is True.
func settledState() *clusterState {
	c := testcluster.Build()
	c.Generation = 4
	st := newClusterState(c, statusNow)
	st.pods = map[string]*corev1.Pod{}
	st.health = aerospike.ClusterHealth{Nodes: map[string]aerospike.NodeHealth{}, ReadAt: statusNow}
	for _, name := range c.DesiredPodNames() {
		st.pods[name] = readyPod(name)
		st.members = append(st.members, name)
		st.health.Nodes[name] = aerospike.NodeHealth{ReadAt: statusNow, Facts: aerospike.NodeFacts{
			NodeID: "BB9" + name, ClusterSize: 3, ClusterKey: "A1", ClusterIntegrity: true, ClusterStableKey: "A1",
		}}
	}
	st.health.ExpectedSize = len(st.members)
	st.healthOK = true
	st.applied = true
	return st
}

func TestReadiness(t *testing.T) {
	pod := func(st *clusterState, i int) string { return st.cluster.DesiredPodNames()[i] }
	for _, tc := range []struct {
		name         string
		change       func(st *clusterState)
		reason, want string
	}{
		{"ready", func(*clusterState) {}, ackov1alpha1.ReasonClusterReady, "3/3 pods Ready; Aerospike cluster stable"},
		{"a pod runs an older config", func(st *clusterState) {
			st.outdated = []outdatedPod{{pod: st.pods[pod(st, 2)], reason: ackov1alpha1.RestartReasonConfigChanged}}
		}, ackov1alpha1.ReasonOutdatedPods, "1/3 pods run an older template or config: aero-2"},
		{"a pod the spec no longer asks for", func(st *clusterState) {
			st.pods["aero-3"] = readyPod("aero-3")
		}, ackov1alpha1.ReasonScaling, "1 pods leave the cluster: aero-3"},
		{"a pod is not Ready", func(st *clusterState) {
			st.pods[pod(st, 1)].Status.Conditions[0].Status = corev1.ConditionFalse
		}, ackov1alpha1.ReasonPodsNotReady, "2/3 pods Ready; not Ready: aero-1"},
		{"a pod is missing", func(st *clusterState) { delete(st.pods, pod(st, 0)) },
			ackov1alpha1.ReasonPodsNotReady, "2/3 pods Ready; not Ready: aero-0"},
		{"split brain", func(st *clusterState) { st.split = true },
			ackov1alpha1.ReasonSplitBrain, "Aerospike nodes form more than one cluster: cluster_key A1, cluster_size 3: " +
				"aero-0 (node BB9aero-0), aero-1 (node BB9aero-1), aero-2 (node BB9aero-2)"},
		{"no reading yet", func(st *clusterState) { st.healthOK = false },
			ackov1alpha1.ReasonAerospikeNotStable, "Aerospike cluster not stable: no Aerospike health reading yet"},
		{"migrations", func(st *clusterState) {
			n := st.health.Nodes[pod(st, 1)]
			n.Facts.MigratePartitionsRemaining = 12
			st.health.Nodes[pod(st, 1)] = n
		}, ackov1alpha1.ReasonAerospikeNotStable, "Aerospike cluster not stable: aero-1: migrate_partitions_remaining=12"},
		{"a silent node is not stable", func(st *clusterState) {
			n := st.health.Nodes[pod(st, 2)]
			n.Err = aerospike.ErrUnreachable
			st.health.Nodes[pod(st, 2)] = n
		}, ackov1alpha1.ReasonAerospikeNotStable, "Aerospike cluster not stable: aero-2: does not answer: " +
			aerospike.ErrUnreachable.Error()},
		// The order is the order of the checks: outdated pods are named before anything else.
		{"outdated beats not Ready", func(st *clusterState) {
			st.pods[pod(st, 0)].Status.Conditions[0].Status = corev1.ConditionFalse
			st.outdated = []outdatedPod{{pod: st.pods[pod(st, 0)]}}
		}, ackov1alpha1.ReasonOutdatedPods, "1/3 pods run an older template or config: aero-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			tc.change(st)
			ready, reason, message := st.readiness()
			if ready != (tc.reason == ackov1alpha1.ReasonClusterReady) || reason != tc.reason || message != tc.want {
				t.Errorf("readiness() = %v, %q, %q; want %q, %q", ready, reason, message, tc.reason, tc.want)
			}
		})
	}
}

// conditionsOf renders the conditions as "Type=Status/Reason", the part each table row asserts.
func conditionsOf(s *ackov1alpha1.AerospikeClusterStatus) map[string]string {
	out := map[string]string{}
	for _, c := range s.Conditions {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func TestSummarize(t *testing.T) {
	const (
		ready, reconciling, stalled = ackov1alpha1.ConditionReady, ackov1alpha1.ConditionReconciling, ackov1alpha1.ConditionStalled
		failed, split, breaker      = ackov1alpha1.ConditionReconcileFailed, ackov1alpha1.ConditionClusterSplit, ackov1alpha1.ConditionCircuitBreakerOpen
	)
	for _, tc := range []struct {
		name     string
		change   func(st *clusterState)
		phase    ackov1alpha1.ClusterPhase
		want     map[string]string
		observed bool // observedGeneration follows the generation
	}{
		{"running", func(*clusterState) {}, ackov1alpha1.PhaseRunning, map[string]string{
			ready: "True/" + ackov1alpha1.ReasonClusterReady, reconciling: "False/" + ackov1alpha1.ReasonUpToDate,
			stalled: "False/" + ackov1alpha1.ReasonProgressing, split: "False/" + ackov1alpha1.ReasonOneCluster,
		}, true},
		{"pods still rolling", func(st *clusterState) {
			st.outdated = []outdatedPod{{pod: st.pods["aero-2"]}}
			st.setWork(ackov1alpha1.ReasonRollingRestart, "restarting aero-2")
		}, ackov1alpha1.PhaseReconciling, map[string]string{
			ready: "False/" + ackov1alpha1.ReasonOutdatedPods, reconciling: "True/" + ackov1alpha1.ReasonRollingRestart,
			stalled: "False/" + ackov1alpha1.ReasonProgressing, split: "False/" + ackov1alpha1.ReasonOneCluster,
		}, true},
		{"not Ready with nothing else to do still reconciles", func(st *clusterState) { st.healthOK = false },
			ackov1alpha1.PhaseReconciling, map[string]string{
				ready: "False/" + ackov1alpha1.ReasonAerospikeNotStable, reconciling: "True/" + ackov1alpha1.ReasonApplying,
				stalled: "False/" + ackov1alpha1.ReasonProgressing, split: "False/" + ackov1alpha1.ReasonOneCluster,
			}, true},
		{"children not applied yet keep the old observedGeneration", func(st *clusterState) {
			st.applied = false
			st.setWork(ackov1alpha1.ReasonApplying, "creating")
		}, ackov1alpha1.PhaseReconciling, map[string]string{
			ready: "True/" + ackov1alpha1.ReasonClusterReady, reconciling: "True/" + ackov1alpha1.ReasonApplying,
			stalled: "False/" + ackov1alpha1.ReasonProgressing, split: "False/" + ackov1alpha1.ReasonOneCluster,
		}, false},
		{"invalid spec stalls and is no failure", func(st *clusterState) {
			st.invalid, st.invalidReason = "spec.size: too many", ackov1alpha1.ReasonInvalidSpec
		}, ackov1alpha1.PhaseError, map[string]string{
			ready: "False/" + ackov1alpha1.ReasonInvalidSpec, reconciling: "False/" + ackov1alpha1.ReasonInvalidSpec,
			stalled: "True/" + ackov1alpha1.ReasonInvalidSpec, failed: "True/" + ackov1alpha1.ReasonInvalidSpec,
			split: "False/" + ackov1alpha1.ReasonOneCluster,
		}, false},
		{"rollout stuck", func(st *clusterState) {
			st.outdated = []outdatedPod{{pod: st.pods["aero-2"]}}
			st.stuck = "pod aero-2 not Ready 10m after its restart: ImagePullBackOff"
		}, ackov1alpha1.PhaseError, map[string]string{
			ready: "False/" + ackov1alpha1.ReasonOutdatedPods, reconciling: "False/" + ackov1alpha1.ReasonRolloutStuck,
			stalled: "True/" + ackov1alpha1.ReasonRolloutStuck, split: "False/" + ackov1alpha1.ReasonOneCluster,
		}, true},
		{"split brain", func(st *clusterState) { st.split = true }, ackov1alpha1.PhaseReconciling, map[string]string{
			ready: "False/" + ackov1alpha1.ReasonSplitBrain, reconciling: "True/" + ackov1alpha1.ReasonApplying,
			stalled: "False/" + ackov1alpha1.ReasonProgressing, split: "True/" + ackov1alpha1.ReasonSplitBrain,
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			tc.change(st)
			s := &ackov1alpha1.AerospikeClusterStatus{ObservedGeneration: 3}
			// What an earlier reconcile left: a failure and an open breaker, which a summary must not keep.
			DefaultBackoff.recordFailure(s, 3, errors.New("boom"), statusNow)
			for range breakerThreshold {
				DefaultBackoff.recordFailure(s, 3, errors.New("boom"), statusNow)
			}
			st.summarize(s)
			if s.Phase != tc.phase {
				t.Errorf("phase %s, want %s", s.Phase, tc.phase)
			}
			if got := conditionsOf(s); !maps.Equal(got, tc.want) {
				t.Errorf("conditions\n got %v\nwant %v", got, tc.want)
			}
			if s.CircuitBreaker != nil || meta.FindStatusCondition(s.Conditions, breaker) != nil {
				t.Errorf("the breaker survived a summary: %+v", s.CircuitBreaker)
			}
			if observed := s.ObservedGeneration == st.cluster.Generation; observed != tc.observed {
				t.Errorf("observedGeneration %d (generation %d), want followed=%v", s.ObservedGeneration,
					st.cluster.Generation, tc.observed)
			}
			for _, c := range s.Conditions {
				if c.ObservedGeneration != st.cluster.Generation {
					t.Errorf("condition %s has observedGeneration %d", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}

func TestPausedAndResumedStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    bool // the spec changed since it was last applied
		pending bool
	}{
		{"paused as applied", false, false},
		{"paused with a change waiting", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testcluster.Build()
			c.Generation = 7
			s := &c.Status
			s.AppliedSpecHash = specHash(&c.Spec)
			setReady(s, 6, metav1.ConditionTrue, ackov1alpha1.ReasonClusterReady, "3/3")
			if tc.edit {
				c.Spec.Size = 5
			}
			c.Spec.Paused = true // pausing alone is no pending change
			pausedStatus(s, c)
			want := map[string]string{
				ackov1alpha1.ConditionPaused:      "True/" + ackov1alpha1.ReasonUserRequested,
				ackov1alpha1.ConditionReconciling: "False/" + ackov1alpha1.ReasonPaused,
				ackov1alpha1.ConditionStalled:     "False/" + ackov1alpha1.ReasonProgressing,
			}
			if tc.pending {
				want[ackov1alpha1.ConditionPendingChanges] = "True/" + ackov1alpha1.ReasonSpecChangedWhilePaused
			}
			if got := conditionsOf(s); s.Phase != ackov1alpha1.PhasePaused || s.ObservedGeneration != 7 || !maps.Equal(got, want) {
				t.Errorf("paused: phase %s, observedGeneration %d, conditions %v; want Paused, 7, %v",
					s.Phase, s.ObservedGeneration, got, want)
			}

			setReconcileFailed(s, 7, true, ackov1alpha1.ReasonReconcileError, "old")
			s.CircuitBreaker = &ackov1alpha1.CircuitBreakerStatus{ConsecutiveFailures: breakerThreshold}
			resumedStatus(s, 8)
			want = map[string]string{
				ackov1alpha1.ConditionReconciling: "True/" + ackov1alpha1.ReasonApplying,
				ackov1alpha1.ConditionStalled:     "False/" + ackov1alpha1.ReasonProgressing,
			}
			if got := conditionsOf(s); s.Phase != ackov1alpha1.PhaseReconciling || s.CircuitBreaker != nil || !maps.Equal(got, want) {
				t.Errorf("resumed: phase %s, breaker %+v, conditions %v; want Reconciling, nil, %v",
					s.Phase, s.CircuitBreaker, got, want)
			}
		})
	}
}

func TestRecordFailure(t *testing.T) {
	s := &ackov1alpha1.AerospikeClusterStatus{Phase: ackov1alpha1.PhaseRunning}
	b := Backoff{Retry: time.Second, Breaker: 10 * time.Second, Max: time.Minute}
	for n := int32(1); n <= breakerThreshold+2; n++ {
		opened := b.recordFailure(s, 2, errors.New("apply StatefulSet: boom"), statusNow)
		open := n >= breakerThreshold
		if opened != (n == breakerThreshold) || breakerOpen(s) != open {
			t.Fatalf("failure %d: opened=%v open=%v; the breaker opens at failure %d, once", n, opened, breakerOpen(s),
				breakerThreshold)
		}
		if s.CircuitBreaker.ConsecutiveFailures != n || s.CircuitBreaker.LastError != "apply StatefulSet: boom" {
			t.Errorf("failure %d: breaker %+v", n, s.CircuitBreaker)
		}
		want := map[string]string{ackov1alpha1.ConditionReconcileFailed: "True/" + ackov1alpha1.ReasonReconcileError}
		wantPhase := ackov1alpha1.PhaseRunning
		if open {
			want[ackov1alpha1.ConditionCircuitBreakerOpen] = "True/" + ackov1alpha1.ReasonTooManyFailures
			want[ackov1alpha1.ConditionStalled] = "True/" + ackov1alpha1.ReasonTooManyFailures
			want[ackov1alpha1.ConditionReconciling] = "False/" + ackov1alpha1.ReasonTooManyFailures
			wantPhase = ackov1alpha1.PhaseError
		}
		if got := conditionsOf(s); s.Phase != wantPhase || !maps.Equal(got, want) {
			t.Errorf("failure %d: phase %s, conditions %v; want %s, %v", n, s.Phase, got, wantPhase, want)
		}
	}
	if wait := b.wait(s, statusNow); wait != 40*time.Second {
		t.Errorf("after %d failures the breaker waits %s, want 10s·2² = 40s", breakerThreshold+2, wait)
	}
	resetBreaker(s)
	if s.CircuitBreaker != nil || meta.FindStatusCondition(s.Conditions, ackov1alpha1.ConditionCircuitBreakerOpen) != nil {
		t.Errorf("reset left %+v", s)
	}
}
