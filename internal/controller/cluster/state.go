package cluster

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/resources"
)

// clusterState is what one reconcile learns and decides; phases fill it in, summarize turns it
// into status.
type clusterState struct {
	cluster *ackov1alpha1.AerospikeCluster
	key     types.NamespacedName
	now     time.Time

	// Desired children (renderChildren).
	racks []ackov1alpha1.RackPlacement
	sets  map[string]*appsv1.StatefulSet // by name
	// removedRacks are the desired children of the racks the spec no longer has, by StatefulSet name:
	// their pods leave by scale-down steps, and one recreated meanwhile runs the current spec.
	removedRacks map[string]removedRack
	objects      []client.Object // ConfigMaps, Services
	// addresses are the pods' external addresses that are known (spec.externalAccess), and awaiting
	// says, for each existing pod whose address is not, what it waits for (resolveAddresses).
	addresses resources.PodAddresses
	awaiting  map[string]string
	// configs are the config files known by identity (config.Hash): each rack's desired one, and
	// those its pods still run that the ConfigMap keeps (keepRunningConfigs).
	configs map[string]string
	// noLive: no LiveConfigurer, so every config change restarts the node in place.
	noLive bool

	pdb *policyv1.PodDisruptionBudget
	// maxDown is the safety rule: how many nodes may be down or leaving at once (config.MaxDown).
	maxDown int

	// Observations (observe).
	pods         map[string]*corev1.Pod
	existingSets map[string]*appsv1.StatefulSet // owned by the cluster, by name
	existingPDB  *policyv1.PodDisruptionBudget
	health       aerospike.ClusterHealth
	healthOK     bool
	// members are the pods that run (container started, not terminating): their nodes must all be
	// in the cluster, and the prober asks cluster-stable about their number.
	members  []string
	outdated []outdatedPod      // pods to roll, in restart order
	broken   map[string]string  // pods broken by their container state, and how
	held     map[string]string  // pods whose readiness gate the operator holds False, and why
	split    bool               // the nodes have disagreed for longer than the grace period
	results  map[string]outcome // background task results taken by this reconcile, by task name
	// initialized are the prepared claims of the pods prepareVolumes looked at (status.pods[*]).
	initialized map[string][]ackov1alpha1.InitializedVolume
	// grown are the pods whose claims grew past the Block volume size their asd started with.
	grown map[string]bool
	// loading are the pods whose asd reads its data back at start, as their logs tell (nil: not read
	// in this reconcile).
	loading map[string]*ackov1alpha1.DataLoading

	// Decisions.
	violations             field.ErrorList // the server's rules the spec breaks (ratcheted: holdViolations)
	invalid, invalidReason string          // the spec cannot be applied (Stalled)
	stuck                  string          // a rolling restart ran past its progress deadline (Stalled)
	configWarning          string          // rules the applied config breaks since they were added
	nodeLost               string          // pods held by local volumes on a lost node (NodeLost)
	// moveWaits says, per pod on a node of spec.nodeBlockList, where its move stands
	// (status.pods[].nodeBlocked); nil when the roll did not run in this reconcile.
	moveWaits map[string]string
	applied   bool // the children match the spec (observedGeneration)
	deferred  bool // a scale down still has steps to go
	// scaleDowns are the replicas the door let each StatefulSet go down to in this reconcile (the
	// actuator's scaleDownStep): setReplicas lowers a set below a pod of its only to these.
	scaleDowns      map[string]int32
	operationActive bool
	work            *work // what the operator is still doing; nil when done
	events          []pendingEvent
}

// removedRack is the desired ConfigMap and StatefulSet of a rack the spec no longer has (renderRemovedRacks).
type removedRack struct {
	configMap *corev1.ConfigMap
	set       *appsv1.StatefulSet
}

type outdatedPod struct {
	pod    *corev1.Pod
	reason ackov1alpha1.RestartReason
	method ackov1alpha1.PodUpdateMethod
}

// work is what keeps the cluster Reconciling: the Reconciling condition's reason and message.
type work struct {
	reason, message string
}

// pendingEvent is an event collected during a reconcile and emitted at its end, whatever happens
// after it: events are for work that happened. related (a child, a pod) keeps events of one reason
// apart: events.k8s.io merges events with the same reason and objects into one series.
type pendingEvent struct {
	kind, reason, action, message string
	related                       runtime.Object
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

func (st *clusterState) addEvent(kind, reason, action string, related runtime.Object, format string, args ...any) {
	st.events = append(st.events, pendingEvent{kind: kind, reason: reason, action: action, related: related,
		message: fmt.Sprintf(format, args...)})
}

// announce emits the events of this reconcile, once.
func (st *clusterState) announce(r *AerospikeClusterReconciler) {
	for _, e := range st.events {
		r.Recorder.Eventf(st.cluster, e.related, e.kind, e.reason, e.action, "%s", e.message)
	}
	st.events = nil
}

// requeueAfter is the safety-net poll while the cluster is changing; a steady cluster is woken only
// by watches, the prober and background tasks.
func (st *clusterState) requeueAfter(poll time.Duration) time.Duration {
	switch {
	case st.invalidReason == ackov1alpha1.ReasonChildConflict:
		return childConflictRetry // the foreign object is not in the cache: look again by itself
	case st.invalid != "" || st.work == nil:
		return 0
	}
	return poll
}

// childConflictRetry is how soon a cluster with a child conflict looks again: the foreign object
// carries no label of ours, so no watch sees it go.
const childConflictRetry = 5 * time.Second
