package controller

import (
	"context"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

// maxOperationSteps bounds the steps one reconcile takes; each pod needs at most a few.
const maxOperationSteps = 8

// runOperation advances the on-demand operation. An operation InProgress goes before the rolling
// restart; a new operation waits until the cluster is Running and no rolling restart is pending.
func (r *AerospikeClusterReconciler) runOperation(ctx context.Context, st *clusterState) (bool, error) {
	ready, _, _ := st.readiness()
	obs := operations.Observed{
		Pods:                  st.pods,
		Health:                st.health,
		HealthOK:              st.healthOK,
		ClusterReady:          ready && st.work == nil,
		RollingRestartPending: len(st.outdated) > 0 || st.restartsInFlight(),
		Now:                   st.now,
	}
	for range maxOperationSteps {
		res, err := r.Executor.Step(ctx, st.cluster, obs)
		st.operationActive = res.Active
		if err != nil {
			return true, err
		}
		if res.Waiting != "" && (res.Active || operations.PendingOperation(st.cluster) != nil) {
			st.setWork(ackov1alpha1.ReasonOperationRunning, "Operation: %s", res.Waiting)
		}
		if !res.Progressed {
			break
		}
	}
	if st.operationActive {
		op := st.cluster.Status.OperationStatus
		st.setWork(ackov1alpha1.ReasonOperationRunning, "Operation %s (%s) in progress: %d/%d pods done",
			op.ID, op.Kind, len(op.CompletedPods), len(op.TargetPods))
	}
	return false, nil
}

func (st *clusterState) restartsInFlight() bool {
	for _, p := range st.cluster.Status.Pods {
		if p.RestartingUID != "" {
			return true
		}
	}
	return false
}
