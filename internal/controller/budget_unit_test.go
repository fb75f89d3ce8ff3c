package controller

import (
	"testing"

	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

// The budget while stable is the safety rule or the user's lower cap; the operator's batches follow the
// cap (its evictions go through the budget); with no budget the door does not wait for one to count a pod.
func TestDisruptionBudgetControl(t *testing.T) {
	c := testcluster.New("ns", "c", 5)
	c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = int64(3)
	c.Spec.RollingUpdateBatchSize = ptr.To[int32](2)
	st := &clusterState{cluster: c, maxDown: 2}
	if got := st.budgetWhenStable(); got != 2 {
		t.Errorf("no cap: budget %d, want the rule's 2", got)
	}
	if got := c.BatchSize(); got != 2 {
		t.Errorf("no cap: batch %d, want 2", got)
	}
	c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{MaxUnavailable: ptr.To[int32](1)}
	if got := st.budgetWhenStable(); got != 1 {
		t.Errorf("cap 1: budget %d, want 1", got)
	}
	if got := c.BatchSize(); got != 1 {
		t.Errorf("cap 1: batch %d, want 1 (the budget would refuse a second eviction)", got)
	}
	c.Spec.DisruptionBudget.MaxUnavailable = ptr.To[int32](2)
	st.maxDown = 1 // the factor went down since the cap was set: the rule wins
	if got := st.budgetWhenStable(); got != 1 {
		t.Errorf("cap above the rule: budget %d, want the rule's 1", got)
	}
	if taken, why := st.budgetTaken([]string{"c-0"}); taken || why == "" {
		t.Errorf("with a budget not there yet the door waits: %v %q", taken, why)
	}
	c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{Disabled: true}
	if taken, why := st.budgetTaken([]string{"c-0"}); !taken || why != "" {
		t.Errorf("no budget: nothing to wait for, got %v %q", taken, why)
	}
}
