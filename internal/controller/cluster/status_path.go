package cluster

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/status"
)

// The status path: the cluster reconciler writes the AerospikeCluster's status only here (issue 41;
// test/arch holds it). Three writes, one per kind of truth:
//   - writeSummary, once at the end of a reconcile (finish), whichever way it ended: what the phases
//     found, a failure counted by the circuit breaker, or the pause acknowledged on a fresh read. Each
//     condition is set by its own setter (cluster_status.go). Backing off writes nothing.
//   - record, the state machine's transitions: a step recorded before the act it allows, or a fact
//     learned that a later step of the same reconcile reads, written with optimistic locking at the
//     version it was decided on (a conflict is status.ErrStale: decided again, never retried blindly).
//   - writeResumed, before any work of the reconcile that resumes (ADR-0018).
//
// The operations executor records its own transitions through its operations.StatusWriter.

// ending is how a reconcile ended, for finish.
type ending struct {
	kind endingKind
	// err is the phases' failure (endedReconciling) or the resume's write failure (endedResumeUnwritten).
	err error
	// wait is how long the circuit breaker still holds reconciles back (endedBackingOff).
	wait time.Duration
	// unfollowed is a failure to follow the readings that counts as no reconcile failure (paused,
	// backing off).
	unfollowed error
}

type endingKind int

const (
	// endedReconciling: the phases ran, or failed (err).
	endedReconciling endingKind = iota
	// endedPaused: spec.paused holds the cluster.
	endedPaused
	// endedBackingOff: the circuit breaker is open and its wait has not run out.
	endedBackingOff
	// endedResumeUnwritten: the resume could not be recorded, so nothing else was done.
	endedResumeUnwritten
)

// finish is the one way out of a reconcile: it writes the summary its ending calls for, announces it,
// and says when to look again.
func (r *AerospikeClusterReconciler) finish(ctx context.Context, st *clusterState, e ending) (ctrl.Result, error) {
	switch e.kind {
	case endedPaused:
		return r.handlePause(ctx, st, e)
	case endedResumeUnwritten:
		return r.statusWriteFailed(ctx, st.cluster, "resume", e.err), nil
	case endedBackingOff:
		r.ensureProber(st)
		wait := e.wait
		if e.unfollowed != nil {
			r.logUnfollowed(ctx, e.unfollowed)
			wait = min(wait, statusWriteRetry) // the guards try again sooner than the backoff
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return r.recordOutcome(ctx, st, e.err)
}

// writeSummary writes the status a reconcile ends with (see the status path above); opened says
// whether the failure it counted opened the circuit breaker.
func (r *AerospikeClusterReconciler) writeSummary(ctx context.Context, st *clusterState, e ending) (opened bool, err error) {
	cluster := st.cluster
	write, summary := r.Status.Update, st.summarize
	switch {
	case e.kind == endedPaused:
		// ADR-0018: never decided on a lagging cache, so that status never says Running while paused.
		write = r.Status.UpdateFresh
		summary = func(s *ackov1alpha1.AerospikeClusterStatus) { pausedStatus(s, cluster) }
	case e.err != nil:
		summary = func(s *ackov1alpha1.AerospikeClusterStatus) {
			if st.pods != nil { // the failure leaves the pod facts and Ready true
				st.summarizePods(s)
				ready, reason, message := st.failedReadiness(s)
				setReady(s, cluster.Generation, conditionStatus(ready), reason, message)
			}
			opened = r.Backoff.recordFailure(s, cluster.Generation, e.err, st.now)
		}
	}
	return opened, write(ctx, cluster, summary)
}

// record writes a transition of the cluster's state machine (see the status path above).
func (r *AerospikeClusterReconciler) record(ctx context.Context, st *clusterState,
	mutate func(*ackov1alpha1.AerospikeClusterStatus)) error {
	return r.Status.WriteStatus(ctx, st.cluster, mutate)
}

// writeResumed clears what the pause left (resumedStatus), retried on conflict.
func (r *AerospikeClusterReconciler) writeResumed(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster) error {
	return r.Status.Update(ctx, cluster, func(s *ackov1alpha1.AerospikeClusterStatus) {
		resumedStatus(s, cluster.Generation)
	})
}

// recordOutcome writes the status summary (or the failure), emits the events of what happened, and
// decides when to look again.
func (r *AerospikeClusterReconciler) recordOutcome(ctx context.Context, st *clusterState, err error) (ctrl.Result, error) {
	defer st.announce(r) // work that happened is announced even when a later step failed
	if errors.Is(err, status.ErrStale) || apierrors.IsConflict(err) {
		// Decided on an older object (the cache was behind): look again once it has the newer one.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if err != nil {
		return r.recordFailure(ctx, st, err)
	}
	breakerWasOpen := breakerOpen(&st.cluster.Status)
	before := slices.Clone(st.cluster.Status.Conditions)
	if _, err := r.writeSummary(ctx, st, ending{kind: endedReconciling}); err != nil {
		return r.recordOutcome(ctx, st, err)
	}
	if breakerWasOpen {
		r.event(st.cluster, corev1.EventTypeNormal, ackov1alpha1.EventCircuitBreakerClosed, "Reconcile",
			"Reconcile succeeded; circuit breaker closed")
	}
	st.announceConditionChanges(before)
	r.ensureProber(st)
	return ctrl.Result{RequeueAfter: st.requeueAfter(r.PollInterval)}, nil
}

// recordFailure counts the failure in the circuit breaker and surfaces it as condition, event,
// log and metric. The delay is returned with a nil error because controller-runtime ignores
// RequeueAfter when an error is returned.
func (r *AerospikeClusterReconciler) recordFailure(ctx context.Context, st *clusterState, err error) (ctrl.Result, error) {
	cluster := st.cluster
	logf.FromContext(ctx).Error(err, "reconcile failed")
	metrics.ReconcileErrors.WithLabelValues(cluster.Namespace, cluster.Name).Inc()
	r.event(cluster, corev1.EventTypeWarning, ackov1alpha1.EventReconcileError, "Reconcile", "Reconcile failed: %v", err)
	opened, werr := r.writeSummary(ctx, st, ending{kind: endedReconciling, err: err})
	r.ensureProber(st) // the prober keeps reading the pods that run now
	if werr != nil {
		logf.FromContext(ctx).Error(werr, "could not record the reconcile failure in status")
	}
	failures := int32(1)
	if cb := cluster.Status.CircuitBreaker; cb != nil {
		failures = cb.ConsecutiveFailures
	}
	if opened {
		r.event(cluster, corev1.EventTypeWarning, ackov1alpha1.EventCircuitBreakerOpened, "Reconcile",
			"%d consecutive reconcile failures: backing off %s", failures, r.Backoff.delay(failures))
	}
	return ctrl.Result{RequeueAfter: r.Backoff.delay(failures)}, nil
}

// logUnfollowed logs a failure to follow the readings where no reconcile failure is counted (paused,
// backing off): the next reading or reconcile tries again.
func (r *AerospikeClusterReconciler) logUnfollowed(ctx context.Context, err error) {
	if err != nil {
		logf.FromContext(ctx).Error(err, "could not set the readiness gates and the PodDisruptionBudget from the readings")
	}
}

// statusWriteFailed surfaces a status write that failed after its retries (event, log, metric)
// and asks to be called again in statusWriteRetry.
func (r *AerospikeClusterReconciler) statusWriteFailed(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster,
	what string, err error) ctrl.Result {
	if errors.Is(err, status.ErrStale) {
		return ctrl.Result{RequeueAfter: time.Second} // the spec changed meanwhile: decide again
	}
	logf.FromContext(ctx).Error(err, "status write failed; retrying", "step", what, "after", statusWriteRetry)
	metrics.StatusWriteFailures.WithLabelValues(cluster.Namespace, cluster.Name).Inc()
	r.event(cluster, corev1.EventTypeWarning, ackov1alpha1.EventStatusWriteFailed, "UpdateStatus",
		"Could not record the %s in status, retrying in %s: %v", what, statusWriteRetry, err)
	return ctrl.Result{RequeueAfter: statusWriteRetry}
}

// statusWriteRetry is how soon a pause or resume whose status could not be written is tried again
// (ADR-0018). It is returned with a nil error: controller-runtime ignores RequeueAfter when an
// error is returned and applies its own backoff instead.
const statusWriteRetry = 10 * time.Second
