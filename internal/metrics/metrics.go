// Package metrics defines ACKO's Prometheus metrics. Gauges that describe a cluster are computed
// at scrape time from the AerospikeClusters in the manager's cache, so they cost no reconcile,
// survive operator restarts, and vanish with the cluster. Counters count events and are deleted
// when their cluster is deleted.
package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/version"
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

// buildInfo says which build serves the metrics, as `manager --version` does.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "acko_build_info",
	Help: "Always 1; the labels say which build of ACKO this is (version, git revision).",
}, []string{"version", "revision"})

var (
	registerOnce sync.Once
	collector    = NewClusterCollector(nil)
)

// Register adds the counters, the build info and the scrape-time collector to controller-runtime's
// registry, which the manager serves on its metrics endpoint. The per-cluster gauges are served only
// once elected is closed (the manager's Elected channel), so that of two replicas only the leader
// exports them and a sum over replicas counts each cluster once; nil serves them at once. The
// registry is process-wide: a second call (a restarted manager in the same process) only points the
// collector at the new cache and election.
func Register(clusters ClusterLister, elected <-chan struct{}) {
	registerOnce.Do(func() {
		for _, c := range counters {
			ctrlmetrics.Registry.MustRegister(c)
		}
		buildInfo.WithLabelValues(version.Version, version.Revision).Set(1)
		ctrlmetrics.Registry.MustRegister(buildInfo, collector)
	})
	collector.setSource(clusters, elected)
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

// Names lists the name of every metric ACKO itself exports (not controller-runtime's), for the
// check that dashboards and alert rules query only metrics that exist.
func Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range counters {
			c.Describe(ch)
		}
		buildInfo.Describe(ch)
		collector.Describe(ch)
		backups.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		// Desc has no getter for its name; its String() starts with Desc{fqName: "NAME", ...
		if _, rest, ok := strings.Cut(d.String(), `fqName: "`); ok {
			name, _, _ := strings.Cut(rest, `"`)
			names = append(names, name)
		}
	}
	return names
}
