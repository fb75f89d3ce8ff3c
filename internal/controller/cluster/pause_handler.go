package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// handlePause acknowledges spec.paused (ADR-0018, docs/adr/0018-pause-status-consistency.md, Option A):
// phase Paused and the Paused condition in one status update, retried on conflict on a fresh read. No
// child is created, changed or deleted and no pod is signalled or deleted, with one exception, the
// safety guards: the prober keeps reading, and the readiness gates (pod status conditions) and the
// PodDisruptionBudget's maxUnavailable have followed the readings already (followReadings; docs/pause.md
// says why and what it costs). Once the status says Paused, a paused reconcile reads the cache and
// returns: no write unless a gate or the budget changes, no requeue.
func (r *AerospikeClusterReconciler) handlePause(ctx context.Context, st *clusterState, paused ending) (ctrl.Result, error) {
	cluster := st.cluster
	r.logUnfollowed(ctx, paused.unfollowed)
	r.ensureProber(st)
	wasPaused := meta.IsStatusConditionTrue(cluster.Status.Conditions, ackov1alpha1.ConditionPaused)
	if _, err := r.writeSummary(ctx, st, paused); err != nil {
		return r.statusWriteFailed(ctx, cluster, "pause", err), nil
	}
	if !wasPaused {
		r.event(cluster, corev1.EventTypeNormal, ackov1alpha1.EventPaused, "Pause", "Cluster paused by user")
	}
	if paused.unfollowed != nil {
		return ctrl.Result{RequeueAfter: statusWriteRetry}, nil
	}
	return ctrl.Result{}, nil
}

// handleResume writes resumedStatus and announces the resume.
func (r *AerospikeClusterReconciler) handleResume(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster) error {
	if err := r.writeResumed(ctx, cluster); err != nil {
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
