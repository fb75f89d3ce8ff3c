package controller

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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
)

// +kubebuilder:rbac:groups=acko.io,resources=aerospikebackups;aerospikerestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=acko.io,resources=aerospikebackups/status;aerospikerestores/status,verbs=get;update
// +kubebuilder:rbac:groups=acko.io,resources=aerospikebackups/finalizers;aerospikerestores/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create

// toolPoll is how often a running backup or restore is looked at besides its Jobs' changes (the
// cluster's stability during the run is sampled then).
const toolPoll = 5 * time.Second

// AerospikeBackupReconciler runs the backups an AerospikeBackup declares, as Jobs with asbackup.
type AerospikeBackupReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Logs reads the tools' summaries from their pods' logs.
	Logs          LogReader
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
	lastTime, nextTime, newID := &next.LastScheduleTime, &next.NextScheduleTime, backup.ScheduledID
	if incremental {
		lastTime, nextTime, newID = &next.LastIncrementalScheduleTime, &next.NextIncrementalScheduleTime,
			backup.ScheduledIncrementalID
	}
	if expr == "" {
		*nextTime = nil
		return nil
	}
	s, err := backup.ParseSchedule(expr)
	if err != nil {
		*nextTime = nil
		return err
	}
	last := bk.CreationTimestamp.Time
	if *lastTime != nil {
		last = (*lastTime).Time
	}
	due, after := backup.Due(s, last, now)
	*nextTime = &metav1.Time{Time: after}
	if due != nil {
		*lastTime = &metav1.Time{Time: *due}
		id := newID(*due)
		// Like a CronJob that forbids concurrency: a scheduled run does not queue behind another one of
		// its kind, and an incremental not behind a scheduled full one either (which covers it).
		waiting := slices.ContainsFunc(next.Backups, func(b ackov1alpha1.BackupRunStatus) bool {
			return b.Trigger == ackov1alpha1.TriggerSchedule && !ended(b.Phase) && (incremental || !b.Incremental) ||
				b.ID == id
		})
		if !waiting {
			next.Backups = append(next.Backups, ackov1alpha1.BackupRunStatus{ID: id,
				Trigger: ackov1alpha1.TriggerSchedule, Phase: ackov1alpha1.BackupPending, Incremental: incremental})
		}
	}
	return nil
}

func ended(p ackov1alpha1.BackupPhase) bool {
	return p == ackov1alpha1.BackupSucceeded || p == ackov1alpha1.BackupFailed
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
		return toolPoll, r.follow(ctx, bk, cluster, &next.Backups[i], now)
	}
	for i := range next.Backups {
		run := &next.Backups[i]
		if run.Phase != ackov1alpha1.BackupPending {
			continue
		}
		if cluster == nil {
			return 0, nil // Stalled says why; the cluster's creation wakes the backup
		}
		if wait := clusterNotReadyFor(cluster, bk.Spec.WhileChanging); wait != "" {
			run.Message = wait
			return toolPoll, nil
		}
		if base, _ := backup.IncrementalStart(next.Backups); run.Incremental && base == nil {
			run.Message = waitingForFull // a full run's success wakes it (its Job's change)
			continue
		}
		return toolPoll, r.start(ctx, bk, cluster, run, next.Backups, now)
	}
	return 0, nil
}

// clusterNotReadyFor says why a backup or restore waits for the cluster, or "" when it may run: never
// while paused; while the operator changes the cluster (a roll, a scale, an operation) only when asked.
func clusterNotReadyFor(c *ackov1alpha1.AerospikeCluster, whileChanging bool) string {
	switch {
	case c.Spec.Paused:
		return fmt.Sprintf("waiting: cluster %s is paused", c.Name)
	case whileChanging || clusterReady(c) || onlyMigrating(c):
		return ""
	}
	return fmt.Sprintf("waiting for cluster %s to be Ready (it is %s)", c.Name, cmp.Or(string(c.Status.Phase), "starting"))
}

// onlyMigrating: every pod is Ready at the current spec and nothing is in progress but Aerospike's own
// migrations. A backup may run then (the tools scan by partition); its status says the cluster was not
// stable.
func onlyMigrating(c *ackov1alpha1.AerospikeCluster) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReady)
	reconciling := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReconciling)
	return ready != nil && ready.ObservedGeneration == c.Generation && ready.Reason == ackov1alpha1.ReasonAerospikeNotStable &&
		(reconciling == nil || reconciling.Status != metav1.ConditionTrue || reconciling.Reason == ackov1alpha1.ReasonApplying)
}

// clusterReady: every pod Ready at the current spec and Aerospike stable, no migrations.
func clusterReady(c *ackov1alpha1.AerospikeCluster) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == c.Generation
}

// start creates the run's Jobs (the ServiceAccount first) and marks it Running; an incremental records
// what it builds on first (its Jobs back up from there).
func (r *AerospikeBackupReconciler) start(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	cluster *ackov1alpha1.AerospikeCluster, run *ackov1alpha1.BackupRunStatus, runs []ackov1alpha1.BackupRunStatus,
	now time.Time) error {
	namespaces := backup.Namespaces(bk, cluster)
	if err := ensureToolAccount(ctx, r.Client, bk.Namespace); err != nil {
		return err
	}
	if base, after := backup.IncrementalStart(runs); run.Incremental {
		run.Base, run.After = base.ID, after.ID
		run.ModifiedAfter = &metav1.Time{Time: after.StartTime.Truncate(time.Second)}
	}
	for _, ns := range namespaces {
		if err := createOwned(ctx, r.Client, bk, backup.Job(bk, cluster, *run, ns, r.ClusterDomain)); err != nil {
			return err
		}
	}
	run.Phase, run.Message = ackov1alpha1.BackupRunning, ""
	run.Namespaces, run.Path = namespaces, backup.RunFiles(bk, run.ID).String()
	run.StartTime = &metav1.Time{Time: now}
	run.ClusterStable = ptr.To(clusterReady(cluster))
	return nil
}

// ensureToolAccount creates the namespace's tool ServiceAccount when it is missing. It is shared by the
// namespace's backups and restores, so no one of them owns it.
func ensureToolAccount(ctx context.Context, c client.Client, namespace string) error {
	err := c.Create(ctx, backup.ServiceAccount(namespace))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createOwned creates a Job owned by owner; one that exists already (created before a crash) is kept.
func createOwned(ctx context.Context, c client.Client, owner client.Object, job *batchv1.Job) error {
	if err := controllerutil.SetControllerReference(owner, job, c.Scheme()); err != nil {
		return err
	}
	err := c.Create(ctx, job)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// follow reads the run's Jobs: all complete, the run succeeded with what their logs say; one failed
// or gone, it failed. Meanwhile it samples the cluster's stability.
func (r *AerospikeBackupReconciler) follow(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	cluster *ackov1alpha1.AerospikeCluster, run *ackov1alpha1.BackupRunStatus, now time.Time) error {
	if cluster == nil || !clusterReady(cluster) {
		run.ClusterStable = ptr.To(false)
	}
	var total backup.Summary
	for _, ns := range run.Namespaces {
		name := backup.JobName(bk.Name, run.ID, ns)
		done, failure, lines, err := jobOutcome(ctx, r.Client, r.Logs, bk.Namespace, name, backup.BackupTool)
		if err != nil || !done {
			return err
		}
		if failure != "" {
			run.Phase, run.Message, run.CompletionTime = ackov1alpha1.BackupFailed, failure, &metav1.Time{Time: now}
			return nil
		}
		s, ok := backup.ParseBackupLog(lines)
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

// logLines is how much of a tool's log is read for its summary.
const logLines = 20

// jobOutcome reads a tool Job: done once it ended; failure says why it failed ("" when it succeeded);
// lines are the end of its pod's log.
func jobOutcome(ctx context.Context, c client.Client, logs LogReader, namespace, name, tool string) (
	done bool, failure string, lines []string, err error) {
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return true, fmt.Sprintf("job %s is gone", name), nil, nil
		}
		return false, "", nil, err
	}
	complete, failed := jobFinished(job)
	pod, err := jobPod(ctx, c, job)
	if err != nil {
		return false, "", nil, err
	}
	if !complete && !failed {
		if why := cannotStart(pod); why != "" {
			// The kubelet would retry until the Job's deadline: say it now, and take the Job away.
			err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
			return true, fmt.Sprintf("job %s cannot start: %s", name, why), nil, client.IgnoreNotFound(err)
		}
		return false, "", nil, nil
	}
	if pod != nil {
		if lines, err = logs.Tail(ctx, pod, tool, logLines); err != nil {
			logf.FromContext(ctx).V(1).Info("tool log not read", "pod", pod.Name, "error", err.Error())
		}
	}
	if failed {
		failure = fmt.Sprintf("job %s failed: %s", name, backup.LastError(lines, jobFailure(job)))
	}
	return true, failure, lines, nil
}

// cannotStart is why the tool's container cannot start without the user: a Secret or key it names is
// missing (a destination without credentials), or its image does not exist.
func cannotStart(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && (w.Reason == "CreateContainerConfigError" || w.Reason == "InvalidImageName") {
			return w.Reason + ": " + w.Message
		}
	}
	return ""
}

func jobFinished(job *batchv1.Job) (complete, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobFailed:
			failed = true
		}
	}
	return complete, failed
}

func jobFailure(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return "failed"
}

// jobPod is the newest pod of a Job, if any is left.
func jobPod(ctx context.Context, c client.Client, job *batchv1.Job) (*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, err
	}
	var newest *corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = p
		}
	}
	return newest, nil
}

// applyRetention drops the runs the retention no longer keeps: their Jobs deleted, their files (a failed
// run's partial ones too) removed by a cleanup Job, on-demand ids remembered so that they never run again.
func (r *AerospikeBackupReconciler) applyRetention(ctx context.Context, bk *ackov1alpha1.AerospikeBackup,
	next *ackov1alpha1.AerospikeBackupStatus, now time.Time) error {
	keep, drop := backup.Prune(next.Backups, bk.Spec.Retention, now)
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
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: bk.Namespace, Name: backup.JobName(bk.Name, run.ID, ns)}}
		if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := createOwned(ctx, r.Client, bk, backup.CleanupJob(bk, run.ID, ns)); err != nil {
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
		case ended(run.Phase):
			newest = run
		case active == nil || run.Phase == ackov1alpha1.BackupRunning:
			active = run // the running one, else the first that waits
		}
		if run.Phase == ackov1alpha1.BackupSucceeded {
			next.LastSuccessTime = run.CompletionTime
		}
	}
	conditions := conditionSetter{list: &next.Conditions, generation: bk.Generation}
	conditions.set(ackov1alpha1.ConditionReady, readyCondition(newest))
	conditions.set(ackov1alpha1.ConditionStalled, stalledCondition(bk, newest, active, clusterErr, scheduleErr))
	if clusterErr != nil {
		active = nil
	}
	conditions.set(ackov1alpha1.ConditionReconciling, reconcilingCondition(active))
}

// conditionSetter sets a condition, or removes it when given none: no stale condition stays.
type conditionSetter struct {
	list       *[]metav1.Condition
	generation int64
}

func (s conditionSetter) set(typ string, c *metav1.Condition) {
	if c == nil {
		meta.RemoveStatusCondition(s.list, typ)
		return
	}
	c.Type, c.ObservedGeneration = typ, s.generation
	meta.SetStatusCondition(s.list, *c)
}

func newCondition(status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	return &metav1.Condition{Status: status, Reason: reason, Message: message}
}

func readyCondition(newest *ackov1alpha1.BackupRunStatus) *metav1.Condition {
	switch {
	case newest == nil:
		return newCondition(metav1.ConditionFalse, ackov1alpha1.ReasonNoBackupYet, "no backup has completed yet")
	case newest.Phase == ackov1alpha1.BackupSucceeded:
		return newCondition(metav1.ConditionTrue, ackov1alpha1.ReasonBackupSucceeded,
			fmt.Sprintf("backup %s: %d records in %s", newest.ID, newest.Records, newest.Path))
	}
	return newCondition(metav1.ConditionFalse, ackov1alpha1.ReasonBackupFailed,
		fmt.Sprintf("backup %s failed: %s", newest.ID, newest.Message))
}

func stalledCondition(bk *ackov1alpha1.AerospikeBackup, newest, active *ackov1alpha1.BackupRunStatus,
	clusterErr, scheduleErr error) *metav1.Condition {
	switch {
	case clusterErr != nil:
		return newCondition(metav1.ConditionTrue, ackov1alpha1.ReasonClusterNotFound,
			fmt.Sprintf("AerospikeCluster %q not found in namespace %q", bk.Spec.Cluster, bk.Namespace))
	case scheduleErr != nil:
		return newCondition(metav1.ConditionTrue, ackov1alpha1.ReasonInvalidSpec, scheduleErr.Error())
	case newest != nil && newest.Phase == ackov1alpha1.BackupFailed && active == nil:
		return newCondition(metav1.ConditionTrue, ackov1alpha1.ReasonBackupFailed,
			fmt.Sprintf("backup %s failed: %s", newest.ID, newest.Message))
	}
	return nil
}

func reconcilingCondition(active *ackov1alpha1.BackupRunStatus) *metav1.Condition {
	switch {
	case active == nil:
		return nil
	case active.Phase == ackov1alpha1.BackupRunning:
		return newCondition(metav1.ConditionTrue, ackov1alpha1.ReasonBackupRunning, fmt.Sprintf("backup %s is running", active.ID))
	case active.Message == waitingForFull:
		return newCondition(metav1.ConditionTrue, ackov1alpha1.ReasonWaitingForFullBackup,
			fmt.Sprintf("incremental backup %s is %s", active.ID, active.Message))
	}
	return newCondition(metav1.ConditionTrue, ackov1alpha1.ReasonWaitingForCluster,
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
		backup.ModifiedAfterArg(run.ModifiedAfter.Time), run.Base)
}

func unstableNote(run ackov1alpha1.BackupRunStatus) string {
	if run.ClusterStable != nil && !*run.ClusterStable {
		return " (the cluster was not stable during the run)"
	}
	return ""
}

// SetupWithManager registers the controller: the backups, and the Jobs they own.
func (r *AerospikeBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.ClusterDomain == "" {
		r.ClusterDomain = ackov1alpha1.DefaultClusterDomain
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&ackov1alpha1.AerospikeBackup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Watches(&ackov1alpha1.AerospikeCluster{}, handler.EnqueueRequestsFromMapFunc(
			namingCluster(r.Client, &ackov1alpha1.AerospikeBackupList{})), builder.WithPredicates(clusterReadinessChanged)).
		Named("aerospikebackup").
		Complete(r)
}

// clusterReadinessChanged lets through the cluster changes that can start a waiting run (what
// clusterNotReadyFor reads: the generation, the pause, Ready and Reconciling), not every status write of
// a cluster's reconciles.
var clusterReadinessChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*ackov1alpha1.AerospikeCluster)
		n, ok2 := e.ObjectNew.(*ackov1alpha1.AerospikeCluster)
		if !ok1 || !ok2 || o.Generation != n.Generation || o.Spec.Paused != n.Spec.Paused {
			return true
		}
		for _, t := range []string{ackov1alpha1.ConditionReady, ackov1alpha1.ConditionReconciling} {
			a, b := meta.FindStatusCondition(o.Status.Conditions, t), meta.FindStatusCondition(n.Status.Conditions, t)
			if (a == nil) != (b == nil) || a != nil && (a.Status != b.Status || a.Reason != b.Reason ||
				a.ObservedGeneration != b.ObservedGeneration) {
				return true
			}
		}
		return o.Status.Phase != n.Status.Phase
	},
}

// namingCluster maps a cluster to the backups or restores (list) of its namespace that name it: a run
// that waits for the cluster to be Ready or resumed goes as soon as it is.
func namingCluster[L client.ObjectList](c client.Reader, list L) handler.MapFunc {
	return func(ctx context.Context, cluster client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(L)
		if err := c.List(ctx, l, client.InNamespace(cluster.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			var named string
			switch obj := o.(type) {
			case *ackov1alpha1.AerospikeBackup:
				named = obj.Spec.Cluster
			case *ackov1alpha1.AerospikeRestore:
				named = obj.Spec.Cluster
			}
			if named == cluster.GetName() {
				item := o.(client.Object)
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
			}
			return nil
		})
		return out
	}
}
