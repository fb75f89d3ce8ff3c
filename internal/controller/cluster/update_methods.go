package cluster

import (
	"context"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// updateMethod is one way a rolling restart updates a pod (status.pods[].update.method): how the events
// and the status name it, whether its step takes the node down (the step then counts against the
// budget), and how its recorded step is taken. Adding a method is a type here and its entry in
// rollMethods.
type updateMethod interface {
	// text is how events and messages name the method: "Updating aero-1 (ConfigChanged, <text>)".
	text() string
	// takesDown: its step takes the node down, and counts against the budget.
	takesDown() bool
	// takeStep takes the recorded steps of the method that have not happened yet (together), and says
	// what they wait for now.
	takeStep(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState, names []string) (string, error)
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
type evictMethod struct{}

func (evictMethod) text() string    { return "evict and recreate" }
func (evictMethod) takesDown() bool { return true }

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
type replaceMethod struct{}

func (replaceMethod) text() string    { return "replace the broken pod" }
func (replaceMethod) takesDown() bool { return false }

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

func (inPlaceMethod) text() string    { return "restart in place" }
func (inPlaceMethod) takesDown() bool { return true }

func (inPlaceMethod) takeStep(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState,
	names []string) (string, error) {
	return r.restartInPlace(ctx, st, names)
}

// liveMethod applies a dynamic change to the running node (set-config), one node at a time, or on every
// node and then a recluster (together: a replication-factor change); no node goes down.
type liveMethod struct{ together bool }

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
