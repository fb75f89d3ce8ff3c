package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/resources"
)

// stateNotReady says a pod (or a Kubernetes node) is not Ready.
const stateNotReady = "not Ready"

// stateRefilling says a node whose volumes the operator gave up has not been seen refilled: it may lack
// copies the others do not hold either.
const stateRefilling = "refilling since its volumes were given up"

// takeDownCheck is a named safety predicate (as ECK's; ADR-0020, docs/adr/0020-restart-safety.md): it
// returns "" when the given pods may go down now, or why they may not. Every act that takes Aerospike nodes
// down runs them through one door (mayActNow) at the moment it acts.
type takeDownCheck struct {
	name  string
	check func(v *takeDownView, pods []string) string
}

// takeDownView is what the checks judge: the pods, the nodes down or leaving and the readings as they are
// at one moment.
type takeDownView struct {
	desired []string
	pods    map[string]*corev1.Pod
	members []string          // the pods that run: their nodes must all be in the cluster
	down    map[string]string // pods down or leaving, and why
	// serving are the pods not Ready only because a container other than Aerospike's is not ready (a
	// sidecar's readiness probe fails) while their node serves: their gate is True and the readings
	// show it in the cluster. Their nodes hold their copies: they are not down (the stability check
	// still holds every take-down while any node migrates).
	serving map[string]bool
	health  aerospike.ClusterHealth
	now     time.Time
	maxDown int
	split   bool
}

var (
	checkSafetyRule = takeDownCheck{"SafetyRule", func(v *takeDownView, pods []string) string {
		if v.firstWorking(pods) == "" {
			// Their asd does not run (a scale down of pods a bad spec broke, say): no node goes down.
			return ""
		}
		var others []string
		for p, why := range v.down {
			if !slices.Contains(pods, p) {
				others = append(others, p+" ("+why+")")
			}
		}
		if len(pods)+len(others) > v.maxDown {
			slices.Sort(others)
			return fmt.Sprintf("%d pods would be down at once (down or leaving already: %s), at most %d may be "+
				"(replication-factor − 1)", len(pods)+len(others), strings.Join(others, ", "), v.maxDown)
		}
		return ""
	}}
	checkPodsReady = takeDownCheck{"PodsReady", func(v *takeDownView, pods []string) string {
		notReady := slices.DeleteFunc(notReadyIn(v.desired, v.pods, pods), func(p string) bool { return v.serving[p] })
		if len(notReady) > 0 {
			return "pods not Ready: " + strings.Join(notReady, ", ")
		}
		return ""
	}}
	checkClusterStable = takeDownCheck{"ClusterStable", func(v *takeDownView, _ []string) string {
		_, why := v.health.Gate(v.members, v.now)
		return why
	}}
	// While split, a node of either side can hold writes the other lacks (AP mode): a restart of an
	// in-memory node discards them. The operator takes nothing down; a user who accepts that asks with
	// an operation.
	checkNoSplitBrain = takeDownCheck{"NoSplitBrain", func(v *takeDownView, _ []string) string {
		if v.split {
			return "the nodes form more than one cluster: " + v.health.DescribeGroups(v.members) +
				"; the operator tells lone nodes where the cluster is (NodeTipped events) and takes no node down " +
				"until they form one; an operation restarts the pods it names anyway"
		}
		return ""
	}}
	// While split the stability gate cannot pass (the sides differ), but each side still refills the nodes
	// that restarted empty and the copies a lost node held: until every node's migrations are done, a
	// node taken down may hold the last copy of a partition.
	checkNoMigrations = takeDownCheck{"NoMigrations", func(v *takeDownView, _ []string) string {
		for _, pod := range slices.Sorted(slices.Values(v.members)) {
			if n, ok := v.health.Nodes[pod]; !ok || !n.Reachable() {
				return "no reading of " + pod
			} else if n.Facts.MigratePartitionsRemaining != 0 {
				return fmt.Sprintf("%s: migrate_partitions_remaining=%d", pod, n.Facts.MigratePartitionsRemaining)
			}
		}
		return ""
	}}
	// A broken pod's asd does not run (its container crashes or cannot start): deleting it takes nothing down.
	checkStillBroken = takeDownCheck{"StillBroken", func(v *takeDownView, pods []string) string {
		if p := v.firstWorking(pods); p != "" {
			return "pod " + p + " is no longer broken by its container state"
		}
		return ""
	}}
)

// The checks of ending a stuck exchange (liveconfig.StuckExchangeError). The cluster cannot be stable, its
// pods cannot be Ready (no node passes its gate while cluster-stable errs) and the partitions cannot
// migrate, so the roll's checks would hold the only way out for good. Restarting a node is safe here when:
//   - the node is in no cluster (cluster_size 0, OutsideCluster): it has committed no exchange since its
//     asd started, so it owns no partition, took no write and serves no read (PARTITION_UNAVAILABLE);
//     whatever it holds it held before that start: nothing in a memory namespace, and in a persistent one
//     its records read back from disk, which a restart reads back again. So its restart loses nothing
//     that is not lost already;
//   - every other node of the cluster runs, answers and is in one and the same cluster
//     (OthersInOneCluster): they keep the partition map and every copy they held, nothing else is down,
//     and the restart takes none of them down.
//
// A node in a cluster (cluster_size > 0) may hold the only copy of a partition (a real 8.1.2.0 lost 3227
// of 10 000 keys when a node holding data was restarted instead): OutsideCluster refuses it. The door
// still asks for readings newer than the finding and a last look (mayActNow).
var (
	checkOutsideCluster = takeDownCheck{"OutsideCluster", func(v *takeDownView, pods []string) string {
		for _, p := range pods {
			n, ok := v.health.Nodes[p]
			switch {
			case !ok || !n.Reachable():
				return "no reading of " + p
			case n.Facts.ClusterSize != 0:
				return fmt.Sprintf("%s is in a cluster of %d nodes (key %s): it may hold copies no other node has",
					p, n.Facts.ClusterSize, n.Facts.ClusterKey)
			}
		}
		return ""
	}}
	checkOthersInOneCluster = takeDownCheck{"OthersInOneCluster", func(v *takeDownView, pods []string) string {
		key := ""
		for _, p := range v.desired {
			if !slices.Contains(pods, p) && !slices.Contains(v.members, p) {
				return p + " does not run"
			}
		}
		for _, p := range v.members {
			if slices.Contains(pods, p) {
				continue
			}
			n, ok := v.health.Nodes[p]
			switch {
			case !ok || !n.Reachable():
				return "no reading of " + p
			case n.Facts.ClusterSize == 0:
				return p + " is in no cluster either"
			case key != "" && n.Facts.ClusterKey != key:
				return fmt.Sprintf("the other nodes are not in one cluster (%s has key %s, another %s)", p,
					n.Facts.ClusterKey, key)
			}
			key = n.Facts.ClusterKey
		}
		return ""
	}}
	stuckExchangeChecks = []takeDownCheck{checkOutsideCluster, checkOthersInOneCluster}
)

// firstWorking names the first of the pods that is not broken by its container state ("" when every one
// is: their asd does not run, so taking them down takes no node down).
func (v *takeDownView) firstWorking(pods []string) string {
	for _, p := range pods {
		if broken, _ := resources.Broken(v.pods[p]); !broken {
			return p
		}
	}
	return ""
}

// takeDownChecks run before a roll, a scale-down step or a rack removal takes nodes down. A split is named
// first: it explains the rest.
var takeDownChecks = []takeDownCheck{checkNoSplitBrain, checkSafetyRule, checkPodsReady, checkClusterStable}

// actKind selects the checks of a take-down.
type actKind int

const (
	actRoll      actKind = iota // a rolling-restart step, a scale-down step, a rack removal: takeDownChecks
	actOperation                // a restart the user asked for: while split, the safety rule once migrations are done
	actReplace                  // deleting pods broken by their container state
	// actEndStuckExchange: restarting the nodes in no cluster of an exchange a replication-factor
	// conflict stuck (endStuckExchange): stuckExchangeChecks.
	actEndStuckExchange
	// actGiveUp: deleting the local volumes of a pod whose node is lost, and the pod: takeDownChecks
	// with the pod's node already down and not counted as running (its status is the lost node's).
	actGiveUp
)

func (k actKind) checks(split bool) []takeDownCheck {
	switch {
	case k == actReplace:
		return []takeDownCheck{checkStillBroken}
	case k == actOperation && split:
		return []takeDownCheck{checkSafetyRule, checkNoMigrations}
	case k == actEndStuckExchange:
		return stuckExchangeChecks
	}
	return takeDownChecks
}

// run returns the name of the first check that holds the pods and why ("" when they may go).
func (v *takeDownView) run(kind actKind, pods []string) (check, why string) {
	for _, c := range kind.checks(v.split) {
		if why := c.check(v, pods); why != "" {
			return c.name, why
		}
	}
	return "", ""
}

// view is the checks' view from this reconcile's observations (a decision; the act looks again).
func (st *clusterState) view() *takeDownView {
	return st.viewOf(st.pods, st.members, st.now)
}

// viewOf recomputes the nodes down or leaving from the given pods and the steps recorded now, not from
// observe: a step recorded earlier in this reconcile counts. A pod not Ready is down, unless its node
// serves: only a sidecar keeps it from Ready and its node is in the cluster (the largest group), or the
// nodes are split and it answers (its gate then says it is outside the largest group or that group is
// short, while it serves).
func (st *clusterState) viewOf(pods map[string]*corev1.Pod, members []string, now time.Time) *takeDownView {
	down, serving := maps.Clone(st.heldPods()), map[string]bool{}
	desired := st.cluster.DesiredPodNames()
	inCluster := st.largestGroup(members)
	for name, pod := range pods {
		_, held := down[name]
		switch {
		case held || resources.PodReady(pod):
		case resources.PodRunning(pod) &&
			(resources.SidecarNotReady(pod) && slices.Contains(inCluster, name) || st.split && st.answers(name)):
			serving[name] = true
		default:
			down[name] = stateNotReady
		}
	}
	for _, name := range desired {
		if pods[name] == nil {
			down[name] = "missing"
		}
	}
	for _, name := range st.refilling() {
		if _, ok := down[name]; !ok {
			down[name] = stateRefilling
		}
	}
	return &takeDownView{desired: desired, pods: pods, members: members, down: down, serving: serving, health: st.health,
		now: now, maxDown: st.maxDown, split: st.split}
}

// largestGroup are the members in the largest cluster the readings show (none without readings).
func (st *clusterState) largestGroup(members []string) []string {
	if groups, _ := st.health.Groups(members); len(groups) > 0 {
		return groups[0].Pods
	}
	return nil
}

// heldServing: a give-up takes no node down that is not down already. A pod whose gate the operator
// holds for a step (not taken yet, or taken and back) still holds its copies while its node is in the
// cluster, and the stability check holds the give-up while any node migrates: the give-up counts such a
// pod neither down nor not Ready. The step, when it comes, counts the refilling successor as down. Else
// the give-up and the step wait for each other (model hole 18: an operation held aero-1's gate and waited
// for the lost aero-4 to take a new replication-factor, the give-up of aero-4 for aero-1 to be Ready;
// seed 50458: at replication-factor 2, for aero-1 to be back).
func (v *takeDownView) heldServing(st *clusterState, pods map[string]*corev1.Pod) {
	inCluster := st.largestGroup(v.members)
	for name := range st.heldPods() {
		if resources.PodRunning(pods[name]) && slices.Contains(inCluster, name) {
			delete(v.down, name)
			v.serving[name] = true
		}
	}
}

// mayTakeDown runs the checks of a decision on this reconcile's observations; it returns the name of
// the first check that holds the pods and why ("" when they may go). The act runs them again (mayActNow).
func (st *clusterState) mayTakeDown(pods []string) (check, why string) {
	return st.view().run(actRoll, pods)
}

// answers: the node's latest reading is an answer.
func (st *clusterState) answers(pod string) bool {
	n, ok := st.health.Nodes[pod]
	return ok && n.Err == nil
}

// freshReadingAge bounds how old a reading may be when the operator acts: readings 5 s old said "stable"
// while a node had stopped; a reading taken at that moment was never wrong.
const freshReadingAge = time.Second

// What the door says while it waits for readings rather than for a check.
const (
	waitingForReadings = "waiting for a fresh reading of every node ("
	lookingAgain       = "taking a last look at every node before the "
)

// waitsForReadings: the door's answer is a wait for readings, which come within a poll, not a hold by
// a check (no RestartBlocked warning for it).
func waitsForReadings(why string) bool {
	return strings.HasPrefix(why, waitingForReadings) || strings.HasPrefix(why, lookingAgain)
}

// lastLooks remembers, per cluster and act, when the door last asked for the readings the act is to
// go on. Once the checks pass, the door asks the prober for a new reading of every node and acts only
// on readings taken after that request: between the reading and the act lie one poll and the
// reconcile it wakes (milliseconds), not whatever the prober's pace left (up to freshReadingAge). Per
// act, since one reconcile may bring several acts to the door (a scale-down and a held roll step). A
// look is removed once the act went or is held: it is for the pass right after it. Kept in memory: an
// operator that restarts simply asks again.
type lastLooks = perCluster[string, time.Time]

// takeDown is one act that takes nodes down.
type takeDown struct {
	what    string // for the hold message: "eviction", "restart in place", ...
	kind    actKind
	pods    []string
	decided time.Time // when the act was decided (its step recorded): readings must be newer
	// absent (actGiveUp): every pod whose Kubernetes node is lost; their nodes answer nothing and are
	// not waited for.
	absent []string
	// acceptLoss (actGiveUp): the user accepts losing the copies the pods may hold alone, so the nodes
	// refilling after an earlier give-up count as holding theirs.
	acceptLoss bool
}

// mayActNow is the one door every act that takes nodes down goes through, right before it acts (an
// eviction, a delete, a restart signal, a StatefulSet's replicas lowered, a rack removed): the named
// checks on the pods read again from the API server, the nodes down or leaving recomputed at this
// moment, and readings of every running node taken after the decision and at most freshReadingAge old.
// Once the checks pass, it asks for a last look (lastLooks) and acts only on readings taken after it,
// so that a node that stopped or restarted since the prober's last round is seen. Readings are asked
// of the prober (it wakes the reconcile): no reconcile waits on the network. It says why the act waits
// ("" when it may go now).
func (r *AerospikeClusterReconciler) mayActNow(ctx context.Context, st *clusterState, act takeDown) (string, error) {
	pods, err := r.readPods(ctx, st)
	if err != nil {
		return "", err
	}
	now := r.Clock.Now()
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
	if act.kind == actReplace {
		if check, why := v.run(act.kind, act.pods); check != "" {
			return holdReason(act.what, check, why), nil
		}
		return r.recordsHeld(ctx, st, act.pods)
	}
	id := act.what + "/" + strings.Join(act.pods, ",")
	if why := v.stale(act.decided); why != "" {
		r.looks.remove(st.key, id)
		r.Probers.Refresh(st.key)
		return why, nil
	}
	if check, why := v.run(act.kind, act.pods); check != "" {
		r.looks.remove(st.key, id)
		return holdReason(act.what, check, why), nil
	}
	if asked, ok := r.looks.get(st.key, id); !ok || v.stale(asked) != "" {
		r.looks.set(st.key, id, now)
		r.Probers.Refresh(st.key)
		return lookingAgain + act.what, nil
	}
	r.looks.remove(st.key, id)
	return r.recordsHeld(ctx, st, act.pods)
}

// recordsHeld says why the act may not go out after all ("" when it may): the API server must hold each
// pod's step as this reconcile read it. The cache can lag behind a record cleared a moment ago (a step
// decided again after a restart), and an act on it would take a node down with no step recorded (model
// hole 25). Read only when the act is about to go: one request per act.
func (r *AerospikeClusterReconciler) recordsHeld(ctx context.Context, st *clusterState, names []string) (string, error) {
	fresh := &ackov1alpha1.AerospikeCluster{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(st.cluster), fresh); err != nil {
		return "", err
	}
	for _, name := range names {
		read, held := st.cluster.Status.Pods[name].Update, fresh.Status.Pods[name].Update
		if read == nil {
			continue
		}
		if held == nil || held.UID != read.UID || held.Method != read.Method || !held.Started.Equal(&read.Started) {
			return fmt.Sprintf("the step of %s read from the cache is no longer the one recorded: read again", name), nil
		}
	}
	return "", nil
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

// budgetTaken reports whether the PodDisruptionBudget counts pods as disrupted already, so that a
// drain cannot take another node while the operator takes them down without an eviction (a restart
// in place, a scale-down): their readiness gates are held False, their Ready conditions followed, and
// the disruption controller has counted them.
func (st *clusterState) budgetTaken(pods []string) (bool, string) {
	pdb := st.existingPDB
	switch {
	case st.cluster.BudgetDisabled():
		return true, "" // no budget counts anything: a drain is not held (docs/scheduling.md)
	case pdb == nil:
		return false, "the PodDisruptionBudget does not exist yet"
	}
	for _, p := range pods {
		if resources.PodReady(st.pods[p]) {
			return false, fmt.Sprintf("waiting for pod %s to report not Ready (its readiness gate is held)", p)
		}
	}
	if pdb.Status.ObservedGeneration < pdb.Generation || pdb.Status.CurrentHealthy > pdb.Status.ExpectedPods-int32(len(pods)) {
		return false, fmt.Sprintf("waiting for PodDisruptionBudget %s to count %s as disrupted", pdb.Name, strings.Join(pods, ", "))
	}
	return true, ""
}

// holdReason formats a held step for the Reconciling condition (reason RestartBlocked).
func holdReason(what, check, why string) string {
	return fmt.Sprintf("%s held by check %s: %s", what, check, why)
}
