// Package backup is the AerospikeBackup reconciler: it queues the runs the spec and its schedules
// ask for and runs them one at a time, as asbackup Jobs, then applies the retention.
package backup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	backups "github.com/acko-io/acko/internal/backup"
	"github.com/acko-io/acko/internal/controller/toolrun"
	"github.com/acko-io/acko/internal/pods"
)

// +kubebuilder:rbac:groups=acko.io,resources=aerospikebackups;aerospikerestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=acko.io,resources=aerospikebackups/status;aerospikerestores/status,verbs=get;update
// +kubebuilder:rbac:groups=acko.io,resources=aerospikebackups/finalizers;aerospikerestores/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create

// AerospikeBackupReconciler runs the backups an AerospikeBackup declares, as Jobs with asbackup.
type AerospikeBackupReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Logs reads the tools' summaries from their pods' logs.
	Logs          pods.LogReader
	Clock         clock.PassiveClock
	ClusterDomain string
}

// Reconcile decides the status from the spec, the cluster and the Jobs, creates what a due run needs,
// and writes the status once, at the version it was decided on (a conflict decides again). Jobs have
// deterministic names, so a crash between a create and the status write repeats nothing.
func (r *AerospikeBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bk := &ackov1alpha1.AerospikeBackup{}
	if err := r.Get(ctx, req.NamespacedName, bk); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()
	next := bk.Status.DeepCopy()
	next.ObservedGeneration = bk.Generation
	cluster, clusterErr := r.cluster(ctx, bk.Namespace, bk.Spec.Cluster)
	if clusterErr != nil && !apierrors.IsNotFound(clusterErr) {
		return ctrl.Result{}, clusterErr
	}
	if clusterErr != nil {
		cluster = nil // a run that runs is still followed; none starts
	}
	scheduleErr := r.queueDueRuns(bk, next, now)
	requeue, err := r.advance(ctx, bk, cluster, next, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.applyRetention(ctx, bk, next, now); err != nil {
		return ctrl.Result{}, err
	}
	setBackupConditions(bk, next, clusterErr, scheduleErr)
	if err := r.writeStatus(ctx, bk, next); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // decided on an older version: decide again
		}
		return ctrl.Result{}, err
	}
	for _, due := range []*metav1.Time{next.NextScheduleTime, next.NextIncrementalScheduleTime} {
		if due != nil {
			requeue = minPositive(requeue, due.Sub(now))
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 {
		return max(b, time.Second)
	}
	return min(a, max(b, time.Second))
}

func (r *AerospikeBackupReconciler) cluster(ctx context.Context, namespace, name string) (
	*ackov1alpha1.AerospikeCluster, error) {
	c := &ackov1alpha1.AerospikeCluster{}
	return c, r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, c)
}

// queueDueRuns adds a Pending run for each new on-demand id, and for each schedule (full, incremental)
// that came due.
func (r *AerospikeBackupReconciler) queueDueRuns(bk *ackov1alpha1.AerospikeBackup,
	next *ackov1alpha1.AerospikeBackupStatus, now time.Time) error {
	for _, run := range bk.Spec.Runs {
		if !slices.ContainsFunc(next.Backups, func(b ackov1alpha1.BackupRunStatus) bool { return b.ID == run.ID }) &&
			!slices.Contains(next.FinishedRuns, run.ID) {
			next.Backups = append(next.Backups, ackov1alpha1.BackupRunStatus{ID: run.ID,
				Trigger: ackov1alpha1.TriggerOnDemand, Phase: ackov1alpha1.BackupPending, Incremental: run.Incremental})
		}
	}
	var incrementalSchedule string
	if inc := bk.Spec.Incremental; inc != nil {
		incrementalSchedule = inc.Schedule
	}
	return errors.Join(r.queueScheduled(bk, next, bk.Spec.Schedule, false, now),
		r.queueScheduled(bk, next, incrementalSchedule, true, now))
}

// queueScheduled adds a Pending run when the schedule (full or incremental runs) came due, and says when
// it comes due next; an empty schedule queues nothing.
func (r *AerospikeBackupReconciler) queueScheduled(bk *ackov1alpha1.AerospikeBackup,
	next *ackov1alpha1.AerospikeBackupStatus, expr string, incremental bool, now time.Time) error {
	lastTime, nextTime, newID := &next.LastScheduleTime, &next.NextScheduleTime, backups.ScheduledID
	if incremental {
		lastTime, nextTime, newID = &next.LastIncrementalScheduleTime, &next.NextIncrementalScheduleTime,
			backups.ScheduledIncrementalID
	}
	if expr == "" {
		*nextTime = nil
		return nil
	}
	s, err := backups.ParseSchedule(expr)
	if err != nil {
		*nextTime = nil
		return err
	}
	last := bk.CreationTimestamp.Time
	if *lastTime != nil {
		last = (*lastTime).Time
	}
	due, after := backups.Due(s, last, now)
	*nextTime = &metav1.Time{Time: after}
	if due != nil {
		*lastTime = &metav1.Time{Time: *due}
		id := newID(*due)
		// Like a CronJob that forbids concurrency: a scheduled run does not queue behind another one of
		// its kind, and an incremental not behind a scheduled full one either (which covers it).
		waiting := slices.ContainsFunc(next.Backups, func(b ackov1alpha1.BackupRunStatus) bool {
			return b.Trigger == ackov1alpha1.TriggerSchedule && !toolrun.Ended(b.Phase) && (incremental || !b.Incremental) ||
				b.ID == id
		})
		if !waiting {
			next.Backups = append(next.Backups, ackov1alpha1.BackupRunStatus{ID: id,
				Trigger: ackov1alpha1.TriggerSchedule, Phase: ackov1alpha1.BackupPending, Incremental: incremental})
		}
	}
	return nil
}

// waitingForFull is the message of an incremental run that waits for a full backup to succeed.
const waitingForFull = "waiting: no full backup has succeeded yet, an incremental needs one to build on"

// advance follows the running run and starts the first pending one when nothing runs: one run at a time.
// An incremental with no full backup to build on waits, and the runs after it go first.
func (r *AerospikeBackupReconciler) advance(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	cluster *ackov1alpha1.AerospikeCluster, next *ackov1alpha1.AerospikeBackupStatus, now time.Time) (time.Duration, error) {
	if i := slices.IndexFunc(next.Backups, func(b ackov1alpha1.BackupRunStatus) bool {
		return b.Phase == ackov1alpha1.BackupRunning
	}); i >= 0 {
		return toolrun.Poll, r.follow(ctx, bk, cluster, &next.Backups[i], now)
	}
	for i := range next.Backups {
		run := &next.Backups[i]
		if run.Phase != ackov1alpha1.BackupPending {
			continue
		}
		if cluster == nil {
			return 0, nil // Stalled says why; the cluster's creation wakes the backup
		}
		if wait := toolrun.ClusterNotReadyFor(cluster, bk.Spec.WhileChanging); wait != "" {
			run.Message = wait
			return toolrun.Poll, nil
		}
		if base, _ := backups.IncrementalStart(next.Backups); run.Incremental && base == nil {
			run.Message = waitingForFull // a full run's success wakes it (its Job's change)
			continue
		}
		return toolrun.Poll, r.start(ctx, bk, cluster, run, next.Backups, now)
	}
	return 0, nil
}

// start creates the run's Jobs (the ServiceAccount first) and marks it Running; an incremental records
// what it builds on first (its Jobs back up from there).
func (r *AerospikeBackupReconciler) start(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	cluster *ackov1alpha1.AerospikeCluster, run *ackov1alpha1.BackupRunStatus, runs []ackov1alpha1.BackupRunStatus,
	now time.Time) error {
	namespaces := backups.Namespaces(bk, cluster)
	if err := toolrun.EnsureToolAccount(ctx, r.Client, bk.Namespace); err != nil {
		return err
	}
	if base, after := backups.IncrementalStart(runs); run.Incremental {
		run.Base, run.After = base.ID, after.ID
		run.ModifiedAfter = &metav1.Time{Time: after.StartTime.Truncate(time.Second)}
	}
	for _, ns := range namespaces {
		if err := toolrun.CreateOwned(ctx, r.Client, bk, backups.Job(bk, cluster, *run, ns, r.ClusterDomain)); err != nil {
			return err
		}
	}
	run.Phase, run.Message = ackov1alpha1.BackupRunning, ""
	run.Namespaces, run.Path = namespaces, backups.RunFiles(bk, run.ID).String()
	run.StartTime = &metav1.Time{Time: now}
	run.ClusterStable = ptr.To(toolrun.ClusterReady(cluster))
	return nil
}

// follow reads the run's Jobs: all complete, the run succeeded with what their logs say; one failed
// or gone, it failed. Meanwhile it samples the cluster's stability.
func (r *AerospikeBackupReconciler) follow(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	cluster *ackov1alpha1.AerospikeCluster, run *ackov1alpha1.BackupRunStatus, now time.Time) error {
	if cluster == nil || !toolrun.ClusterReady(cluster) {
		run.ClusterStable = ptr.To(false)
	}
	var total backups.Summary
	for _, ns := range run.Namespaces {
		name := backups.JobName(bk.Name, run.ID, ns)
		done, failure, lines, err := toolrun.JobOutcome(ctx, r.Client, r.Logs, bk.Namespace, name, backups.BackupTool, now)
		if err != nil || !done {
			return err
		}
		if failure != "" {
			run.Phase, run.Message, run.CompletionTime = ackov1alpha1.BackupFailed, failure, &metav1.Time{Time: now}
			return nil
		}
		s, ok := backups.ParseBackupLog(lines)
		if !ok {
			logf.FromContext(ctx).Info("asbackup's summary not found in its log", "job", name)
		}
		total.Records += s.Records
		total.Bytes += s.Bytes
	}
	run.Phase, run.Message, run.CompletionTime = ackov1alpha1.BackupSucceeded, "", &metav1.Time{Time: now}
	run.Records, run.Bytes = total.Records, total.Bytes
	if run.ClusterStable != nil && !*run.ClusterStable {
		run.Message = fmt.Sprintf("cluster %s was not stable (not Ready, or migrating) during the backup", bk.Spec.Cluster)
	}
	return nil
}

// applyRetention drops the runs the retention no longer keeps: their Jobs deleted, their files (a failed
// run's partial ones too) removed by a cleanup Job, on-demand ids remembered so that they never run again.
func (r *AerospikeBackupReconciler) applyRetention(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	next *ackov1alpha1.AerospikeBackupStatus, now time.Time) error {
	keep, drop := backups.Prune(next.Backups, bk.Spec.Retention, now)
	for _, run := range drop {
		if err := r.dropRun(ctx, bk, run); err != nil {
			return err
		}
		if run.Trigger == ackov1alpha1.TriggerOnDemand {
			next.FinishedRuns = append(next.FinishedRuns, run.ID)
		}
	}
	if len(next.FinishedRuns) > maxFinishedRuns {
		next.FinishedRuns = next.FinishedRuns[len(next.FinishedRuns)-maxFinishedRuns:]
	}
	next.Backups = keep
	return nil
}

// maxFinishedRuns bounds the remembered on-demand ids.
const maxFinishedRuns = 64

func (r *AerospikeBackupReconciler) dropRun(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	run ackov1alpha1.BackupRunStatus) error {
	for _, ns := range run.Namespaces {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: bk.Namespace, Name: backups.JobName(bk.Name, run.ID, ns)}}
		if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := toolrun.CreateOwned(ctx, r.Client, bk, backups.CleanupJob(bk, run.ID, ns)); err != nil {
			return err
		}
	}
	if run.Phase == ackov1alpha1.BackupSucceeded {
		r.Recorder.Eventf(bk, nil, corev1.EventTypeNormal, ackov1alpha1.EventBackupDeleted, "Delete",
			"backup %s deleted by the retention (%s)", run.ID, run.Path)
	}
	return nil
}

// setBackupConditions: Ready while the newest ended run succeeded; Reconciling while a run waits or
// runs; Stalled when the newest ended run failed, the cluster is gone or the schedule does not parse.
func setBackupConditions(bk *ackov1alpha1.AerospikeBackup, next *ackov1alpha1.AerospikeBackupStatus,
	clusterErr, scheduleErr error) {
	var newest, active *ackov1alpha1.BackupRunStatus
	for i := range next.Backups {
		run := &next.Backups[i]
		switch {
		case toolrun.Ended(run.Phase):
			newest = run
		case active == nil || run.Phase == ackov1alpha1.BackupRunning:
			active = run // the running one, else the first that waits
		}
		if run.Phase == ackov1alpha1.BackupSucceeded {
			next.LastSuccessTime = run.CompletionTime
		}
	}
	conditions := toolrun.Conditions{List: &next.Conditions, Generation: bk.Generation}
	conditions.Set(ackov1alpha1.ConditionReady, readyCondition(newest))
	conditions.Set(ackov1alpha1.ConditionStalled, stalledCondition(bk, newest, active, clusterErr, scheduleErr))
	if clusterErr != nil {
		active = nil
	}
	conditions.Set(ackov1alpha1.ConditionReconciling, reconcilingCondition(active))
}

func readyCondition(newest *ackov1alpha1.BackupRunStatus) *metav1.Condition {
	switch {
	case newest == nil:
		return toolrun.NewCondition(metav1.ConditionFalse, ackov1alpha1.ReasonNoBackupYet, "no backup has completed yet")
	case newest.Phase == ackov1alpha1.BackupSucceeded:
		return toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonBackupSucceeded,
			fmt.Sprintf("backup %s: %d records in %s", newest.ID, newest.Records, newest.Path))
	}
	return toolrun.NewCondition(metav1.ConditionFalse, ackov1alpha1.ReasonBackupFailed,
		fmt.Sprintf("backup %s failed: %s", newest.ID, newest.Message))
}

func stalledCondition(bk *ackov1alpha1.AerospikeBackup, newest, active *ackov1alpha1.BackupRunStatus,
	clusterErr, scheduleErr error) *metav1.Condition {
	switch {
	case clusterErr != nil:
		return toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonClusterNotFound,
			fmt.Sprintf("AerospikeCluster %q not found in namespace %q", bk.Spec.Cluster, bk.Namespace))
	case scheduleErr != nil:
		return toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonInvalidSpec, scheduleErr.Error())
	case newest != nil && newest.Phase == ackov1alpha1.BackupFailed && active == nil:
		return toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonBackupFailed,
			fmt.Sprintf("backup %s failed: %s", newest.ID, newest.Message))
	}
	return nil
}

func reconcilingCondition(active *ackov1alpha1.BackupRunStatus) *metav1.Condition {
	switch {
	case active == nil:
		return nil
	case active.Phase == ackov1alpha1.BackupRunning:
		return toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonBackupRunning,
			fmt.Sprintf("backup %s is running", active.ID))
	case active.Message == waitingForFull:
		return toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonWaitingForFullBackup,
			fmt.Sprintf("incremental backup %s is %s", active.ID, active.Message))
	}
	return toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonWaitingForCluster,
		fmt.Sprintf("backup %s is %s", active.ID, cmp.Or(active.Message, "pending")))
}

// writeStatus writes the status decided, at the version it was decided on, and then says what changed:
// a run that started, succeeded or failed.
func (r *AerospikeBackupReconciler) writeStatus(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	next *ackov1alpha1.AerospikeBackupStatus) error {
	if equality.Semantic.DeepEqual(&bk.Status, next) {
		return nil
	}
	before := bk.Status.DeepCopy()
	bk.Status = *next
	if err := r.Status().Update(ctx, bk); err != nil {
		return err
	}
	for _, run := range next.Backups {
		i := slices.IndexFunc(before.Backups, func(b ackov1alpha1.BackupRunStatus) bool { return b.ID == run.ID })
		if run.Message == waitingForFull && (i < 0 || before.Backups[i].Message != run.Message) {
			r.Recorder.Eventf(bk, nil, corev1.EventTypeNormal, ackov1alpha1.EventBackupWaiting, "Backup",
				"incremental backup %s is %s", run.ID, run.Message)
		}
		if i >= 0 && before.Backups[i].Phase == run.Phase {
			continue
		}
		switch run.Phase {
		case ackov1alpha1.BackupRunning:
			r.Recorder.Eventf(bk, nil, corev1.EventTypeNormal, ackov1alpha1.EventBackupStarted, "Backup",
				"backup %s of %s started: namespaces %s to %s%s", run.ID, bk.Spec.Cluster, strings.Join(run.Namespaces, ","),
				run.Path, incrementalNote(run))
		case ackov1alpha1.BackupSucceeded:
			r.Recorder.Eventf(bk, nil, corev1.EventTypeNormal, ackov1alpha1.EventBackupSucceeded, "Backup",
				"backup %s: %d records, %d bytes in %s%s", run.ID, run.Records, run.Bytes, run.Path, unstableNote(run))
		case ackov1alpha1.BackupFailed:
			r.Recorder.Eventf(bk, nil, corev1.EventTypeWarning, ackov1alpha1.EventBackupFailed, "Backup",
				"backup %s failed: %s", run.ID, run.Message)
		}
	}
	return nil
}

// incrementalNote says what an incremental run builds on.
func incrementalNote(run ackov1alpha1.BackupRunStatus) string {
	if !run.Incremental {
		return ""
	}
	return fmt.Sprintf(" (incremental after %s, records changed since %s, base %s)", run.After,
		backups.ModifiedAfterArg(run.ModifiedAfter.Time), run.Base)
}

func unstableNote(run ackov1alpha1.BackupRunStatus) string {
	if run.ClusterStable != nil && !*run.ClusterStable {
		return " (the cluster was not stable during the run)"
	}
	return ""
}

// SetupWithManager registers the controller: the backups, the Jobs they own, the clusters they name.
func (r *AerospikeBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return toolrun.Register(mgr, "aerospikebackup", &ackov1alpha1.AerospikeBackup{}, &ackov1alpha1.AerospikeBackupList{},
		r.Client, &r.Clock, &r.ClusterDomain, r)
}
