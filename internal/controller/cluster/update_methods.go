package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// updateMethod is one way a rolling restart updates a pod (status.pods[].update.method): how the events
// and the status name it, whether its step takes the node down (the step then counts against the
// budget), how its recorded step is taken, and how the step is followed back until its pod is. Adding a
// method is a type here and its entry in rollMethods; only the choice of it is the deciders'
// (clusterState.updateMethod).
type updateMethod interface {
	// text is how events and messages name the method: "Updating aero-1 (ConfigChanged, <text>)".
	text() string
	// takesDown: its step takes the node down, and counts against the budget.
	takesDown() bool
	// takeStep takes the recorded steps of the method that have not happened yet (together), and says
	// what they wait for now.
	takeStep(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState, names []string) (string, error)
	// batchLimit is how many pods of one rack a batch of the method may take (nextBatch).
	batchLimit(st *clusterState) int
	// waitsForChecks: a batch of the method starts only when the safety checks let it (mayTakeDown).
	waitsForChecks() bool

	// What follows the step back (followStarted), for a step of the method recorded for the pod name:
	//
	// standsFor: the recorded step, not taken yet, still fits a pod now decided for method m (else it is
	// decided again).
	standsFor(m ackov1alpha1.PodUpdateMethod) bool
	// needsEveryPodReady: the step waits for every pod to be Ready (the budget refuses the eviction of a
	// Ready pod while another is not; PodsReady holds a live change), so it gives way to an outdated
	// pod that is not Ready and has no step yet (notReadyOutdated).
	needsEveryPodReady() bool
	// happenedUnrecorded: the step, not recorded as taken, happened all the same (the operator stopped
	// before it learned of it): it is followed as taken, whatever the spec says since.
	happenedUnrecorded(st *clusterState, name string, u *ackov1alpha1.PodUpdate) bool
	// overOnSameInstance: the finished step is over although its pod is the instance it was taken on
	// (false for a method whose step ends only with a new instance).
	overOnSameInstance(st *clusterState, name string, u *ackov1alpha1.PodUpdate) bool
	// followSameInstance follows the taken step while its pod is the instance it was taken on; followed
	// false: the method's step ends only with a new instance (followBack).
	followSameInstance(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState, pod *corev1.Pod,
		u *ackov1alpha1.PodUpdate) (why string, followed bool, err error)
	// holds says why the pod's readiness gate is held False while the step runs ("": it is not).
	holds(st *clusterState, name string, u *ackov1alpha1.PodUpdate) string
}

// newInstance is the follow-back of the methods whose step ends with a new pod (or, live, with no
// restart at all): nothing happens unrecorded, nothing is followed on the instance the step was taken on,
// no gate is held.
type newInstance struct{}

func (newInstance) happenedUnrecorded(*clusterState, string, *ackov1alpha1.PodUpdate) bool {
	return false
}
func (newInstance) overOnSameInstance(*clusterState, string, *ackov1alpha1.PodUpdate) bool {
	return false
}
func (newInstance) holds(*clusterState, string, *ackov1alpha1.PodUpdate) string { return "" }

func (newInstance) followSameInstance(context.Context, *AerospikeClusterReconciler, *clusterState, *corev1.Pod,
	*ackov1alpha1.PodUpdate) (string, bool, error) {
	return "", false, nil
}

// rollMethods are the methods of a rolling restart, in the order their pending steps are taken in one
// reconcile: a broken pod's replacement first (it takes no node down, and every other step waits for
// its pod), then the methods that take a node down, then the live ones.
var rollMethods = []ackov1alpha1.PodUpdateMethod{ackov1alpha1.UpdateReplace, ackov1alpha1.UpdateEvict,
	ackov1alpha1.UpdateInPlace, ackov1alpha1.UpdateLive, ackov1alpha1.UpdateLiveTogether}

// methodOf is the update method of a status value (UpdateRemove is a scale-down's leave, not a roll's
// method: it has none).
func methodOf(m ackov1alpha1.PodUpdateMethod) updateMethod {
	switch m {
	case ackov1alpha1.UpdateEvict:
		return evictMethod{}
	case ackov1alpha1.UpdateReplace:
		return replaceMethod{}
	case ackov1alpha1.UpdateInPlace:
		return inPlaceMethod{}
	case ackov1alpha1.UpdateLive:
		return liveMethod{}
	case ackov1alpha1.UpdateLiveTogether:
		return liveMethod{together: true}
	}
	return nil
}

// evictMethod evicts the pod (the budget arbitrates with drains) and lets its StatefulSet recreate it
// with the current spec; a pod moved off a blocked node gives up its local volumes first.
type evictMethod struct{ newInstance }

func (evictMethod) text() string    { return "evict and recreate" }
func (evictMethod) takesDown() bool { return true }
func (evictMethod) standsFor(m ackov1alpha1.PodUpdateMethod) bool {
	return m == ackov1alpha1.UpdateEvict
}
func (evictMethod) needsEveryPodReady() bool { return true }
func (evictMethod) waitsForChecks() bool     { return true }

// batchLimit: min(rollingUpdateBatchSize, replication-factor − 1).
func (evictMethod) batchLimit(st *clusterState) int { return st.batchSize() }

// takeStep: looked at again right before the act (the actuator): the record may be minutes old (an
// operator restart, a refused eviction), and a drain may have taken a node meanwhile.
func (evictMethod) takeStep(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState,
	names []string) (string, error) {
	intent := takeDown{what: "eviction", pods: names, decided: st.decidedAt(names)}
	if movesOff(st.cluster.Status.Pods[names[0]].Update) {
		intent.what = "move off node " + st.pods[names[0]].Spec.NodeName
	}
	return r.remove(ctx, st, intent, ackov1alpha1.UpdateEvict, names)
}

// replaceMethod deletes a pod broken by its container state, to recreate it with the current spec: it
// takes no node down (its asd does not run).
type replaceMethod struct{ newInstance }

func (replaceMethod) text() string    { return "replace the broken pod" }
func (replaceMethod) takesDown() bool { return false }
func (replaceMethod) standsFor(m ackov1alpha1.PodUpdateMethod) bool {
	return m == ackov1alpha1.UpdateReplace
}
func (replaceMethod) needsEveryPodReady() bool { return false }

// waitsForChecks: broken pods are down already: replacing them waits for nothing, still at most
// replication-factor − 1 at once.
func (replaceMethod) waitsForChecks() bool            { return false }
func (replaceMethod) batchLimit(st *clusterState) int { return st.batchSize() }

func (replaceMethod) takeStep(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState,
	names []string) (string, error) {
	intent := takeDown{what: "replacement", kind: actReplace, pods: names, decided: st.decidedAt(names)}
	return r.remove(ctx, st, intent, ackov1alpha1.UpdateReplace, names)
}

// remove hands the actuator the removal of the pods: it says what the removal did, or what it waits for.
func (r *AerospikeClusterReconciler) remove(ctx context.Context, st *clusterState, intent takeDown,
	method ackov1alpha1.PodUpdateMethod, names []string) (string, error) {
	done, v, err := r.takeDownNow(ctx, st, intent, removal{method: method, names: names})
	if v.why != "" {
		return v.why, err
	}
	return done, err
}

// inPlaceMethod restarts asd in the pod (SIGUSR1 to tini) on the config copied into it: same pod, same
// volumes, the node down for the restart (restartInPlace).
type inPlaceMethod struct{}

func (inPlaceMethod) text() string             { return "restart in place" }
func (inPlaceMethod) takesDown() bool          { return true }
func (inPlaceMethod) needsEveryPodReady() bool { return false }
func (inPlaceMethod) waitsForChecks() bool     { return true }

// batchLimit: one at a time, as config changes went when every one was first tried live.
func (inPlaceMethod) batchLimit(*clusterState) int { return 1 }

func (inPlaceMethod) takeStep(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState,
	names []string) (string, error) {
	return r.restartInPlace(ctx, st, names)
}

// standsFor: a live change that fell back to a restart in place stays one.
func (inPlaceMethod) standsFor(m ackov1alpha1.PodUpdateMethod) bool {
	return m == ackov1alpha1.UpdateInPlace || m == ackov1alpha1.UpdateLive
}

func (inPlaceMethod) happenedUnrecorded(st *clusterState, name string, u *ackov1alpha1.PodUpdate) bool {
	return st.restartedInPlace(name, u)
}

// overOnSameInstance: the pod must already record the config its own copy holds and the volume sizes
// asd started with, then its node started again or it is broken (asd crash-loops on the file it was
// given): deciding again forgets the step, and the annotations are then what tell that the pod is
// outdated.
func (inPlaceMethod) overOnSameInstance(st *clusterState, name string, u *ackov1alpha1.PodUpdate) bool {
	pod := st.pods[name]
	return pod.Annotations[ackov1alpha1.AnnotationConfigHash] == u.ConfigHash &&
		(u.VolumeSizes == "" || pod.Annotations[ackov1alpha1.AnnotationVolumeSizes] == u.VolumeSizes) &&
		(st.broken[name] != "" || st.restartedSince(name, u.NodeStartedBefore))
}

func (inPlaceMethod) followSameInstance(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState,
	pod *corev1.Pod, u *ackov1alpha1.PodUpdate) (string, bool, error) {
	if pod == nil || string(pod.UID) != u.UID {
		return "", false, nil
	}
	why, err := r.followInPlace(ctx, st, pod, u)
	return why, true, err
}

// holds the gate until the reading shows asd restarted: a reading from before the signal must not make
// the pod Ready while asd is down. A pod recreated meanwhile (a drain evicted it) runs the current config
// already and is not held: its step ends once it is Ready.
func (inPlaceMethod) holds(st *clusterState, name string, u *ackov1alpha1.PodUpdate) string {
	if !st.sameInstance(name, u) || u.Done && st.restartedSince(name, u.NodeStartedBefore) {
		return ""
	}
	return fmt.Sprintf("restarting in place to load config %s", u.ConfigHash)
}

// liveMethod applies a dynamic change to the running node (set-config), one node at a time, or on every
// node and then a recluster (together: a replication-factor change); no node goes down.
type liveMethod struct {
	newInstance
	together bool
}

func (m liveMethod) standsFor(other ackov1alpha1.PodUpdateMethod) bool { return other == m.status() }

// needsEveryPodReady: one node's live change waits for PodsReady; the replication factor's, for every
// node running and answering (applyTogether).
func (m liveMethod) needsEveryPodReady() bool { return !m.together }

func (liveMethod) waitsForChecks() bool { return true }

// batchLimit: one node at a time; the replication factor's change takes every node in one batch
// (nextBatch), whatever the limit.
func (m liveMethod) batchLimit(st *clusterState) int {
	if m.together {
		return len(st.outdated)
	}
	return 1
}

func (m liveMethod) status() ackov1alpha1.PodUpdateMethod {
	if m.together {
		return ackov1alpha1.UpdateLiveTogether
	}
	return ackov1alpha1.UpdateLive
}

func (m liveMethod) text() string {
	if m.together {
		return "apply live on every node, then recluster"
	}
	return "apply live"
}

func (liveMethod) takesDown() bool { return false }

func (m liveMethod) takeStep(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState,
	names []string) (string, error) {
	if m.together {
		return r.applyTogether(ctx, st, names)
	}
	return r.applyLive(ctx, st, names[0])
}
