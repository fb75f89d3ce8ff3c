package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// The newest successful run gives the figures; a backup without a success has its creation time and no
// success series; the interval follows the schedule; a failed run after the success changes nothing.
func TestBackupCollector(t *testing.T) {
	at := func(h int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 12, 3, h, 0, 0, 0, time.UTC)} }
	run := func(id string, phase ackov1alpha1.BackupPhase, start, end int, records int64) ackov1alpha1.BackupRunStatus {
		return ackov1alpha1.BackupRunStatus{ID: id, Phase: phase, StartTime: at(start), CompletionTime: at(end), Records: records}
	}
	done := ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "nightly", CreationTimestamp: *at(0)},
		Spec: ackov1alpha1.AerospikeBackupSpec{Schedule: "0 */6 * * *"},
		Status: ackov1alpha1.AerospikeBackupStatus{Backups: []ackov1alpha1.BackupRunStatus{
			run("a", ackov1alpha1.BackupSucceeded, 1, 2, 10), run("b", ackov1alpha1.BackupSucceeded, 3, 5, 20),
			run("c", ackov1alpha1.BackupFailed, 6, 7, 0)}}}
	fresh := ackov1alpha1.AerospikeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "fresh", CreationTimestamp: *at(4)}}
	c := &BackupCollector{list: func(context.Context) ([]ackov1alpha1.AerospikeBackup, error) {
		return []ackov1alpha1.AerospikeBackup{done, fresh}, nil
	}}
	want := `
# HELP acko_backup_created_timestamp_seconds When the AerospikeBackup was created (Unix time): the alert's start before a first success.
# TYPE acko_backup_created_timestamp_seconds gauge
acko_backup_created_timestamp_seconds{name="fresh",namespace="db"} 1.7962704e+09
acko_backup_created_timestamp_seconds{name="nightly",namespace="db"} 1.796256e+09
# HELP acko_backup_last_duration_seconds How long the newest successful backup ran, from its Jobs' creation to the last one's end.
# TYPE acko_backup_last_duration_seconds gauge
acko_backup_last_duration_seconds{name="nightly",namespace="db"} 7200
# HELP acko_backup_last_records Records in the newest successful backup.
# TYPE acko_backup_last_records gauge
acko_backup_last_records{name="nightly",namespace="db"} 20
# HELP acko_backup_last_success_timestamp_seconds When the newest successful backup completed (Unix time); absent before the first.
# TYPE acko_backup_last_success_timestamp_seconds gauge
acko_backup_last_success_timestamp_seconds{name="nightly",namespace="db"} 1.796274e+09
# HELP acko_backup_schedule_interval_seconds The time between two scheduled backups; absent without a schedule.
# TYPE acko_backup_schedule_interval_seconds gauge
acko_backup_schedule_interval_seconds{name="nightly",namespace="db"} 21600
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	c.elected = make(chan struct{})
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("%d series before this replica leads", n)
	}
}
