package cluster

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/resources"
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
	setCondition(s, generation, ackov1alpha1.ConditionReconciling, conditionStatus(active), reason, message)
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

// setNodeLost names the pods held by local volumes on a lost node, and what each waits for ("" removes it).
func setNodeLost(s *ackov1alpha1.AerospikeClusterStatus, generation int64, message string) {
	if message == "" {
		meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionNodeLost)
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionNodeLost, metav1.ConditionTrue, ackov1alpha1.ReasonLocalVolumesPinned, message)
}

// setConfigWarning lists the rules the applied config breaks since they were added ("" removes it).
func setConfigWarning(s *ackov1alpha1.AerospikeClusterStatus, generation int64, message string) {
	if message == "" {
		meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionConfigWarning)
		return
	}
	setCondition(s, generation, ackov1alpha1.ConditionConfigWarning, metav1.ConditionTrue, ackov1alpha1.ReasonRulesChanged, message)
}

// summarize writes what this reconcile found into status. The conditions follow kstatus: Stalled
// (the operator cannot progress without the user) and Reconciling (it is still working) are never
// True together, and Ready is True only when the whole spec is in.
func (st *clusterState) summarize(s *ackov1alpha1.AerospikeClusterStatus) {
	c, gen := st.cluster, st.cluster.Generation
	st.summarizePods(s)
	setClusterSplit(s, gen, st.split, st.describeGroups())
	setConfigWarning(s, gen, st.configWarning)
	setNodeLost(s, gen, st.nodeLost)
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
	if stuck := cmp.Or(st.stuck, st.operationRefused(s.OperationStatus)); stuck != "" {
		s.Phase = ackov1alpha1.PhaseError
		setStalled(s, gen, ackov1alpha1.ReasonRolloutStuck, stuck)
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
		next[name] = st.podFacts(name, pod, next[name])
	}
	if len(next) == 0 {
		next = nil
	}
	s.Pods = next
}

// podFacts updates a pod's record with what this reconcile observed of it.
func (st *clusterState) podFacts(name string, pod *corev1.Pod, p ackov1alpha1.PodStatus) ackov1alpha1.PodStatus {
	rack, _, _ := st.cluster.ParsePodName(name)
	p.PodIP, p.Rack, p.Image = pod.Status.PodIP, rack, resources.AerospikeImage(pod)
	p.ConfigHash = pod.Annotations[ackov1alpha1.AnnotationConfigHash]
	if v, ok := st.initialized[name]; ok {
		p.InitializedVolumes = v
	}
	if st.loading != nil {
		p.DataLoading = st.loading[name]
	}
	if st.moveWaits != nil { // the roll ran in this reconcile
		p.NodeBlocked = st.moveWaits[name]
	}
	if n, ok := st.health.Nodes[name]; ok && n.Err == nil && n.Facts.NodeID != "" {
		p.NodeID = n.Facts.NodeID
	}
	p.SplitOff = st.splitOff(name, p.SplitOff)
	if st.addresses != nil { // resolved in this reconcile
		p.ExternalAddress, p.AwaitingAddress = "", st.awaiting[name]
		if a, ok := st.addresses[name]; ok {
			p.ExternalAddress = net.JoinHostPort(a.Address, strconv.Itoa(int(a.Port)))
		}
	} else if st.cluster.Spec.ExternalAccess == nil && !st.stillAdvertises(name) {
		p.ExternalAddress, p.AwaitingAddress = "", ""
	}
	return p
}

// splitOff is when the pod's node was first seen answering from outside the largest cluster (nil once it
// answers from inside and the cluster's migrations ended with it, which merged what it took alone): in a
// settled split, or before the split settles from a cluster of its own (ownCluster), as a node cut off
// and then lost may be gone before then (model hole 26: an operator restarted between the two saw the node
// alone for 7 s). A node that does not answer keeps what it last showed: a node split off and then lost
// may hold writes only it took (issue 38; model seed 50603), also when it was lost after it rejoined and
// before the migrations that merge them ended (model seed 70318).
func (st *clusterState) splitOff(name string, since *metav1.Time) *metav1.Time {
	n, ok := st.health.Nodes[name]
	if !ok || n.Err != nil {
		return since
	}
	// The node is judged among the members with it: a lost node's pod is no member any more, and its last
	// reading may still show it in the cluster it was in.
	withIt := st.members
	if !slices.Contains(withIt, name) {
		withIt = append(slices.Clone(withIt), name)
	}
	switch {
	case slices.Contains(st.largestGroup(withIt), name):
		if since != nil && !st.mergedBack(name) {
			return since
		}
		return nil
	case since != nil:
		return since
	case st.split || ownCluster(n, len(withIt)):
		at := metav1.NewTime(st.now)
		return &at
	}
	return nil
}

// mergedBack: the node is a member of one stable cluster whose migrations ended.
func (st *clusterState) mergedBack(name string) bool {
	stable, _ := st.stable()
	return stable && slices.Contains(st.members, name)
}

// ownCluster: the node answers from a cluster of its own that takes writes (at least itself) and is
// smaller than the nodes that run (a node shutting down may still answer from the cluster it was in, at
// its old size), with asd up longer than a node takes to join (a node that has just started is briefly
// alone).
func ownCluster(n aerospike.NodeHealth, running int) bool {
	return n.Facts.ClusterSize > 0 && n.Facts.ClusterSize < running && n.Facts.Uptime > aerospike.DefaultSplitGrace
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

// readiness is the Ready condition: every desired pod runs the current template and config and is
// Ready, the nodes form one cluster, and it is stable at the desired size. Never True while a pod is
// outdated, down or migrating, so `kubectl wait --for=condition=Ready` returns once a change is in.
func (st *clusterState) readiness() (ready bool, reason, message string) {
	desired := st.cluster.DesiredPodNames()
	if len(st.outdated) > 0 {
		names := make([]string, 0, len(st.outdated))
		for _, o := range st.outdated {
			if isMove(o) {
				names = append(names, o.pod.Name+" (on blocked node "+o.pod.Spec.NodeName+")")
			} else {
				names = append(names, o.pod.Name)
			}
		}
		return false, ackov1alpha1.ReasonOutdatedPods, fmt.Sprintf("%d/%d pods run an older template or config: %s",
			len(names), len(desired), strings.Join(names, ", "))
	}
	if leaving := st.leavingNow(); len(leaving) > 0 {
		return false, ackov1alpha1.ReasonScaling,
			fmt.Sprintf("%d pods leave the cluster: %s", len(leaving), strings.Join(leaving, ", "))
	}
	return st.nodesUp(nil)
}

// nodesUp is the part of readiness that holds whatever the spec says: every desired pod is Ready, the
// nodes form one cluster, and it is stable. An operation InProgress waits for it between pods.
func (st *clusterState) nodesUp(serving []string) (up bool, reason, message string) {
	desired := st.cluster.DesiredPodNames()
	if notReady := st.notReadyPods(serving); len(notReady) > 0 {
		return false, ackov1alpha1.ReasonPodsNotReady,
			fmt.Sprintf("%d/%d pods Ready; not Ready: %s", len(desired)-len(notReady), len(desired), strings.Join(notReady, ", "))
	}
	if st.split {
		return false, ackov1alpha1.ReasonSplitBrain, "Aerospike nodes form more than one cluster: " + st.describeGroups()
	}
	if stable, why := st.stable(); !stable {
		return false, ackov1alpha1.ReasonAerospikeNotStable, "Aerospike cluster not stable: " + why
	}
	return true, ackov1alpha1.ReasonClusterReady,
		fmt.Sprintf("%d/%d pods Ready; Aerospike cluster stable", len(desired), len(desired))
}

// failedReadiness is the Ready condition after a failed reconcile: what the pods say, but never True
// for a generation whose spec was not applied in full (a Service, PodDisruptionBudget or PodMonitor
// change that failed), so that `kubectl wait --for=condition=Ready` does not pass on it.
func (st *clusterState) failedReadiness(s *ackov1alpha1.AerospikeClusterStatus) (ready bool, reason, message string) {
	ready, reason, message = st.readiness()
	if ready && (s.ObservedGeneration != st.cluster.Generation || s.AppliedSpecHash != specHash(&st.cluster.Spec)) {
		return false, ackov1alpha1.ReasonReconcileError, "The spec is not applied yet: the last reconcile failed (see ReconcileFailed)"
	}
	return ready, reason, message
}

// leavingNow lists the pods that exist but that the spec no longer asks for (a scale down or rack
// removal under way).
func (st *clusterState) leavingNow() []string {
	var out []string
	for name := range st.pods {
		if !slices.Contains(st.cluster.DesiredPodNames(), name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// notReadyPods lists the pods the spec asks for that are missing or not Ready, except those given.
func (st *clusterState) notReadyPods(except []string) []string {
	return notReadyIn(st.cluster.DesiredPodNames(), st.pods, except)
}

// notReadyIn lists the desired pods that are missing from pods or not Ready, except those given.
func notReadyIn(desired []string, pods map[string]*corev1.Pod, except []string) []string {
	var notReady []string
	for _, name := range desired {
		if !resources.PodReady(pods[name]) && !slices.Contains(except, name) {
			notReady = append(notReady, name)
		}
	}
	return notReady
}

// stable applies the stability gate to the members' latest readings, whatever their age (what status
// reports and the budget follows; the door asks for fresh readings of its own).
func (st *clusterState) stable() (bool, string) {
	if !st.healthOK {
		return false, "no Aerospike health reading yet"
	}
	return st.health.Gate(st.members, st.health.ReadAt)
}

func (st *clusterState) describeGroups() string {
	return st.health.DescribeGroups(st.members)
}

func (st *clusterState) podsReadyCount() int32 {
	var n int32
	for _, p := range st.pods {
		if resources.PodReady(p) {
			n++
		}
	}
	return n
}

// pausedStatus is the whole status of a paused cluster: Paused decides the phase whatever the
// circuit breaker says, readiness is no longer tracked (no Ready condition), and spec changes wait
// for resume (PendingChanges). The operator has observed the generation and holds it by the user's
// request, so observedGeneration follows it: kstatus tools (Flux, Argo CD, kubectl wait) see a
// paused cluster as Current, not in progress forever.
func pausedStatus(s *ackov1alpha1.AerospikeClusterStatus, cluster *ackov1alpha1.AerospikeCluster) {
	gen := cluster.Generation
	s.Phase = ackov1alpha1.PhasePaused
	s.ObservedGeneration = gen
	setPaused(s, gen)
	setPendingChanges(s, gen, specHash(&cluster.Spec) != s.AppliedSpecHash)
	meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionReady)
	setReconciling(s, gen, false, ackov1alpha1.ReasonPaused, "Cluster paused by user")
	setStalled(s, gen, "", "")
}

// breakerOpen reports whether the breaker is open.
func breakerOpen(s *ackov1alpha1.AerospikeClusterStatus) bool {
	return s.CircuitBreaker != nil && s.CircuitBreaker.ConsecutiveFailures >= breakerThreshold
}

// recordFailure counts a failure; it reports whether this failure opened the breaker.
func (b Backoff) recordFailure(s *ackov1alpha1.AerospikeClusterStatus, generation int64, err error, now time.Time) (opened bool) {
	wasOpen := breakerOpen(s)
	if s.CircuitBreaker == nil {
		s.CircuitBreaker = &ackov1alpha1.CircuitBreakerStatus{}
	}
	t := metav1.NewTime(now)
	s.CircuitBreaker.ConsecutiveFailures++
	s.CircuitBreaker.LastError = err.Error()
	s.CircuitBreaker.LastFailureTime = &t
	setReconcileFailed(s, generation, true, ackov1alpha1.ReasonReconcileError, err.Error())
	if breakerOpen(s) {
		msg := fmt.Sprintf("%d consecutive reconcile failures; next try in %s: %v",
			s.CircuitBreaker.ConsecutiveFailures, b.delay(s.CircuitBreaker.ConsecutiveFailures), err)
		s.Phase = ackov1alpha1.PhaseError
		setCircuitBreakerOpen(s, generation, true, msg)
		setStalled(s, generation, ackov1alpha1.ReasonTooManyFailures, msg)
		setReconciling(s, generation, false, ackov1alpha1.ReasonTooManyFailures, "Backing off: see Stalled")
	}
	return !wasOpen && breakerOpen(s)
}

// resetBreaker closes the breaker and forgets the failures.
func resetBreaker(s *ackov1alpha1.AerospikeClusterStatus) {
	s.CircuitBreaker = nil
	setCircuitBreakerOpen(s, 0, false, "")
}

// resumedStatus clears what the pause left (ADR-0018): Paused, PendingChanges and a stale ReconcileFailed go, the
// circuit breaker is reset (resuming is an explicit request to try again), and the phase is Reconciling until
// the reconcile that follows in the same pass says otherwise.
func resumedStatus(s *ackov1alpha1.AerospikeClusterStatus, generation int64) {
	meta.RemoveStatusCondition(&s.Conditions, ackov1alpha1.ConditionPaused)
	setPendingChanges(s, generation, false)
	setReconcileFailed(s, generation, false, "", "")
	resetBreaker(s)
	s.Phase = ackov1alpha1.PhaseReconciling
	setReconciling(s, generation, true, ackov1alpha1.ReasonApplying, "Resumed by user")
}

// becauseUnstable adds to a wait for a pod to be back what holds the cluster, when it is not stable: a
// node that hangs elsewhere keeps every member's readiness gate False, and the status must name it.
func (st *clusterState) becauseUnstable(wait string) string {
	if !st.healthOK {
		return wait
	}
	if _, silent := st.health.Groups(st.members); len(silent) > 0 {
		return wait + " (not answering: " + strings.Join(silent, ", ") + ")"
	}
	if stable, why := st.stable(); !stable {
		return wait + " (" + why + ")"
	}
	return wait
}
