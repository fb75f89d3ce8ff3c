package cluster

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if st.replacingSets() {
		resources.HoldEveryPod(st.pdb, len(st.pods))
	}
	if st.existingPDB == nil || resources.NeedsUpdate(st.existingPDB, st.pdb) {
		// Compared with what syncBudget wrote in this reconcile, which the cache may not show yet.
		objects = append(objects, st.pdb)
	}
	return objects, nil
}

// replacingSets: a volume growth replaces a rack's StatefulSet (its claim templates are smaller than the
// spec's, it is being deleted, or it is gone while pods of its name have no controller). From before
// the delete until the new StatefulSet has adopted every pod the budget holds every pod (HoldEveryPod):
// a budget by maxUnavailable counts orphaned pods for nothing, and would let a drain take them all
// (model hole 27).
func (st *clusterState) replacingSets() bool {
	for name, existing := range st.existingSets {
		if desired := st.sets[name]; existing.DeletionTimestamp != nil || desired != nil && claimTemplatesSmaller(existing, desired) {
			return true
		}
	}
	for name, pod := range st.pods {
		if metav1.GetControllerOf(pod) == nil && st.rackPod(name) {
			return true
		}
	}
	return false
}

// rackPod: the pod is named like a pod of a rack's StatefulSet, which adopts it (a pod of the cluster's
// labels that no StatefulSet would adopt never holds the budget).
func (st *clusterState) rackPod(name string) bool {
	for set := range st.sets {
		if _, ok := podOrdinal(set, name); ok {
			return true
		}
	}
	return false
}

// budgetHolds: the budget holds every pod and the disruption controller has counted it so.
func (st *clusterState) budgetHolds() bool {
	pdb := st.existingPDB
	return st.cluster.BudgetDisabled() || pdb != nil && pdb.Spec.MinAvailable != nil &&
		pdb.Spec.MinAvailable.IntValue() >= len(st.pods) && pdb.Status.ObservedGeneration >= pdb.Generation
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
