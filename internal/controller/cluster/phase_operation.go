package cluster

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

// maxOperationSteps bounds the steps one reconcile takes; each pod needs at most a few.
const maxOperationSteps = 8

// runOperation advances the on-demand operation. An operation InProgress goes before the rolling
// restart and a scale-down, which wait for it: its pods wait only for the nodes to be up and stable,
// never for the spec to be rolled out (each would wait for the other). A new operation waits until the
// cluster is Running and no rolling restart is pending.
// Every pod it restarts goes through the same safety checks as a rolling restart, right before it acts.
func (r *AerospikeClusterReconciler) runOperation(ctx context.Context, st *clusterState) (bool, error) {
	ready, _, why := st.readiness()
	up, down := st.operationNodesUp()
	obs := operations.Observed{
		Pods:                  st.pods,
		Health:                st.health,
		HealthOK:              st.healthOK,
		ClusterReady:          (ready || st.splitOnly()) && st.work == nil,
		NotReady:              why,
		NodesUp:               up,
		NodesDown:             down,
		RollingRestartPending: len(st.outdated) > 0 || st.updatesPending(),
		Now:                   st.now,
		Results:               st.results,
		Actuator:              operationActuator{r: r, st: st},
		ConfigHash: func(pod string) string {
			if p := st.pods[pod]; p != nil {
				return st.desiredConfigHash(p)
			}
			return ""
		},
		Loading: st.coldStart,
	}
	if st.work != nil {
		obs.NotReady = st.work.message
	}
	for range maxOperationSteps {
		res, err := r.Executor.Step(ctx, st.cluster, obs)
		st.operationActive = res.Active
		if err != nil {
			return true, err
		}
		if res.Waiting != "" && (res.Active || operations.PendingOperation(st.cluster) != nil) {
			st.setWork(ackov1alpha1.ReasonOperationRunning, "Operation: %s", res.Waiting)
		}
		if !res.Progressed {
			break
		}
	}
	if st.operationActive {
		op := st.cluster.Status.OperationStatus
		st.setWork(ackov1alpha1.ReasonOperationRunning, "Operation %s (%s) in progress: %d/%d pods done",
			op.ID, op.Kind, len(op.CompletedPods), len(op.TargetPods))
	}
	return false, nil
}

// operationRefused: the eviction of the operation's current pod has been refused for longer than the
// progress deadline, which stalls the cluster ("" when not). It is reported, not acted on: the operation
// ends at its pod timeout, and a broken pod is still replaced meanwhile (the rollout is not stopped).
func (st *clusterState) operationRefused(op *ackov1alpha1.OperationStatus) string {
	since := operations.RefusedSince(op)
	if since.IsZero() {
		return ""
	}
	return st.refusedTooLong(actOperation, op.CurrentPod, since)
}

// splitOnly: the nodes are split and nothing else keeps the cluster from Running. An operation still
// runs then (the user accepts the cost of a restart while split), under the safety rule.
func (st *clusterState) splitOnly() bool {
	return st.split && len(st.outdated) == 0 && len(st.leavingNow()) == 0
}

// operationNodesUp is nodesUp for an operation's pods, which also wait for the pods a scale down
// recorded leaving (see operationHold). A pod kept from Ready only by a sidecar while its
// node serves is up, as the door counts it: otherwise an operation would wait for a sidecar that only a
// rolling restart can fix, and the rolling restart waits for the operation. While the nodes are split and
// nothing else keeps the cluster from Running, the pods outside the largest group are not Ready (not
// members of it) although their nodes answer: an operation the user asks for still goes then, under the
// safety rule (issue 22, point 6: the user accepts the cost of a restart while split).
func (st *clusterState) operationNodesUp() (bool, string) {
	if leaving := st.recordedLeaving(); len(leaving) > 0 {
		return false, "pods leave the cluster first: " + strings.Join(leaving, ", ")
	}
	up, _, down := st.nodesUp(slices.Collect(maps.Keys(st.view().serving)))
	if up || !st.splitOnly() {
		return up, down
	}
	for _, name := range st.cluster.DesiredPodNames() {
		if n, ok := st.health.Nodes[name]; st.pods[name] == nil || !ok || n.Err != nil {
			return false, down
		}
	}
	return true, ""
}

// operationIntent is the take-down of an operation's restart of a pod, for the actuator: the
// replication-factor change applied first, the disruption budget taken for a warm restart (an eviction
// asks the budget itself), then the door's checks. While split the operation still goes under the safety
// rule: the user asked for it.
func (st *clusterState) operationIntent(pod string, warm bool) takeDown {
	var decided time.Time
	if op := st.cluster.Status.OperationStatus; op != nil && op.CurrentPodStartTime != nil {
		decided = op.CurrentPodStartTime.Time
	}
	return takeDown{what: "restart of " + pod, kind: actOperation, pods: []string{pod}, decided: decided, warm: warm}
}
