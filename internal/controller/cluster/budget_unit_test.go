package cluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// The budget holds every pod while a rack's StatefulSet is replaced to grow its volumes: from the moment
// its claim templates are smaller than the spec's, while it is deleted, and until the new one has adopted
// every pod of its name. A pod of the cluster's labels that no StatefulSet would adopt holds nothing.
func TestBudgetHoldsWhileAStatefulSetIsReplaced(t *testing.T) {
	c := testcluster.New("ns", "c", 2)
	set := func(size string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: appsv1.StatefulSetSpec{
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}}}}
	}
	owned := func(name string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set("1Gi"), appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
		return pod
	}
	st := &clusterState{cluster: c, sets: map[string]*appsv1.StatefulSet{"c": set("2Gi")},
		existingSets: map[string]*appsv1.StatefulSet{"c": set("2Gi")},
		pods:         map[string]*corev1.Pod{"c-0": owned("c-0"), "c-1": owned("c-1")}}
	if st.replacingSets() {
		t.Fatal("steady: no hold")
	}
	st.existingSets["c"] = set("1Gi")
	if !st.replacingSets() {
		t.Error("claim templates smaller than the spec's: the hold comes before the delete")
	}
	deleting := set("1Gi")
	deleting.DeletionTimestamp = &metav1.Time{}
	st.existingSets["c"] = deleting
	if !st.replacingSets() {
		t.Error("StatefulSet being deleted: hold")
	}
	delete(st.existingSets, "c")
	st.pods["c-1"].OwnerReferences = nil
	if !st.replacingSets() {
		t.Error("gone, a pod of its name orphaned: hold")
	}
	st.existingSets["c"] = set("2Gi")
	st.pods["c-1"] = owned("c-1")
	st.pods["debug"] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debug"}}
	if st.replacingSets() {
		t.Error("every pod of the set adopted again (a stray pod of the labels aside): no hold")
	}
}
