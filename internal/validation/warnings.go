package validation

import (
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// Warnings lists risky but legal choices of the spec. kubectl prints them as "Warning: ..."; each
// starts with the field it is about.
func Warnings(c *ackov1alpha1.AerospikeCluster) []string {
	return slices.Concat(imageWarnings(c), batchSizeWarnings(c), rackWarnings(c), pausedOperationWarnings(c),
		config.Warnings(c))
}

// batchSizeWarnings: a batch above replication-factor − 1 is capped (config.MaxDown, the rule every
// take-down follows), so a batch never takes the whole cluster down either.
func batchSizeWarnings(c *ackov1alpha1.AerospikeCluster) []string {
	batch, capped := c.BatchSize(), int32(config.MaxDown(c))
	if batch <= capped {
		return nil
	}
	return []string{fmt.Sprintf("spec.rollingUpdateBatchSize: %d is more than replication-factor − 1 allows: "+
		"batches are capped at %d pod(s) (the smallest replication-factor is %d, counting no more copies than "+
		"nodes), so that never two copies of a partition are down at once", batch, capped, config.ReplicationFactor(c))}
}

// rackWarnings: racks beyond spec.size get no pods (the lowest rack ids take the pods).
func rackWarnings(c *ackov1alpha1.AerospikeCluster) []string {
	if !c.MultiRack() || c.Spec.Size < 1 {
		return nil
	}
	var empty []string
	for _, r := range c.RackPlan() {
		if r.Size == 0 {
			empty = append(empty, fmt.Sprint(r.ID))
		}
	}
	if len(empty) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("spec.rackConfig.racks: %d racks for %d pods: rack(s) %s get no pods",
		len(c.Spec.RackConfig.Racks), c.Spec.Size, strings.Join(empty, ", "))}
}

// pausedOperationWarnings: nothing advances while paused, operations included.
func pausedOperationWarnings(c *ackov1alpha1.AerospikeCluster) []string {
	pending := slices.ContainsFunc(c.Spec.Operations, func(op ackov1alpha1.OperationSpec) bool {
		return !OperationFinished(c, op.ID)
	})
	if !c.Spec.Paused || !pending {
		return nil
	}
	return []string{"spec.operations: the cluster is paused: the operation starts only after it is resumed " +
		"(spec.paused: false)"}
}

// updateWarnings: an operation id that already ran never runs again, so adding or editing an
// operation under a used id does nothing.
func updateWarnings(old, c *ackov1alpha1.AerospikeCluster) []string {
	var w []string
	for i, op := range c.Spec.Operations {
		if OperationFinished(old, op.ID) && !hasOperation(old.Spec.Operations, op) {
			w = append(w, fmt.Sprintf("spec.operations[%d].id: operation %q already ran and will not run again: "+
				"use a new id", i, op.ID))
		}
	}
	return w
}

func hasOperation(ops []ackov1alpha1.OperationSpec, op ackov1alpha1.OperationSpec) bool {
	return slices.ContainsFunc(ops, func(o ackov1alpha1.OperationSpec) bool { return apiequality.Semantic.DeepEqual(o, op) })
}
