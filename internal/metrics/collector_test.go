package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

func cluster(name string, paused bool, phase ackov1alpha1.ClusterPhase, conds ...metav1.Condition) ackov1alpha1.AerospikeCluster {
	c := ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	c.Spec.Size, c.Spec.Paused = 3, paused
	c.Status.Phase, c.Status.ReadyPods, c.Status.Conditions = phase, 2, conds
	return c
}

func TestClusterCollector(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	pausedAt := metav1.NewTime(now.Add(-90 * time.Second))
	pausedCond := metav1.Condition{Type: ackov1alpha1.ConditionPaused, Status: metav1.ConditionTrue, LastTransitionTime: pausedAt}
	clusters := []ackov1alpha1.AerospikeCluster{
		cluster("paused", true, ackov1alpha1.PhasePaused, pausedCond),
		// spec says paused but the operator has not acknowledged it yet: no duration.
		cluster("pausing", true, ackov1alpha1.PhaseRunning),
		cluster("running", false, ackov1alpha1.PhaseRunning,
			metav1.Condition{Type: ackov1alpha1.ConditionCircuitBreakerOpen, Status: metav1.ConditionTrue},
			metav1.Condition{Type: ackov1alpha1.ConditionClusterSplit, Status: metav1.ConditionTrue},
			metav1.Condition{Type: ackov1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "RolloutStuck"}),
	}
	c := NewClusterCollector(func(context.Context) ([]ackov1alpha1.AerospikeCluster, error) { return clusters, nil })
	c.clock = clocktesting.NewFakePassiveClock(now)

	want := `
# HELP acko_cluster_paused_duration_seconds How long the cluster has been paused, from the Paused condition's lastTransitionTime.
# TYPE acko_cluster_paused_duration_seconds gauge
acko_cluster_paused_duration_seconds{name="paused",namespace="ns"} 90
# HELP acko_circuit_breaker_open 1 while the cluster's reconcile circuit breaker is open.
# TYPE acko_circuit_breaker_open gauge
acko_circuit_breaker_open{name="paused",namespace="ns"} 0
acko_circuit_breaker_open{name="pausing",namespace="ns"} 0
acko_circuit_breaker_open{name="running",namespace="ns"} 1
# HELP acko_cluster_split 1 while the cluster's Aerospike nodes form more than one cluster (split brain).
# TYPE acko_cluster_split gauge
acko_cluster_split{name="paused",namespace="ns"} 0
acko_cluster_split{name="pausing",namespace="ns"} 0
acko_cluster_split{name="running",namespace="ns"} 1
# HELP acko_cluster_stalled 1 while the operator cannot progress without the user (Stalled condition), by reason.
# TYPE acko_cluster_stalled gauge
acko_cluster_stalled{name="running",namespace="ns",reason="RolloutStuck"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "acko_cluster_paused_duration_seconds",
		"acko_circuit_breaker_open", "acko_cluster_split", "acko_cluster_stalled"); err != nil {
		t.Fatal(err)
	}
	phase := `
# HELP acko_cluster_phase 1 for the cluster's current phase, 0 for the others.
# TYPE acko_cluster_phase gauge
acko_cluster_phase{name="running",namespace="ns",phase="Error"} 0
acko_cluster_phase{name="running",namespace="ns",phase="Paused"} 0
acko_cluster_phase{name="running",namespace="ns",phase="Reconciling"} 0
acko_cluster_phase{name="running",namespace="ns",phase="Running"} 1
`
	clusters = clusters[2:]
	if err := testutil.CollectAndCompare(c, strings.NewReader(phase), "acko_cluster_phase"); err != nil {
		t.Fatal(err)
	}
	clusters = nil
	if n := testutil.CollectAndCount(c, "acko_cluster_paused_duration_seconds", "acko_cluster_phase"); n != 0 {
		t.Fatalf("a deleted cluster left %d series", n)
	}
}

func TestForgetDeletesCounterSeries(t *testing.T) {
	RecordRestart(keyOf("a"), ackov1alpha1.RestartReasonConfigChanged)
	RecordRestart(keyOf("b"), ackov1alpha1.RestartReasonWarmRestart)
	Forget(keyOf("a"))
	if n := testutil.CollectAndCount(PodRestarts); n != 1 {
		t.Fatalf("want only b's series left, got %d", n)
	}
	Forget(keyOf("b"))
}

func keyOf(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

// Of two replicas only the leader exports the per-cluster gauges: a follower serves none.
func TestClusterCollectorServesOnlyOnceElected(t *testing.T) {
	clusters := []ackov1alpha1.AerospikeCluster{cluster("a", false, ackov1alpha1.PhaseRunning)}
	c := NewClusterCollector(nil)
	elected := make(chan struct{})
	c.setSource(func(context.Context) ([]ackov1alpha1.AerospikeCluster, error) { return clusters, nil }, elected)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("a follower exported %d series", n)
	}
	close(elected)
	// the scrape error gauge and 4 phases, ready pods, size, the breaker and the split of one cluster
	if n := testutil.CollectAndCount(c); n != 9 {
		t.Fatalf("the leader exported %d series, want 9", n)
	}
}

func TestBuildInfo(t *testing.T) {
	Register(nil, nil)
	want := `
# HELP acko_build_info Always 1; the labels say which build of ACKO this is (version, git revision).
# TYPE acko_build_info gauge
acko_build_info{revision="unknown",version="dev"} 1
`
	if err := testutil.CollectAndCompare(buildInfo, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestNamesListsEveryMetric(t *testing.T) {
	got := strings.Join(Names(), " ")
	for _, name := range []string{"acko_pod_restarts_total", "acko_build_info", "acko_cluster_paused_duration_seconds",
		"acko_cluster_phase", "acko_cluster_metrics_scrape_error"} {
		if !strings.Contains(" "+got+" ", " "+name+" ") {
			t.Errorf("%s missing from %s", name, got)
		}
	}
}
