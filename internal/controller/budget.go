package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/internal/resources"
)

// budgetWhenStable is the PodDisruptionBudget's maxUnavailable while the cluster is stable: the safety
// rule (replication-factor − 1), or the user's lower cap (spec.disruptionBudget.maxUnavailable; the
// webhook refuses a higher one, and a cap set before the factor went down is held to the rule here).
func (st *clusterState) budgetWhenStable() int {
	if limit := int(st.cluster.BudgetCap()); limit > 0 {
		return min(st.maxDown, limit)
	}
	return st.maxDown
}

// withBudget adds the PodDisruptionBudget to the children to apply when it differs, or removes it when
// the user asked for none.
func (r *AerospikeClusterReconciler) withBudget(ctx context.Context, st *clusterState,
	objects []client.Object) ([]client.Object, error) {
	if st.cluster.BudgetDisabled() {
		return objects, r.removeBudget(ctx, st)
	}
	budget := st.budgetWhenStable()
	st.pdb = resources.PodDisruptionBudget(st.cluster, st.pdbMaxUnavailable(budget), budget)
	if st.existingPDB == nil || resources.NeedsUpdate(st.existingPDB, st.pdb) {
		// Compared with what syncBudget wrote in this reconcile, which the cache may not show yet.
		objects = append(objects, st.pdb)
	}
	return objects, nil
}

// removeBudget deletes the cluster's PodDisruptionBudget when the user asked for none
// (spec.disruptionBudget.disabled). The operator's own take-downs keep the safety rule without it:
// the door (mayActNow) checks replication-factor − 1 and the migrations at the moment of each act.
func (r *AerospikeClusterReconciler) removeBudget(ctx context.Context, st *clusterState) error {
	if st.existingPDB == nil {
		return nil
	}
	if err := client.IgnoreNotFound(r.Delete(ctx, st.existingPDB)); err != nil {
		return err
	}
	st.existingPDB = nil
	return nil
}
