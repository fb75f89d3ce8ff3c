package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/operations"
)

// clusterState is what one reconcile learns and decides; phases fill it in, summarize turns it
// into status.
type clusterState struct {
	cluster *ackov1alpha1.AerospikeCluster
	key     types.NamespacedName
	now     time.Time

	// Desired children (renderChildren).
	racks   []ackov1alpha1.RackPlacement
	sets    map[string]*appsv1.StatefulSet // by name
	objects []client.Object                // ConfigMaps, Services, PDB

	// Observations (observe).
	pods         map[string]*corev1.Pod
	existingSets map[string]*appsv1.StatefulSet // owned by the cluster, by name
	health       aerospike.ClusterHealth
	healthOK     bool
	outdated     []outdatedPod // pods to roll, in restart order

	// Decisions.
	invalid, invalidReason string // the spec cannot be applied (phase Error)
	applied                bool   // the children match the spec (observedGeneration)
	deferred               bool   // a scale down still has steps to go
	expectedSize           int    // Aerospike nodes the applied StatefulSets ask for
	operationActive        bool
	work                   *work // what the operator is still doing; nil when done
	events                 []pendingEvent
}

type outdatedPod struct {
	pod    *corev1.Pod
	reason ackov1alpha1.RestartReason
}

// work is what keeps the cluster Reconciling: the Reconciling condition's reason and message.
type work struct {
	reason, message string
}

type pendingEvent struct {
	kind, reason, action, message string
}

func newClusterState(cluster *ackov1alpha1.AerospikeCluster, now time.Time) *clusterState {
	return &clusterState{cluster: cluster, key: types.NamespacedName{Namespace: cluster.Namespace, Name: cluster.Name}, now: now}
}

// setWork records the first reason the cluster is not done; later phases do not overwrite it.
func (st *clusterState) setWork(reason, format string, args ...any) {
	if st.work == nil {
		st.work = &work{reason: reason, message: fmt.Sprintf(format, args...)}
	}
}

func (st *clusterState) addEvent(kind, reason, action, format string, args ...any) {
	st.events = append(st.events, pendingEvent{kind: kind, reason: reason, action: action, message: fmt.Sprintf(format, args...)})
}

// announce emits the events of this reconcile once its status is written.
func (st *clusterState) announce(r *AerospikeClusterReconciler) {
	for _, e := range st.events {
		r.event(st.cluster, e.kind, e.reason, e.action, "%s", e.message)
	}
}

// readiness is the Ready condition: every desired pod Ready and the Aerospike cluster stable at
// the desired size. Never True while a pod is down or migrations run.
func (st *clusterState) readiness() (ready bool, reason, message string) {
	desired := st.cluster.DesiredPodNames()
	if notReady := st.notReadyPods(); len(notReady) > 0 {
		return false, ackov1alpha1.ReasonPodsNotReady,
			fmt.Sprintf("%d/%d pods Ready; not Ready: %s", len(desired)-len(notReady), len(desired), strings.Join(notReady, ", "))
	}
	if stable, why := st.aerospikeStable(len(desired)); !stable {
		return false, ackov1alpha1.ReasonAerospikeNotStable, "Aerospike cluster not stable: " + why
	}
	return true, ackov1alpha1.ReasonClusterReady,
		fmt.Sprintf("%d/%d pods Ready; Aerospike cluster stable", len(desired), len(desired))
}

// notReadyPods lists the pods the spec asks for that are missing or not Ready.
func (st *clusterState) notReadyPods() []string {
	var notReady []string
	for _, name := range st.cluster.DesiredPodNames() {
		if !operations.PodReady(st.pods[name]) {
			notReady = append(notReady, name)
		}
	}
	return notReady
}

// aerospikeStable asks the prober's cached reading, limited to the pods that exist now.
func (st *clusterState) aerospikeStable(size int) (bool, string) {
	if !st.healthOK {
		return false, "no Aerospike health reading yet"
	}
	nodes := map[string]aerospike.NodeHealth{}
	for name, h := range st.health.Nodes {
		if _, ok := st.pods[name]; ok {
			nodes[name] = h
		}
	}
	return aerospike.ClusterStable(nodes, size)
}

func (st *clusterState) podsReadyCount() int32 {
	var n int32
	for _, p := range st.pods {
		if operations.PodReady(p) {
			n++
		}
	}
	return n
}

// summarize writes what this reconcile found into status.
func (st *clusterState) summarize(s *ackov1alpha1.AerospikeClusterStatus) {
	c, gen := st.cluster, st.cluster.Generation
	if st.invalid != "" {
		s.Phase = ackov1alpha1.PhaseError
		setReconcileFailed(s, gen, true, st.invalidReason, st.invalid)
		setReady(s, gen, metav1.ConditionFalse, st.invalidReason, "The spec cannot be applied: see ReconcileFailed")
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
	st.summarizePods(s)
	ready, reason, message := st.readiness()
	readyStatus := metav1.ConditionFalse
	if ready {
		readyStatus = metav1.ConditionTrue
	}
	setReady(s, gen, readyStatus, reason, message)
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

// summarizePods records the facts of every pod, keeping restart records of pods that are being
// recreated, and forgetting pods that are neither present nor desired.
func (st *clusterState) summarizePods(s *ackov1alpha1.AerospikeClusterStatus) {
	c := st.cluster
	s.Size = int32(len(st.pods))
	s.ReadyPods = st.podsReadyCount()
	s.Selector = labels.SelectorFromSet(c.SelectorLabels()).String()
	desired := c.DesiredPodNames()
	next := map[string]ackov1alpha1.PodStatus{}
	for name, p := range s.Pods {
		if _, exists := st.pods[name]; exists || slices.Contains(desired, name) {
			next[name] = p
		}
	}
	for name, pod := range st.pods {
		p := next[name]
		rack, _, _ := c.ParsePodName(name)
		p.PodIP, p.Rack, p.Image = pod.Status.PodIP, rack, aerospikeImage(pod)
		next[name] = p
	}
	if len(next) == 0 {
		next = nil
	}
	s.Pods = next
}

func aerospikeImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == ackov1alpha1.AerospikeContainerName {
			return c.Image
		}
	}
	return ""
}

// requeueAfter is the safety-net poll while the cluster is changing; a steady cluster is woken only
// by watches and the prober.
func (st *clusterState) requeueAfter(poll time.Duration) time.Duration {
	if st.invalid != "" || st.work == nil {
		return 0
	}
	return poll
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
	if conditionChanged(before, after, ackov1alpha1.ConditionReconcileFailed) && st.invalid != "" {
		reason := ackov1alpha1.EventInvalidSpec
		if st.invalidReason == ackov1alpha1.ReasonChildConflict {
			reason = ackov1alpha1.EventChildConflict
		}
		st.addEvent(corev1.EventTypeWarning, reason, "Validate", "%s", st.invalid)
	}
	if c := meta.FindStatusCondition(after, ackov1alpha1.ConditionReconciling); c != nil &&
		c.Reason == ackov1alpha1.ReasonRestartBlocked && conditionChanged(before, after, ackov1alpha1.ConditionReconciling) {
		st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventRollingRestartBlocked, "Restart", "%s", c.Message)
	}
}

// conditionChanged reports whether a condition's reason or message differs between two statuses.
func conditionChanged(before, after []metav1.Condition, typ string) bool {
	b, a := meta.FindStatusCondition(before, typ), meta.FindStatusCondition(after, typ)
	if b == nil || a == nil {
		return b != a
	}
	return b.Status != a.Status || b.Reason != a.Reason || b.Message != a.Message
}
