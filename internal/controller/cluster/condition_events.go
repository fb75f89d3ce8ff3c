package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// announceConditionChanges turns condition transitions into events, so that a condition that
// stays the same across reconciles is announced once.
func (st *clusterState) announceConditionChanges(before []metav1.Condition) {
	after := st.cluster.Status.Conditions
	changed := func(typ string) bool { return conditionChanged(before, after, typ) }
	if changed(ackov1alpha1.ConditionReconcileFailed) && st.invalid != "" {
		reason := ackov1alpha1.EventInvalidSpec
		if st.invalidReason == ackov1alpha1.ReasonChildConflict {
			reason = ackov1alpha1.EventChildConflict
		}
		st.addEvent(corev1.EventTypeWarning, reason, "Validate", nil, "%s", st.invalid)
	}
	if c := meta.FindStatusCondition(after, ackov1alpha1.ConditionReconciling); c != nil &&
		c.Reason == ackov1alpha1.ReasonRestartBlocked && changed(ackov1alpha1.ConditionReconciling) {
		st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventRollingRestartBlocked, "Restart", nil, "%s", c.Message)
	}
	if c := meta.FindStatusCondition(after, ackov1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue &&
		c.Reason == ackov1alpha1.ReasonRolloutStuck && changed(ackov1alpha1.ConditionStalled) {
		st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventRolloutStuck, "Restart", nil, "%s", c.Message)
	}
	st.announceSplit(before, after)
	if c := meta.FindStatusCondition(after, ackov1alpha1.ConditionNodeLost); c != nil &&
		!meta.IsStatusConditionTrue(before, ackov1alpha1.ConditionNodeLost) {
		st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventNodeLost, "Observe", nil, "%s", c.Message)
	}
}

// announceSplit: a Warning when the nodes split, and a Normal event when they form one cluster again.
func (st *clusterState) announceSplit(before, after []metav1.Condition) {
	c := meta.FindStatusCondition(after, ackov1alpha1.ConditionClusterSplit)
	if c == nil || !conditionChanged(before, after, ackov1alpha1.ConditionClusterSplit) {
		return
	}
	if c.Status == metav1.ConditionTrue {
		st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventClusterSplit, "Observe", nil, "%s", c.Message)
	} else if meta.IsStatusConditionTrue(before, ackov1alpha1.ConditionClusterSplit) {
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventClusterJoined, "Observe", nil, "%s", c.Message)
	}
}

// conditionChanged reports whether a condition's status, reason or message differs between two statuses.
func conditionChanged(before, after []metav1.Condition, typ string) bool {
	b, a := meta.FindStatusCondition(before, typ), meta.FindStatusCondition(after, typ)
	if b == nil || a == nil {
		return b != a
	}
	return b.Status != a.Status || b.Reason != a.Reason || b.Message != a.Message
}
