// Package restore is the AerospikeRestore reconciler: it restores a backup run (with the chain an
// incremental builds on) into a cluster once, as asrestore Jobs.
package restore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
	"github.com/acko-io/acko/internal/controller/toolrun"
	"github.com/acko-io/acko/internal/pods"
)

// AerospikeRestoreReconciler restores a backup into a cluster once, as Jobs with asrestore.
type AerospikeRestoreReconciler struct {
	client.Client
	Recorder      events.EventRecorder
	Logs          pods.LogReader
	Clock         clock.PassiveClock
	ClusterDomain string
}

// Reconcile starts the restore when its cluster is Ready and its backup run is known, follows its Jobs,
// and writes the status once, at the version it was decided on. A restore that ended is left alone.
func (r *AerospikeRestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &ackov1alpha1.AerospikeRestore{}
	if err := r.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if toolrun.Ended(rs.Status.Phase) {
		return ctrl.Result{}, nil
	}
	next := rs.Status.DeepCopy()
	next.ObservedGeneration = rs.Generation
	stalled, reason, err := r.advance(ctx, rs, next, r.Clock.Now())
	if err != nil {
		return ctrl.Result{}, err
	}
	setRestoreConditions(rs, next, stalled, reason)
	if err := r.writeStatus(ctx, rs, next); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // decided on an older version: decide again
		}
		return ctrl.Result{}, err
	}
	if toolrun.Ended(next.Phase) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: toolrun.Poll}, nil
}

// advance moves the restore one step; stalled says why it cannot start (with its reason).
func (r *AerospikeRestoreReconciler) advance(ctx context.Context, rs *ackov1alpha1.AerospikeRestore,
	next *ackov1alpha1.AerospikeRestoreStatus, now time.Time) (stalled, reason string, err error) {
	if next.Phase == ackov1alpha1.BackupRunning {
		return "", "", r.follow(ctx, rs, next, now)
	}
	from, stalled, reason, err := r.source(ctx, rs)
	if stalled != "" || err != nil {
		return stalled, reason, err
	}
	cluster, stalled, err := r.cluster(ctx, rs)
	if stalled != "" || err != nil {
		return stalled, ackov1alpha1.ReasonClusterNotFound, err
	}
	if wait := toolrun.ClusterNotReadyFor(cluster, false); wait != "" {
		next.Phase, next.Message = ackov1alpha1.BackupPending, wait
		return "", "", nil
	}
	if err := toolrun.EnsureToolAccount(ctx, r.Client, rs.Namespace); err != nil {
		return "", "", err
	}
	next.Chain = make([]ackov1alpha1.RestoreStep, len(from.steps))
	for i, step := range from.steps {
		next.Chain[i] = ackov1alpha1.RestoreStep{ID: step.id, Incremental: step.incremental, Path: step.files.String(),
			Namespaces: step.namespaces, Phase: ackov1alpha1.BackupPending}
	}
	target := from.steps[len(from.steps)-1]
	next.Phase, next.Message, next.BackupID, next.Path = ackov1alpha1.BackupRunning, "", target.id, target.files.String()
	next.Namespaces, next.StartTime = target.namespaces, &metav1.Time{Time: now}
	return "", "", r.startStep(ctx, rs, cluster, from.steps[0], next, 0)
}

func (r *AerospikeRestoreReconciler) cluster(ctx context.Context, rs *ackov1alpha1.AerospikeRestore) (
	*ackov1alpha1.AerospikeCluster, string, error) {
	cluster := &ackov1alpha1.AerospikeCluster{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.Cluster}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("AerospikeCluster %q not found in namespace %q", rs.Spec.Cluster, rs.Namespace), nil
		}
		return nil, "", err
	}
	return cluster, "", nil
}

// startStep creates the Jobs of one step of the chain and marks it Running.
func (r *AerospikeRestoreReconciler) startStep(ctx context.Context, rs *ackov1alpha1.AerospikeRestore,
	cluster *ackov1alpha1.AerospikeCluster, step restoreLink, next *ackov1alpha1.AerospikeRestoreStatus, i int) error {
	for _, ns := range step.namespaces {
		job := backup.RestoreJob(rs, cluster, step.files, i, ns, r.ClusterDomain)
		if err := toolrun.CreateOwned(ctx, r.Client, rs, job); err != nil {
			return err
		}
	}
	next.Chain[i].Phase = ackov1alpha1.BackupRunning
	return nil
}

// restoreLink is one backup a restore reads: its files, their namespaces, and the backup run's id if any.
type restoreLink struct {
	files       backup.Files
	namespaces  []string
	id          string
	incremental bool
}

// restoreFrom is what a restore reads, in order: a full backup, then the incrementals after it.
type restoreFrom struct{ steps []restoreLink }

// source resolves what the restore reads: a successful run of its AerospikeBackup (and, for an
// incremental, its chain), or its source's files.
func (r *AerospikeRestoreReconciler) source(ctx context.Context, rs *ackov1alpha1.AerospikeRestore) (
	from restoreFrom, stalled, reason string, err error) {
	if src := rs.Spec.Source; src != nil {
		return restoreFrom{steps: []restoreLink{{files: backup.SourceFiles(src), namespaces: src.Namespaces}}}, "", "", nil
	}
	ref := rs.Spec.Backup
	bk := &ackov1alpha1.AerospikeBackup{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: ref.Name}, bk); err != nil {
		if apierrors.IsNotFound(err) {
			return from, fmt.Sprintf("AerospikeBackup %q not found in namespace %q", ref.Name, rs.Namespace),
				ackov1alpha1.ReasonBackupNotFound, nil
		}
		return from, "", "", err
	}
	run := backup.RestorableRun(bk.Status.Backups, ref.ID)
	if run == nil {
		return from, fmt.Sprintf("AerospikeBackup %q has no successful backup %s", bk.Name, cmp.Or(ref.ID, "yet")),
			ackov1alpha1.ReasonBackupNotFound, nil
	}
	chain, missing := backup.Chain(bk.Status.Backups, run.ID)
	if missing != "" {
		return from, backup.MissingLink(bk.Name, run.ID, missing), ackov1alpha1.ReasonIncompleteChain, nil
	}
	for _, link := range chain {
		from.steps = append(from.steps, restoreLink{files: backup.RunFiles(bk, link.ID), namespaces: link.Namespaces,
			id: link.ID, incremental: link.Incremental})
	}
	return from, "", "", nil
}

// follow reads the Jobs of the step that runs and adds what asrestore says of the records; once they
// all succeeded, the next step starts, and the restore succeeds after the last one. A step that fails
// fails the restore: the steps after it never run.
func (r *AerospikeRestoreReconciler) follow(ctx context.Context, rs *ackov1alpha1.AerospikeRestore,
	next *ackov1alpha1.AerospikeRestoreStatus, now time.Time) error {
	if len(next.Chain) == 0 { // started by a version that knew no chain: its one step
		next.Chain = []ackov1alpha1.RestoreStep{{ID: next.BackupID, Path: next.Path, Namespaces: next.Namespaces,
			Phase: ackov1alpha1.BackupRunning}}
	}
	i := slices.IndexFunc(next.Chain, func(s ackov1alpha1.RestoreStep) bool { return s.Phase == ackov1alpha1.BackupRunning })
	if i < 0 {
		return nil
	}
	step := &next.Chain[i]
	var total backup.RestoreSummary
	for _, ns := range step.Namespaces {
		name := backup.JobName(rs.Name, backup.RestoreStepName(i), ns)
		done, failure, lines, err := toolrun.JobOutcome(ctx, r.Client, r.Logs, rs.Namespace, name, backup.RestoreTool, now)
		if err != nil || !done {
			return err
		}
		if failure != "" {
			step.Phase = ackov1alpha1.BackupFailed
			next.Phase, next.Message, next.CompletionTime = ackov1alpha1.BackupFailed, stepNote(next, i)+failure, &metav1.Time{Time: now}
			return nil
		}
		s, _ := backup.ParseRestoreLog(lines)
		total.Add(s)
	}
	step.Phase, step.Records, step.Restored = ackov1alpha1.BackupSucceeded, total.Records, total.Inserted
	next.Records, next.Restored, next.Failures = next.Records+total.Records, next.Restored+total.Inserted, next.Failures+total.Failed
	next.Existed, next.Fresher, next.Expired = next.Existed+total.Existed, next.Fresher+total.Fresher, next.Expired+total.Expired
	next.Skipped = next.Existed + next.Fresher
	if i+1 < len(next.Chain) {
		return r.nextStep(ctx, rs, next, i+1, now)
	}
	next.Phase, next.CompletionTime = ackov1alpha1.BackupSucceeded, &metav1.Time{Time: now}
	return nil
}

// nextStep starts step i of the chain, as it is still recorded; the restore fails if it cannot.
func (r *AerospikeRestoreReconciler) nextStep(ctx context.Context, rs *ackov1alpha1.AerospikeRestore,
	next *ackov1alpha1.AerospikeRestoreStatus, i int, now time.Time) error {
	from, why, _, err := r.source(ctx, rs)
	if err != nil {
		return err
	}
	cluster, gone, err := r.cluster(ctx, rs)
	if err != nil {
		return err
	}
	why = cmp.Or(why, gone)
	if why == "" && (len(from.steps) <= i || from.steps[i].id != next.Chain[i].ID) {
		why = fmt.Sprintf("backup run %s is no longer part of the chain", next.Chain[i].ID)
	}
	if why != "" {
		next.Chain[i].Phase = ackov1alpha1.BackupFailed
		next.Phase, next.Message, next.CompletionTime = ackov1alpha1.BackupFailed, stepNote(next, i)+why, &metav1.Time{Time: now}
		return nil
	}
	return r.startStep(ctx, rs, cluster, from.steps[i], next, i)
}

// stepNote says which step of a chain a failure is of ("" for a single backup), and what was restored.
func stepNote(next *ackov1alpha1.AerospikeRestoreStatus, i int) string {
	if len(next.Chain) < 2 {
		return ""
	}
	return fmt.Sprintf("step %d of %d (backup %s): ", i+1, len(next.Chain), next.Chain[i].ID)
}

// setRestoreConditions: Ready once restored; Reconciling while pending or running; Stalled when it
// cannot start or failed.
func setRestoreConditions(rs *ackov1alpha1.AerospikeRestore, next *ackov1alpha1.AerospikeRestoreStatus,
	stalled, reason string) {
	if stalled != "" {
		next.Message = stalled
		next.Phase = cmp.Or(next.Phase, ackov1alpha1.BackupPending)
	}
	var ready, reconciling *metav1.Condition
	switch next.Phase {
	case ackov1alpha1.BackupSucceeded:
		ready = toolrun.NewCondition(metav1.ConditionTrue, ackov1alpha1.ReasonRestoreSucceeded,
			fmt.Sprintf("restored %d of %d records from %s%s (%s)", next.Restored, next.Records, next.Path,
				backup.ChainNote(next.Chain), backup.RestoreCounts(next)))
	case ackov1alpha1.BackupFailed:
		ready = toolrun.NewCondition(metav1.ConditionFalse, ackov1alpha1.ReasonRestoreFailed, next.Message)
		stalled, reason = next.Message, ackov1alpha1.ReasonRestoreFailed
	case ackov1alpha1.BackupRunning:
		ready = toolrun.NewCondition(metav1.ConditionFalse, ackov1alpha1.ReasonRestoreRunning, "restoring from "+next.Path)
		reconciling = ready
	default:
		ready = toolrun.NewCondition(metav1.ConditionFalse, cmp.Or(reason, ackov1alpha1.ReasonWaitingForCluster), next.Message)
		if stalled == "" {
			reconciling = ready
		}
	}
	conditions := toolrun.Conditions{List: &next.Conditions, Generation: rs.Generation}
	conditions.Set(ackov1alpha1.ConditionReady, ready)
	if reconciling != nil {
		reconciling = toolrun.NewCondition(metav1.ConditionTrue, reconciling.Reason, reconciling.Message)
	}
	conditions.Set(ackov1alpha1.ConditionReconciling, reconciling)
	var stalledCond *metav1.Condition
	if stalled != "" {
		stalledCond = toolrun.NewCondition(metav1.ConditionTrue, reason, stalled)
	}
	conditions.Set(ackov1alpha1.ConditionStalled, stalledCond)
}

func (r *AerospikeRestoreReconciler) writeStatus(ctx context.Context, rs *ackov1alpha1.AerospikeRestore,
	next *ackov1alpha1.AerospikeRestoreStatus) error {
	if equality.Semantic.DeepEqual(&rs.Status, next) {
		return nil
	}
	before := rs.Status.Phase
	rs.Status = *next
	if err := r.Status().Update(ctx, rs); err != nil {
		return err
	}
	if before == next.Phase {
		return nil
	}
	switch next.Phase {
	case ackov1alpha1.BackupRunning:
		r.Recorder.Eventf(rs, nil, corev1.EventTypeNormal, ackov1alpha1.EventRestoreStarted, "Restore",
			"restoring namespaces %s from %s into %s", strings.Join(next.Namespaces, ","), next.Path, rs.Spec.Cluster)
	case ackov1alpha1.BackupSucceeded:
		r.Recorder.Eventf(rs, nil, corev1.EventTypeNormal, ackov1alpha1.EventRestoreSucceeded, "Restore",
			"restored %d of %d records into %s%s (%s)", next.Restored, next.Records, rs.Spec.Cluster,
			backup.ChainNote(next.Chain), backup.RestoreCounts(next))
	case ackov1alpha1.BackupFailed:
		r.Recorder.Eventf(rs, nil, corev1.EventTypeWarning, ackov1alpha1.EventRestoreFailed, "Restore",
			"restore into %s failed: %s", rs.Spec.Cluster, strings.TrimSpace(next.Message))
	}
	return nil
}

// SetupWithManager registers the controller: the restores, the Jobs they own, the clusters they name.
func (r *AerospikeRestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return toolrun.Register(mgr, "aerospikerestore", &ackov1alpha1.AerospikeRestore{}, &ackov1alpha1.AerospikeRestoreList{},
		r.Client, &r.Clock, &r.ClusterDomain, r)
}
