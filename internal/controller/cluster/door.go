package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// The door: every act that takes Aerospike nodes down (an eviction, a delete, a restart signal, a
// StatefulSet's replicas lowered, a rack removed, a lost node given up) goes through mayActNow right
// before it acts, and the door alone holds every look the act waits for, each a named entry of the
// act's list (doorWaits, then the checks of safety.go):
//   1. the waits on what this reconcile read: a background task, an earlier attempt not settled, the
//      PodDisruptionBudget not counting the pods yet, a node up too short a time to prove its restart, a
//      replication-factor change not applied, an operation restarting a pod, a lost node split off;
//   2. the pods read again from the API server, the nodes down or leaving recomputed at this moment, and
//      readings of every running node taken after the decision and at most freshReadingAge old
//      (ReadingsFresh);
//   3. the named checks (safety.go) on that view;
//   4. a last look (LastLook): once the checks pass, the door asks the prober for a new reading of every
//      node and acts only on readings taken after it, so that a node that stopped or restarted since
//      the prober's last round is seen; readings are asked of the prober (it wakes the reconcile): no
//      reconcile waits on the network;
//   5. the step's record as the API server holds it (RecordsHeld).

// takeDown is one act that takes nodes down, as its caller hands it to the door.
type takeDown struct {
	what    string // for the hold message: "eviction", "restart in place", ...
	kind    actKind
	pods    []string
	decided time.Time // when the act was decided (its step recorded): readings must be newer
	// prepared (actRestartInPlace, actEndStuckExchange): the attempt the status records was prepared
	// by this operator, so its signal certainly did not go out yet: it need not settle first.
	prepared bool
	// warm (actOperation): a WarmRestart, which the budget must count first (an eviction asks it itself).
	warm bool
	// absent (actGiveUp): every pod whose Kubernetes node is lost; their nodes answer nothing and are
	// not waited for.
	absent []string
	// acceptLoss (actGiveUp): the user accepts losing the copies the pods may hold alone, so the nodes
	// refilling after an earlier give-up count as holding theirs.
	acceptLoss bool
}

// verdict is the door's answer: why the act may not go now ("" when it may), and whether a check holds
// it (a hold, whose message names the check: RestartBlocked) rather than a wait that ends by itself.
type verdict struct {
	why  string
	held bool
}

// doorWait is a named wait of the door on what this reconcile read, looked at before anything is read
// again.
type doorWait struct {
	name string
	wait func(r *AerospikeClusterReconciler, st *clusterState, act takeDown) verdict
}

var (
	// A background task of the cluster runs: one act at a time, and a prepared signal goes out alone.
	waitNoTaskRunning = doorWait{"NoTaskRunning", func(r *AerospikeClusterReconciler, st *clusterState, _ takeDown) verdict {
		if key, busy := r.Tasks.Busy(st.key); busy {
			return verdict{why: "waiting for " + key.Name}
		}
		return verdict{}
	}}
	// An earlier attempt may have signalled without the operator learning of it (settling).
	waitAttemptSettled = doorWait{"AttemptSettled", func(_ *AerospikeClusterReconciler, st *clusterState, act takeDown) verdict {
		if act.prepared {
			return verdict{}
		}
		return verdict{why: st.settling(act.pods)}
	}}
	// The decision's checks on this reconcile's observations, before the budget is waited for.
	waitDecisionChecks = doorWait{"DecisionChecks", func(_ *AerospikeClusterReconciler, st *clusterState, act takeDown) verdict {
		if check, why := st.mayTakeDown(act.pods); check != "" {
			return verdict{why: holdReason(act.what, check, why), held: true}
		}
		return verdict{}
	}}
	// A take-down that evicts nothing must be counted by the PodDisruptionBudget first, so that a drain
	// cannot take another node meanwhile (budgetTaken).
	waitBudgetTaken = doorWait{"BudgetTaken", func(_ *AerospikeClusterReconciler, st *clusterState, act takeDown) verdict {
		if act.kind == actOperation && !act.warm {
			return verdict{} // an eviction asks the budget itself
		}
		_, why := st.budgetTaken(act.pods)
		return verdict{why: why}
	}}
	// asd's uptime proves a restart only when it had run long enough (minUptimeBeforeSignal).
	waitProvableRestart = doorWait{"ProvableRestart", func(_ *AerospikeClusterReconciler, st *clusterState, act takeDown) verdict {
		for _, p := range act.pods {
			if up := st.health.Nodes[p].Facts.Uptime; up < minUptimeBeforeSignal {
				return verdict{why: fmt.Sprintf("Aerospike on %s started %s ago", p, up)}
			}
		}
		return verdict{}
	}}
	// A warm restart loads the desired config, a new pod starts on it: with a factor the other nodes do
	// not run yet, the node would not rejoin them.
	waitFactorApplied = doorWait{"FactorApplied", func(_ *AerospikeClusterReconciler, st *clusterState, _ takeDown) verdict {
		if name := st.factorPending(); name != "" {
			return verdict{why: "the replication-factor change reaches every node first (" + name + " runs the old one)"}
		}
		return verdict{}
	}}
	// A scale-down waits while an operation restarts a pod (operationHold).
	waitNoOperationStep = doorWait{"NoOperationStep", func(_ *AerospikeClusterReconciler, st *clusterState, _ takeDown) verdict {
		return verdict{why: st.operationHold()}
	}}
	// A lost node last seen split off may hold writes no other node has (splitOffKept).
	waitNotSplitOff = doorWait{"NotSplitOff", func(_ *AerospikeClusterReconciler, st *clusterState, act takeDown) verdict {
		return verdict{why: st.splitOffKept(act.pods)}
	}}
)

// doorWaits are the act's waits, in order.
func (k actKind) doorWaits() []doorWait {
	switch k {
	case actRestartInPlace:
		return []doorWait{waitNoTaskRunning, waitAttemptSettled, waitDecisionChecks, waitBudgetTaken, waitProvableRestart}
	case actEndStuckExchange:
		return []doorWait{waitNoTaskRunning, waitAttemptSettled}
	case actScaleDown:
		return []doorWait{waitNoOperationStep, waitBudgetTaken}
	case actOperation:
		return []doorWait{waitFactorApplied, waitBudgetTaken}
	case actGiveUp:
		return []doorWait{waitNotSplitOff}
	}
	return nil
}

// freshReadingAge bounds how old a reading may be when the operator acts: readings 5 s old said "stable"
// while a node had stopped; a reading taken at that moment was never wrong.
const freshReadingAge = time.Second

// What the door says while it waits for readings rather than for a check.
const (
	waitingForReadings = "waiting for a fresh reading of every node ("
	lookingAgain       = "taking a last look at every node before the "
)

// lastLooks remembers, per cluster and act, when the door last asked for the readings the act is to
// go on (LastLook): between the reading and the act lie one poll and the reconcile it wakes
// (milliseconds), not whatever the prober's pace left (up to freshReadingAge). Per act, since one
// reconcile may bring several acts to the door (a scale-down and a held roll step). A look is removed
// once the act went or is held: it is for the pass right after it. Kept in memory: an operator that
// restarts simply asks again.
type lastLooks = perCluster[string, time.Time]

// mayActNow is the one door every act that takes nodes down goes through, right before it acts: its
// waits, then the pods read again, fresh readings, the checks, a last look and the records (see the top
// of this file). It says why the act may not go now ("" when it may).
func (r *AerospikeClusterReconciler) mayActNow(ctx context.Context, st *clusterState, act takeDown) (verdict, error) {
	for _, w := range act.kind.doorWaits() {
		if v := w.wait(r, st, act); v.why != "" {
			return v, nil
		}
	}
	pods, err := r.readPods(ctx, st)
	if err != nil {
		return verdict{}, err
	}
	now := r.Clock.Now()
	v := r.viewAtAct(st, act, pods, now)
	if act.kind == actReplace { // deleting broken pods takes no node down: no reading is waited for
		if check, why := v.run(act.kind, act.pods); check != "" {
			return verdict{why: holdReason(act.what, check, why), held: true}, nil
		}
		return r.recordsHeld(ctx, st, act.pods)
	}
	id := act.what + "/" + strings.Join(act.pods, ",")
	if why := v.stale(act.decided); why != "" {
		r.looks.remove(st.key, id)
		r.Probers.Refresh(st.key)
		return verdict{why: why}, nil
	}
	if check, why := v.run(act.kind, act.pods); check != "" {
		r.looks.remove(st.key, id)
		return verdict{why: holdReason(act.what, check, why), held: true}, nil
	}
	if asked, ok := r.looks.get(st.key, id); !ok || v.stale(asked) != "" {
		r.looks.set(st.key, id, now)
		r.Probers.Refresh(st.key)
		return verdict{why: lookingAgain + act.what}, nil
	}
	r.looks.remove(st.key, id)
	return r.recordsHeld(ctx, st, act.pods)
}

// viewAtAct is the checks' view at the act, from the pods read again. A give-up does not wait for the
// lost nodes (absent) and counts the nodes whose gates it holds for a step as serving (heldServing); a
// user who accepts the loss counts the refilling nodes as holding their copies.
func (r *AerospikeClusterReconciler) viewAtAct(st *clusterState, act takeDown, pods map[string]*corev1.Pod,
	now time.Time) *takeDownView {
	members := runningPods(pods)
	if act.kind == actGiveUp {
		members = slices.DeleteFunc(members, func(m string) bool { return slices.Contains(act.absent, m) })
	}
	v := st.viewOf(pods, members, now)
	if act.kind == actGiveUp {
		v.heldServing(st, pods)
	}
	if act.acceptLoss {
		for _, name := range st.refilling() {
			if v.down[name] == stateRefilling {
				delete(v.down, name)
			}
		}
	}
	return v
}

// recordsHeld says why the act may not go out after all ("" when it may): the API server must hold each
// pod's step as this reconcile read it. The cache can lag behind a record cleared a moment ago (a step
// decided again after a restart), and an act on it would take a node down with no step recorded (model
// hole 25). Read only when the act is about to go: one request per act.
func (r *AerospikeClusterReconciler) recordsHeld(ctx context.Context, st *clusterState, names []string) (verdict, error) {
	fresh := &ackov1alpha1.AerospikeCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(st.cluster), fresh); err != nil {
		return verdict{}, err
	}
	for _, name := range names {
		read, held := st.cluster.Status.Pods[name].Update, fresh.Status.Pods[name].Update
		if read == nil {
			continue
		}
		if held == nil || held.UID != read.UID || held.Method != read.Method || !held.Started.Equal(&read.Started) {
			return verdict{why: fmt.Sprintf("the step of %s read from the cache is no longer the one recorded: read again", name)}, nil
		}
	}
	return verdict{}, nil
}

// stale names a running node without a reading taken after the decision and at most freshReadingAge
// old ("" when every one has one).
func (v *takeDownView) stale(decided time.Time) string {
	for _, name := range v.members {
		n, ok := v.health.Nodes[name]
		if !ok || !n.ReadAt.After(decided) || v.now.Sub(n.ReadAt) > freshReadingAge {
			return waitingForReadings + name + ")"
		}
	}
	return ""
}

// readPods reads the cluster's pods from the API server, not the cache: a drain may have evicted one a
// moment ago.
func (r *AerospikeClusterReconciler) readPods(ctx context.Context, st *clusterState) (map[string]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(st.cluster.Namespace),
		client.MatchingLabels(st.cluster.SelectorLabels())); err != nil {
		return nil, err
	}
	pods := make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[list.Items[i].Name] = &list.Items[i]
	}
	return pods, nil
}

// runningPods are the pods whose container runs (and that are not terminating), sorted.
func runningPods(pods map[string]*corev1.Pod) []string {
	var out []string
	for name, pod := range pods {
		if resources.PodRunning(pod) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
