package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

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

// takeDownChecks run before a roll, a scale-down step, a rack removal or a give-up takes nodes down. A
// split is named first: it explains the rest.
var takeDownChecks = []takeDownCheck{checkNoSplitBrain, checkSafetyRule, checkPodsReady, checkClusterStable}

// actKind says what an act is: it selects the door's waits (doorWaits) and checks (checks).
type actKind int

const (
	actEvict          actKind = iota // a rolling-restart step that evicts its pods, or moves them off a blocked node
	actRestartInPlace                // a rolling-restart step that restarts asd in its pods (SIGUSR1 to tini)
	actScaleDown                     // a scale-down step, or a removed rack's: its StatefulSet's replicas lowered
	actOperation                     // a restart the user asked for: while split, the safety rule once migrations are done
	actReplace                       // deleting pods broken by their container state
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
	return st.view().run(actEvict, pods)
}

// answers: the node's latest reading is an answer.
func (st *clusterState) answers(pod string) bool {
	n, ok := st.health.Nodes[pod]
	return ok && n.Err == nil
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
