package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
)

// pauseRetryInterval is how soon a pause whose status could not be written is tried again
// (ADR-0018). It is returned with a nil error: controller-runtime ignores RequeueAfter when an
// error is returned and applies its own backoff instead.
const pauseRetryInterval = 10 * time.Second

// handlePause acknowledges spec.paused (ADR-0018, docs/adr/0018-pause-status-consistency.md, Option A): phase Paused and the Paused
// condition in one status update, retried on conflict on a fresh read. Nothing else is touched:
// no child, pod, operation step or prober. Once the status says Paused, a paused reconcile reads
// the cache and returns: no write, no requeue.
func (r *AerospikeClusterReconciler) handlePause(ctx context.Context,
	cluster *ackov1alpha1.AerospikeCluster) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(cluster)
	r.Probers.Stop(key) // a paused cluster costs nothing, not even Aerospike polls
	wasPaused := meta.IsStatusConditionTrue(cluster.Status.Conditions, ackov1alpha1.ConditionPaused)
	err := r.status.UpdateFresh(ctx, cluster, func(s *ackov1alpha1.AerospikeClusterStatus) {
		pausedStatus(s, cluster)
	})
	if err != nil {
		return r.statusWriteFailed(ctx, cluster, "pause", err), nil
	}
	if !wasPaused {
		r.event(cluster, corev1.EventTypeNormal, ackov1alpha1.EventPaused, "Pause", "Cluster paused by user")
	}
	return ctrl.Result{}, nil
}

// pausedStatus is the whole status of a paused cluster: Paused decides the phase whatever the
// circuit breaker says, readiness is no longer tracked (no Ready condition), and spec changes wait
// for resume (PendingChanges). The operator has observed the generation and holds it by the user's
// request, so observedGeneration follows it: kstatus tools (Flux, Argo CD, kubectl wait) see a
// paused cluster as Current, not in progress forever.
func pausedStatus(s *ackov1alpha1.AerospikeClusterStatus, cluster *ackov1alpha1.AerospikeCluster) {
	gen := cluster.Generation
	s.Phase = ackov1alpha1.PhasePaused
	s.ObservedGeneration = gen
	setPaused(s, gen)
	setPendingChanges(s, gen, specHash(&cluster.Spec) != s.AppliedSpecHash)
	meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionReady)
	setReconciling(s, gen, false, ackov1alpha1.ReasonPaused, "Cluster paused by user")
	setStalled(s, gen, "", "")
}

// handleResume clears what the pause left (ADR-0018): the Paused, PendingChanges and stale
// ReconcileFailed conditions go, the circuit breaker is reset (resuming is an explicit request to
// try again), and the phase is Reconciling until the normal reconcile that follows in the same
// pass says otherwise.
func (r *AerospikeClusterReconciler) handleResume(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster) error {
	err := r.status.Update(ctx, cluster, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, t := range []string{ackov1alpha1.ConditionPaused, ackov1alpha1.ConditionPendingChanges,
			ackov1alpha1.ConditionReconcileFailed} {
			meta.RemoveStatusCondition(&s.Conditions, t)
		}
		resetBreaker(s)
		s.Phase = ackov1alpha1.PhaseReconciling
		setReconciling(s, cluster.Generation, true, ackov1alpha1.ReasonApplying, "Resumed by user")
	})
	if err != nil {
		return err
	}
	r.event(cluster, corev1.EventTypeNormal, ackov1alpha1.EventResumed, "Resume", "Cluster resumed by user")
	return nil
}

// wasPaused reports whether the status still shows a pause that the spec no longer asks for.
func wasPaused(cluster *ackov1alpha1.AerospikeCluster) bool {
	return cluster.Status.Phase == ackov1alpha1.PhasePaused ||
		meta.FindStatusCondition(cluster.Status.Conditions, ackov1alpha1.ConditionPaused) != nil
}

// statusWriteFailed surfaces a status write that failed after its retries (event, log, metric)
// and asks to be called again in pauseRetryInterval.
func (r *AerospikeClusterReconciler) statusWriteFailed(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster,
	what string, err error) ctrl.Result {
	if errors.Is(err, errStale) {
		return ctrl.Result{RequeueAfter: time.Second} // the spec changed meanwhile: decide again
	}
	logf.FromContext(ctx).Error(err, "status write failed; retrying", "step", what, "after", pauseRetryInterval)
	metrics.StatusWriteFailures.WithLabelValues(cluster.Namespace, cluster.Name).Inc()
	r.event(cluster, corev1.EventTypeWarning, ackov1alpha1.EventStatusWriteFailed, "UpdateStatus",
		"Could not record the %s in status, retrying in %s: %v", what, pauseRetryInterval, err)
	return ctrl.Result{RequeueAfter: pauseRetryInterval}
}
