package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// ClusterLister lists the AerospikeClusters to describe; the manager's cache serves it from memory.
type ClusterLister func(ctx context.Context) ([]ackov1alpha1.AerospikeCluster, error)

var phases = []ackov1alpha1.ClusterPhase{
	ackov1alpha1.PhaseReconciling, ackov1alpha1.PhaseRunning, ackov1alpha1.PhasePaused, ackov1alpha1.PhaseError,
}

var (
	pausedDesc = prometheus.NewDesc("acko_cluster_paused_duration_seconds",
		"How long the cluster has been paused, from the Paused condition's lastTransitionTime.", clusterLabels, nil)
	phaseDesc = prometheus.NewDesc("acko_cluster_phase",
		"1 for the cluster's current phase, 0 for the others.", append(clusterLabels, "phase"), nil)
	readyDesc = prometheus.NewDesc("acko_cluster_ready_pods",
		"Ready pods of the cluster.", clusterLabels, nil)
	sizeDesc = prometheus.NewDesc("acko_cluster_size",
		"Desired number of nodes (spec.size).", clusterLabels, nil)
	breakerDesc = prometheus.NewDesc("acko_circuit_breaker_open",
		"1 while the cluster's reconcile circuit breaker is open.", clusterLabels, nil)
	splitDesc = prometheus.NewDesc("acko_cluster_split",
		"1 while the cluster's Aerospike nodes form more than one cluster (split brain).", clusterLabels, nil)
	stalledDesc = prometheus.NewDesc("acko_cluster_stalled",
		"1 while the operator cannot progress without the user (Stalled condition), by reason.",
		append(clusterLabels, "reason"), nil)
	scrapeErrorDesc = prometheus.NewDesc("acko_cluster_metrics_scrape_error",
		"1 when the clusters could not be listed for this scrape.", nil, nil)
)

// ClusterCollector computes the per-cluster gauges at scrape time.
type ClusterCollector struct {
	mu      sync.Mutex
	list    ClusterLister
	elected <-chan struct{} // nil: always; else only once closed
	clock   clock.PassiveClock
}

// NewClusterCollector returns a collector over the clusters list returns (none while list is nil).
func NewClusterCollector(list ClusterLister) *ClusterCollector {
	return &ClusterCollector{list: list, clock: clock.RealClock{}}
}

func (c *ClusterCollector) setSource(list ClusterLister, elected <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list, c.elected = list, elected
}

// source is the lister to describe, nil while there is none or this replica is not the leader.
func (c *ClusterCollector) source() ClusterLister {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !closed(c.elected) {
		return nil
	}
	return c.list
}

// Describe implements prometheus.Collector.
func (c *ClusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pausedDesc, phaseDesc, readyDesc, sizeDesc, breakerDesc, splitDesc, stalledDesc,
		scrapeErrorDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ClusterCollector) Collect(ch chan<- prometheus.Metric) {
	list := c.source()
	if list == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	clusters, err := list(ctx)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed)
	now := c.clock.Now()
	for i := range clusters {
		collectCluster(ch, &clusters[i], now)
	}
}

func collectCluster(ch chan<- prometheus.Metric, cl *ackov1alpha1.AerospikeCluster, now time.Time) {
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{cl.Namespace, cl.Name}, extra...)...)
	}
	if since, ok := PausedSince(cl); ok {
		gauge(pausedDesc, now.Sub(since).Seconds())
	}
	for _, p := range phases {
		gauge(phaseDesc, boolValue(cl.Status.Phase == p), string(p))
	}
	gauge(readyDesc, float64(cl.Status.ReadyPods))
	gauge(sizeDesc, float64(cl.Spec.Size))
	gauge(breakerDesc, boolValue(meta.IsStatusConditionTrue(cl.Status.Conditions, ackov1alpha1.ConditionCircuitBreakerOpen)))
	gauge(splitDesc, boolValue(meta.IsStatusConditionTrue(cl.Status.Conditions, ackov1alpha1.ConditionClusterSplit)))
	if c := meta.FindStatusCondition(cl.Status.Conditions, ackov1alpha1.ConditionStalled); c != nil &&
		c.Status == metav1.ConditionTrue {
		gauge(stalledDesc, 1, c.Reason)
	}
}

// PausedSince is when the operator acknowledged the pause; false when the cluster is not paused.
func PausedSince(cl *ackov1alpha1.AerospikeCluster) (time.Time, bool) {
	if !cl.Spec.Paused {
		return time.Time{}, false
	}
	cond := meta.FindStatusCondition(cl.Status.Conditions, ackov1alpha1.ConditionPaused)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	return cond.LastTransitionTime.Time, true
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
