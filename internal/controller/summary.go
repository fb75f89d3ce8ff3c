package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// summarize writes what this reconcile found into status. The conditions follow kstatus: Stalled
// (the operator cannot progress without the user) and Reconciling (it is still working) are never
// True together, and Ready is True only when the whole spec is in.
func (st *clusterState) summarize(s *ackov1alpha1.AerospikeClusterStatus) {
	c, gen := st.cluster, st.cluster.Generation
	st.summarizePods(s)
	setClusterSplit(s, gen, st.split, st.describeGroups())
	setConfigWarning(s, gen, st.configWarning)
	if st.invalid != "" {
		s.Phase = ackov1alpha1.PhaseError
		setReconcileFailed(s, gen, true, st.invalidReason, st.invalid)
		setStalled(s, gen, st.invalidReason, st.invalid)
		setReady(s, gen, metav1.ConditionFalse, st.invalidReason, "The spec cannot be applied: see Stalled")
		setReconciling(s, gen, false, st.invalidReason, "Waiting for a spec that can be applied")
		resetBreaker(s) // a spec the user must fix is not a reconcile failure
		return
	}
	resetBreaker(s)
	setReconcileFailed(s, gen, false, "", "")
	if st.applied {
		s.ObservedGeneration = gen
		s.AppliedSpecHash = specHash(&c.Spec)
	}
	ready, reason, message := st.readiness()
	setReady(s, gen, conditionStatus(ready), reason, message)
	if st.stuck != "" {
		s.Phase = ackov1alpha1.PhaseError
		setStalled(s, gen, ackov1alpha1.ReasonRolloutStuck, st.stuck)
		setReconciling(s, gen, false, ackov1alpha1.ReasonRolloutStuck, "Waiting for the user: see Stalled")
		return
	}
	setStalled(s, gen, "", "")
	if !ready {
		st.setWork(ackov1alpha1.ReasonApplying, "Waiting for pods to be Ready and the Aerospike cluster to be stable")
	}
	if st.work != nil {
		s.Phase = ackov1alpha1.PhaseReconciling
		setReconciling(s, gen, true, st.work.reason, st.work.message)
		return
	}
	s.Phase = ackov1alpha1.PhaseRunning
	setReconciling(s, gen, false, ackov1alpha1.ReasonUpToDate, "The cluster matches its spec")
}

func conditionStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// summarizePods records the facts of every pod, keeping the records of pods that are being
// recreated, and forgetting pods that are neither present nor desired.
func (st *clusterState) summarizePods(s *ackov1alpha1.AerospikeClusterStatus) {
	c := st.cluster
	s.Size = int32(len(st.pods))
	s.ReadyPods = st.podsReadyCount()
	s.Selector = labels.SelectorFromSet(c.SelectorLabels()).String()
	desired := c.DesiredPodNames()
	next := map[string]ackov1alpha1.PodStatus{}
	for name, p := range s.Pods {
		if _, exists := st.pods[name]; exists || slices.Contains(desired, name) || p.Update != nil {
			next[name] = p
		}
	}
	for name, pod := range st.pods {
		p := next[name]
		rack, _, _ := c.ParsePodName(name)
		p.PodIP, p.Rack, p.Image = pod.Status.PodIP, rack, resources.AerospikeImage(pod)
		p.ConfigHash = pod.Annotations[ackov1alpha1.AnnotationConfigHash]
		next[name] = p
	}
	if len(next) == 0 {
		next = nil
	}
	s.Pods = next
}

// specHash identifies the spec without `paused`, to tell whether changes wait for resume.
func specHash(spec *ackov1alpha1.AerospikeClusterSpec) string {
	s := spec.DeepCopy()
	s.Paused = false
	data, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

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
