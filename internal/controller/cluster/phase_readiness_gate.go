package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/resources"
)

// Reasons of the readiness gate beyond aerospike.NodeReady's.
const (
	// gateTakenDown: the operator holds the gate False before it takes the node down itself (a restart
	// in place, leaving the cluster), so that the PodDisruptionBudget counts it and no drain takes another.
	gateTakenDown = "TakenDown"
	// gateNotRunning: the pod's Aerospike container does not run.
	gateNotRunning = "NotRunning"
	// gateLoadingData: the pod's asd reads its persistent namespaces back (a cold start): it has not
	// opened its ports yet.
	gateLoadingData = "LoadingData"
)

// followReadings keeps the readiness gates and the PodDisruptionBudget in step with the prober's
// readings. It runs at the start of every reconcile, whatever ends it early (a pause, the circuit
// breaker's backoff, a spec that cannot be applied), so that an asd that crashes and comes back empty
// meanwhile is not Ready until it has rejoined, and the budget allows no drain while it migrates.
// It writes only what changes: a steady cluster costs nothing.
func (r *AerospikeClusterReconciler) followReadings(ctx context.Context, st *clusterState) error {
	if err := r.observePods(ctx, st); err != nil {
		return err
	}
	// The budget first: a node that rejoined and migrates gets its gate True only once the budget allows
	// no drain, so that no eviction slips between the two writes.
	if err := r.syncBudget(ctx, st); err != nil {
		return err
	}
	if err := r.syncReadinessGates(ctx, st); err != nil {
		return err
	}
	return r.recordSplitOff(ctx, st)
}

// recordSplitOff records which nodes were seen answering from outside the largest cluster (splitOff),
// whatever ends this reconcile: a node split off and then lost may hold writes no other node has, and a
// pause or a back-off must not hide it (model seed 75543: a node split off while the cluster was paused,
// then lost; after the resume its give-up deleted the only claim with its writes).
func (r *AerospikeClusterReconciler) recordSplitOff(ctx context.Context, st *clusterState) error {
	changed := map[string]*metav1.Time{}
	for name := range st.pods {
		since := st.cluster.Status.Pods[name].SplitOff
		if next := st.splitOff(name, since); next != since {
			changed[name] = next
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		if s.Pods == nil {
			s.Pods = map[string]ackov1alpha1.PodStatus{}
		}
		for name, at := range changed {
			p := s.Pods[name]
			p.SplitOff = at
			s.Pods[name] = p
		}
	})
}

// syncReadinessGates sets every pod's acko.io/aerospike-ready condition from the prober's latest
// reading (no network call): True only while its node answers and is a member of the cluster
// (aerospike.NodeReady), and the operator does not hold it down. Services, the PodDisruptionBudget and
// `kubectl drain` see that through the pod's Ready condition. It writes only when the status or reason
// changes.
func (r *AerospikeClusterReconciler) syncReadinessGates(ctx context.Context, st *clusterState) error {
	if !st.healthOK {
		return nil // before the first reading the gates stay as they are (unset: not Ready)
	}
	for _, name := range slices.Sorted(maps.Keys(st.pods)) {
		pod := st.pods[name]
		if !resources.HasGate(pod) || pod.DeletionTimestamp != nil {
			continue
		}
		ready, reason, message := st.gateFor(name)
		if cur := resources.GateCondition(pod); cur != nil && (cur.Status == corev1.ConditionTrue) == ready && cur.Reason == reason {
			continue
		}
		if err := pods.SetGate(ctx, r.Client, pod, ready, reason, message, r.Clock.Now()); err != nil {
			return err
		}
	}
	return nil
}

// syncBudget moves the existing PodDisruptionBudget's maxUnavailable with the readings (see
// pdbMaxUnavailable), up to the value it has while the cluster is stable, which applyChildren keeps in
// its annotation from the spec last applied: so the budget follows the readings without the spec, which
// may be paused or not applicable. A budget without the annotation (made by an older operator) is only
// lowered. A budget that holds every pod while a StatefulSet is replaced (HoldEveryPod) keeps holding every
// pod there is, paused or not; applyChildren, which knows the spec, returns it to maxUnavailable. The
// budget is created by applyChildren.
func (r *AerospikeClusterReconciler) syncBudget(ctx context.Context, st *clusterState) error {
	pdb := st.existingPDB
	if pdb == nil || st.cluster.BudgetDisabled() {
		return nil // applyChildren removes a budget the user asked away
	}
	desired := pdb.DeepCopy()
	switch {
	case pdb.Spec.MinAvailable != nil:
		resources.HoldEveryPod(desired, len(st.pods))
	case pdb.Spec.MaxUnavailable != nil:
		current := pdb.Spec.MaxUnavailable.IntValue()
		whenStable, ok := resources.StableMaxUnavailable(pdb)
		if !ok {
			whenStable = current
		}
		desired.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(int32(st.pdbMaxUnavailable(whenStable))))
	}
	if !resources.NeedsUpdate(pdb, desired) {
		return nil
	}
	if _, err := r.applyChild(ctx, st, desired); err != nil {
		return err
	}
	st.existingPDB = desired
	return nil
}

// gateFor decides one pod's readiness gate.
func (st *clusterState) gateFor(pod string) (bool, string, string) {
	if why, held := st.held[pod]; held {
		return false, gateTakenDown, why
	}
	return st.nodeGate(pod)
}

// nodeGate is the gate the pod's node earns by itself, whatever the operator holds.
func (st *clusterState) nodeGate(pod string) (bool, string, string) {
	if !slices.Contains(st.members, pod) {
		return false, gateNotRunning, "the Aerospike container does not run"
	}
	if dl := st.dataLoading(pod); dl != nil {
		return false, gateLoadingData, dl.Message
	}
	return st.health.NodeReady(pod, st.members)
}

// heldPods are the pods whose gate the operator holds False: a restart in place it recorded but has
// not signalled yet, a pod that leaves the cluster, the current pod of a WarmRestart operation.
func (st *clusterState) heldPods() map[string]string {
	held := map[string]string{}
	for name, p := range st.cluster.Status.Pods {
		switch u := p.Update; {
		case u == nil:
		case u.Method == ackov1alpha1.UpdateRemove:
			held[name] = "leaving the cluster"
		default:
			if why := methodOf(u.Method).holds(st, name, u); why != "" {
				held[name] = why
			}
		}
	}
	if op := st.cluster.Status.OperationStatus; op != nil && op.Phase == ackov1alpha1.OperationInProgress &&
		op.Kind == ackov1alpha1.OperationWarmRestart && op.CurrentPod != "" &&
		(!op.CurrentPodSignalled || !st.restartedSince(op.CurrentPod, op.CurrentPodNodeStartedBefore)) {
		held[op.CurrentPod] = fmt.Sprintf("warm restart of operation %s", op.ID)
	}
	return held
}

// sameInstance: the pod that exists now is the one a step was recorded for.
func (st *clusterState) sameInstance(name string, u *ackov1alpha1.PodUpdate) bool {
	pod := st.pods[name]
	return pod != nil && string(pod.UID) == u.UID
}

// RecordTip turns a heal attempt of the prober into an event on the cluster.
func RecordTip(recorder events.EventRecorder, t aerospike.Tip) {
	cluster := &ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Namespace: t.Cluster.Namespace, Name: t.Cluster.Name}}
	cluster.SetGroupVersionKind(ackov1alpha1.GroupVersion.WithKind("AerospikeCluster"))
	if t.Err != nil {
		recorder.Eventf(cluster, nil, corev1.EventTypeWarning, ackov1alpha1.EventNodeTipped, "Heal",
			"Node of pod %s is outside the cluster; telling it where member %s is failed: %v", t.Pod, t.MemberIP, t.Err)
		return
	}
	recorder.Eventf(cluster, nil, corev1.EventTypeNormal, ackov1alpha1.EventNodeTipped, "Heal",
		"Node of pod %s is outside the cluster: told it to join member %s (tip)", t.Pod, t.MemberIP)
}
