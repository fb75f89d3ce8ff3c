// Package metrics defines ACKO's Prometheus metrics. Gauges that describe a cluster are computed
// at scrape time from the AerospikeClusters in the manager's cache, so they cost no reconcile,
// survive operator restarts, and vanish with the cluster. Counters count events and are deleted
// when their cluster is deleted.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

var clusterLabels = []string{"namespace", "name"}

var (
	// PodRestarts counts pod restarts done by the operator, by reason (WarmRestart, ManualRestart,
	// ConfigChanged, ImageChanged, PodSpecChanged).
	PodRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "acko_pod_restarts_total",
		Help: "Pods restarted by the operator, by reason.",
	}, append(clusterLabels, "reason"))

	// ReconcileErrors counts failed reconciles.
	ReconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "acko_reconcile_errors_total",
		Help: "Reconciles of the cluster that failed.",
	}, clusterLabels)

	// Operations counts on-demand operations that ended, by kind and final phase.
	Operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "acko_operations_total",
		Help: "On-demand operations that ended, by kind and phase (Completed or Error).",
	}, append(clusterLabels, "kind", "phase"))

	// StatusWriteFailures counts status writes that failed after their conflict retries.
	StatusWriteFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "acko_status_write_failures_total",
		Help: "Status writes that still failed after retrying on conflicts.",
	}, clusterLabels)
)

var counters = []*prometheus.CounterVec{PodRestarts, ReconcileErrors, Operations, StatusWriteFailures}

var (
	registerOnce sync.Once
	collector    = NewClusterCollector(nil)
)

// Register adds the counters and the scrape-time collector to controller-runtime's registry, which
// the manager serves on its metrics endpoint. The registry is process-wide: a second call (a
// restarted manager in the same process) only points the collector at the new cache.
func Register(clusters ClusterLister) {
	registerOnce.Do(func() {
		for _, c := range counters {
			ctrlmetrics.Registry.MustRegister(c)
		}
		ctrlmetrics.Registry.MustRegister(collector)
	})
	collector.setLister(clusters)
}

// Forget deletes every counter series of a deleted cluster.
func Forget(key types.NamespacedName) {
	labels := prometheus.Labels{"namespace": key.Namespace, "name": key.Name}
	for _, c := range counters {
		c.DeletePartialMatch(labels)
	}
}

// RecordRestart counts one pod restart.
func RecordRestart(key types.NamespacedName, reason ackov1alpha1.RestartReason) {
	PodRestarts.WithLabelValues(key.Namespace, key.Name, string(reason)).Inc()
}
