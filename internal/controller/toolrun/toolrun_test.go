package toolrun

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// A cluster's status writes wake the backups naming it only when what a waiting run reads changed.
func TestClusterReadinessChanged(t *testing.T) {
	base := &ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	base.Status.Phase = ackov1alpha1.PhaseReconciling
	base.Status.Conditions = []metav1.Condition{
		{Type: ackov1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ackov1alpha1.ReasonPodsNotReady, ObservedGeneration: 2},
		{Type: ackov1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: ackov1alpha1.ReasonRollingRestart, ObservedGeneration: 2}}
	for name, c := range map[string]struct {
		change func(*ackov1alpha1.AerospikeCluster)
		wake   bool
	}{
		"pods counted, message changed": {func(c *ackov1alpha1.AerospikeCluster) {
			c.Status.ReadyPods, c.Status.Conditions[0].Message = 2, "2 of 3 pods Ready"
		}, false},
		"paused":   {func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = true }, true},
		"new spec": {func(c *ackov1alpha1.AerospikeCluster) { c.Generation = 3 }, true},
		"only migrating": {func(c *ackov1alpha1.AerospikeCluster) {
			c.Status.Conditions[0].Reason = ackov1alpha1.ReasonAerospikeNotStable
			c.Status.Conditions[1].Reason = ackov1alpha1.ReasonApplying
		}, true},
		"Ready": {func(c *ackov1alpha1.AerospikeCluster) {
			c.Status.Conditions[0].Status, c.Status.Phase = metav1.ConditionTrue, ackov1alpha1.PhaseRunning
		}, true},
	} {
		n := base.DeepCopy()
		c.change(n)
		if got := ClusterReadinessChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}); got != c.wake {
			t.Errorf("%s: wakes %v, want %v", name, got, c.wake)
		}
	}
}
