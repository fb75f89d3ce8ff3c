package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// One setter per condition, so that every condition is written the same way everywhere.

func setCondition(s *ackov1alpha1.AerospikeClusterStatus, generation int64, typ string,
	status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}

func setPaused(s *ackov1alpha1.AerospikeClusterStatus, generation int64) {
	setCondition(s, generation, ackov1alpha1.ConditionPaused, metav1.ConditionTrue,
		ackov1alpha1.ReasonUserRequested, "Cluster paused by user")
}

// setPendingChanges says whether the spec changed since it was last applied; the condition only
// exists while paused.
func setPendingChanges(s *ackov1alpha1.AerospikeClusterStatus, generation int64, pending bool) {
	if !pending {
		meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionPendingChanges)
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionPendingChanges, metav1.ConditionTrue,
		ackov1alpha1.ReasonSpecChangedWhilePaused, "Spec changes made while paused are applied when the cluster is resumed")
}

func setReady(s *ackov1alpha1.AerospikeClusterStatus, generation int64, status metav1.ConditionStatus, reason, message string) {
	setCondition(s, generation, ackov1alpha1.ConditionReady, status, reason, message)
}

func setReconciling(s *ackov1alpha1.AerospikeClusterStatus, generation int64, active bool, reason, message string) {
	status := metav1.ConditionFalse
	if active {
		status = metav1.ConditionTrue
	}
	setCondition(s, generation, ackov1alpha1.ConditionReconciling, status, reason, message)
}

// setReconcileFailed records a failure, or removes the condition when failed is false, so that no
// stale error survives a success.
func setReconcileFailed(s *ackov1alpha1.AerospikeClusterStatus, generation int64, failed bool, reason, message string) {
	if !failed {
		meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionReconcileFailed)
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionReconcileFailed, metav1.ConditionTrue, reason, message)
}

func setCircuitBreakerOpen(s *ackov1alpha1.AerospikeClusterStatus, generation int64, open bool, message string) {
	if !open {
		meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionCircuitBreakerOpen)
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionCircuitBreakerOpen, metav1.ConditionTrue,
		ackov1alpha1.ReasonTooManyFailures, message)
}

// setStalled says whether the operator cannot progress without the user (reason "" clears it to
// False/Progressing). kstatus reads Stalled=True as Failed.
func setStalled(s *ackov1alpha1.AerospikeClusterStatus, generation int64, reason, message string) {
	if reason == "" {
		setCondition(s, generation, ackov1alpha1.ConditionStalled, metav1.ConditionFalse,
			ackov1alpha1.ReasonProgressing, "Nothing holds the operator")
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionStalled, metav1.ConditionTrue, reason, message)
}

// setClusterSplit records whether the Aerospike nodes have formed more than one cluster for longer
// than the grace period; groups names them either way.
func setClusterSplit(s *ackov1alpha1.AerospikeClusterStatus, generation int64, split bool, groups string) {
	if split {
		setCondition(s, generation, ackov1alpha1.ConditionClusterSplit, metav1.ConditionTrue, ackov1alpha1.ReasonSplitBrain,
			"Aerospike nodes form more than one cluster: "+groups)
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionClusterSplit, metav1.ConditionFalse, ackov1alpha1.ReasonOneCluster,
		"Aerospike nodes form one cluster")
}

// setConfigWarning lists the rules the applied config breaks since they were added ("" removes it).
func setConfigWarning(s *ackov1alpha1.AerospikeClusterStatus, generation int64, message string) {
	if message == "" {
		meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionConfigWarning)
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionConfigWarning, metav1.ConditionTrue, ackov1alpha1.ReasonRulesChanged, message)
}
