package controller

import (
	"fmt"
	"slices"
	"strings"
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
	racks   []ackov1alpha1.RackPlacement
	sets    map[string]*appsv1.StatefulSet // by name
	objects []client.Object                // ConfigMaps, Services
	pdb     *policyv1.PodDisruptionBudget
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

	// Decisions.
	violations             field.ErrorList // the server's rules the spec breaks (ratcheted: holdViolations)
	invalid, invalidReason string          // the spec cannot be applied (Stalled)
	stuck                  string          // a rolling restart ran past its progress deadline (Stalled)
	configWarning          string          // rules the applied config breaks since they were added
	applied                bool            // the children match the spec (observedGeneration)
	deferred               bool            // a scale down still has steps to go
	operationActive        bool
	work                   *work // what the operator is still doing; nil when done
	events                 []pendingEvent
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

// readiness is the Ready condition: every desired pod runs the current template and config and is
// Ready, the nodes form one cluster, and it is stable at the desired size. Never True while a pod is
// outdated, down or migrating, so `kubectl wait --for=condition=Ready` returns once a change is in.
func (st *clusterState) readiness() (ready bool, reason, message string) {
	desired := st.cluster.DesiredPodNames()
	if len(st.outdated) > 0 {
		names := make([]string, 0, len(st.outdated))
		for _, o := range st.outdated {
			names = append(names, o.pod.Name)
		}
		return false, ackov1alpha1.ReasonOutdatedPods, fmt.Sprintf("%d/%d pods run an older template or config: %s",
			len(names), len(desired), strings.Join(names, ", "))
	}
	if leaving := st.leavingNow(); len(leaving) > 0 {
		return false, ackov1alpha1.ReasonScaling,
			fmt.Sprintf("%d pods leave the cluster: %s", len(leaving), strings.Join(leaving, ", "))
	}
	if notReady := st.notReadyPods(nil); len(notReady) > 0 {
		return false, ackov1alpha1.ReasonPodsNotReady,
			fmt.Sprintf("%d/%d pods Ready; not Ready: %s", len(desired)-len(notReady), len(desired), strings.Join(notReady, ", "))
	}
	if st.split {
		return false, ackov1alpha1.ReasonSplitBrain, "Aerospike nodes form more than one cluster: " + st.describeGroups()
	}
	if stable, why := st.stable(0); !stable {
		return false, ackov1alpha1.ReasonAerospikeNotStable, "Aerospike cluster not stable: " + why
	}
	return true, ackov1alpha1.ReasonClusterReady,
		fmt.Sprintf("%d/%d pods Ready; Aerospike cluster stable", len(desired), len(desired))
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
	var notReady []string
	for _, name := range st.cluster.DesiredPodNames() {
		if !resources.PodReady(st.pods[name]) && !slices.Contains(except, name) {
			notReady = append(notReady, name)
		}
	}
	return notReady
}

// stable applies the stability gate to the members with readings at most maxAge old (0: the latest
// reading, whatever its age, which is what status reports).
func (st *clusterState) stable(maxAge time.Duration) (bool, string) {
	if !st.healthOK {
		return false, "no Aerospike health reading yet"
	}
	now := st.now
	if maxAge == 0 {
		now = st.health.ReadAt
	}
	return st.health.Gate(st.members, now)
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
	if stable, why := st.stable(0); !stable {
		return wait + " (" + why + ")"
	}
	return wait
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
