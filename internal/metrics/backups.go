package metrics

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
)

// BackupLister lists the AerospikeBackups to describe; the manager's cache serves it from memory.
type BackupLister func(ctx context.Context) ([]ackov1alpha1.AerospikeBackup, error)

var (
	backupSuccessDesc = prometheus.NewDesc("acko_backup_last_success_timestamp_seconds",
		"When the newest successful backup completed (Unix time); absent before the first.", clusterLabels, nil)
	backupCreatedDesc = prometheus.NewDesc("acko_backup_created_timestamp_seconds",
		"When the AerospikeBackup was created (Unix time): the alert's start before a first success.", clusterLabels, nil)
	backupDurationDesc = prometheus.NewDesc("acko_backup_last_duration_seconds",
		"How long the newest successful backup ran, from its Jobs' creation to the last one's end.", clusterLabels, nil)
	backupRecordsDesc = prometheus.NewDesc("acko_backup_last_records",
		"Records in the newest successful backup.", clusterLabels, nil)
	backupIntervalDesc = prometheus.NewDesc("acko_backup_schedule_interval_seconds",
		"The time between two scheduled backups; absent without a schedule.", clusterLabels, nil)
)

// BackupCollector computes the per-backup gauges at scrape time, as ClusterCollector does for clusters.
type BackupCollector struct {
	mu      sync.Mutex
	list    BackupLister
	elected <-chan struct{}
}

var (
	backupsOnce sync.Once
	backups     = &BackupCollector{}
)

// RegisterBackups serves the backups' gauges (on the leader only, once elected is closed; nil: at once).
func RegisterBackups(list BackupLister, elected <-chan struct{}) {
	backupsOnce.Do(func() { ctrlmetrics.Registry.MustRegister(backups) })
	backups.mu.Lock()
	defer backups.mu.Unlock()
	backups.list, backups.elected = list, elected
}

// Describe implements prometheus.Collector.
func (c *BackupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{backupSuccessDesc, backupCreatedDesc, backupDurationDesc, backupRecordsDesc,
		backupIntervalDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BackupCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	list, elected := c.list, c.elected
	c.mu.Unlock()
	if list == nil || !closed(elected) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	items, err := list(ctx)
	if err != nil {
		return
	}
	for i := range items {
		collectBackup(ch, &items[i])
	}
}

func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func collectBackup(ch chan<- prometheus.Metric, bk *ackov1alpha1.AerospikeBackup) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, bk.Namespace, bk.Name)
	}
	gauge(backupCreatedDesc, float64(bk.CreationTimestamp.Unix()))
	if s, err := backup.ParseSchedule(bk.Spec.Schedule); bk.Spec.Schedule != "" && err == nil {
		gauge(backupIntervalDesc, backup.Interval(s, time.Now()).Seconds())
	}
	for _, run := range slices.Backward(bk.Status.Backups) {
		if run.Phase != ackov1alpha1.BackupSucceeded || run.CompletionTime == nil {
			continue
		}
		gauge(backupSuccessDesc, float64(run.CompletionTime.Unix()))
		if run.StartTime != nil {
			gauge(backupDurationDesc, run.CompletionTime.Sub(run.StartTime.Time).Seconds())
		}
		gauge(backupRecordsDesc, float64(run.Records))
		break
	}
}
