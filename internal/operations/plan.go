// Package operations runs on-demand operations (WarmRestart, PodRestart): one pod at a time, each
// step recorded in status before it acts, so that an operator killed between any two API calls
// neither restarts a pod twice nor skips one, and every wait has a deadline.
//
// Plan is the pure state machine (status in, next step out); Executor performs one step.
package operations

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/tasks"
)

// StepKind names what the executor does next.
type StepKind int

const (
	// StepIdle: no operation to run.
	StepIdle StepKind = iota
	// StepWait: an operation is pending or a pod is coming back; look again later.
	StepWait
	// StepWaitSince: the operation begins to wait for the cluster or a pod between pods; the start of
	// the wait is recorded, for its deadline.
	StepWaitSince
	// StepStart: record a new operation with its frozen list of target pods.
	StepStart
	// StepReject: record a new operation as Error before touching any pod (a podList name that is no
	// pod of the cluster).
	StepReject
	// StepBegin: record the next pod as current (its gate is then held), before it is restarted.
	StepBegin
	// StepAct: the current pod was recorded but its restart was not confirmed, and the evidence says
	// it did not happen: restart it, after the safety checks.
	StepAct
	// StepConfirm: the current pod's restart happened (by UID or uptime) but was not recorded.
	StepConfirm
	// StepPodDone: the current pod is back; record it completed.
	StepPodDone
	// StepPodFailed: the current pod failed, or a wait ran past its deadline; the operation ends with
	// Error.
	StepPodFailed
)

// Observed is what the reconciler knows of the cluster right now.
type Observed struct {
	// Pods of the cluster by name.
	Pods map[string]*corev1.Pod
	// Health is the prober's latest reading; HealthOK is false before the first one.
	Health   aerospike.ClusterHealth
	HealthOK bool
	// ClusterReady: every desired pod runs the current spec and is Ready, and the Aerospike cluster is
	// stable. A new operation starts only then. NotReady says why not.
	ClusterReady bool
	NotReady     string
	// NodesUp: every desired pod is Ready and the Aerospike nodes form one stable cluster, whether or
	// not the pods run the current spec. An operation InProgress goes before a rolling restart or a
	// scale-down, so a spec change made meanwhile must not hold it: each next pod waits for this, and a
	// restarted pod counts as back with it. NodesDown says why not.
	NodesUp   bool
	NodesDown string
	// RollingRestartPending: pods still run an outdated template. A new operation waits for the
	// rolling restart to finish; one already InProgress goes first.
	RollingRestartPending bool
	// Now is the time of the observation.
	Now time.Time
	// Results of the cluster's background tasks that ended since the last reconcile, by task name.
	Results map[string]tasks.Result
	// Actuator is the cluster reconciler's actuator: it alone takes the pod down.
	Actuator Actuator
	// ConfigHash is the config identity the pod's rack runs now: a WarmRestart loads it.
	ConfigHash func(pod string) string
	// Loading is the cold start of each pod whose asd reads its data back (status.pods[*].dataLoading):
	// a pod's wait counts only time without progress.
	Loading func(pod string) *ackov1alpha1.DataLoading
}

// Actuator is the cluster reconciler's actuator, the only code that takes an Aerospike node down: each
// call runs the door every take-down goes through (fresh readings, the disruption budget taken for a warm
// restart, the safety checks, a last look) right before it acts.
type Actuator interface {
	// MayTakeDown says why the pod may not be taken down now ("" when it may): a WarmRestart asks it
	// before it records and prepares its attempt.
	MayTakeDown(ctx context.Context, pod string, warm bool) (string, error)
	// Evict evicts the pod's instance uid once the door lets it (a PodRestart): why is the door's wait,
	// refused the disruption budget's answer.
	Evict(ctx context.Context, pod *corev1.Pod, uid types.UID) (why, refused string, err error)
	// Signal restarts asd in the pod in place, in the background task key, once the door lets it (a
	// WarmRestart whose attempt is prepared): why is the door's wait.
	Signal(ctx context.Context, pod *corev1.Pod, task tasks.Key) (why string, err error)
}

// Config tunes the executor.
type Config struct {
	// PodTimeout bounds the wait for one pod to come back, and for a missing target pod to exist.
	PodTimeout time.Duration
	// ClusterTimeout bounds the wait, between pods, for the cluster to be Running again.
	ClusterTimeout time.Duration
	// SettleDelay is how long after a restart attempt whose outcome is unknown the node's uptime is
	// read before the restart is tried again.
	SettleDelay time.Duration
}

// DefaultConfig is used for zero fields.
var DefaultConfig = Config{PodTimeout: 10 * time.Minute, ClusterTimeout: 10 * time.Minute, SettleDelay: 15 * time.Second}

func (c Config) withDefaults() Config {
	if c.PodTimeout <= 0 {
		c.PodTimeout = DefaultConfig.PodTimeout
	}
	if c.ClusterTimeout <= 0 {
		c.ClusterTimeout = DefaultConfig.ClusterTimeout
	}
	if c.SettleDelay <= 0 {
		c.SettleDelay = DefaultConfig.SettleDelay
	}
	return c
}

// minUptime: asd's uptime is in whole seconds and runs up to a second ahead, so a warm restart proves
// itself (a start more than a second later than the one read before the signal) only when asd had
// run at least this long.
const minUptime = 3 * time.Second

// Step is the decision of Plan.
type Step struct {
	Kind StepKind
	// Pod is the pod the step is about.
	Pod string
	// Targets of a StepStart, in order.
	Targets []string
	// Reason explains a wait, a rejection or a failure.
	Reason string
}

// Plan decides the next step of the cluster's operation.
func Plan(c *ackov1alpha1.AerospikeCluster, obs Observed, cfg Config) Step {
	cfg = cfg.withDefaults()
	if st := c.Status.OperationStatus; st != nil && st.Phase == ackov1alpha1.OperationInProgress {
		return planInProgress(c, st, obs, cfg)
	}
	op := PendingOperation(c)
	if op == nil {
		return Step{Kind: StepIdle}
	}
	if missing := notPods(c, op); len(missing) > 0 {
		return Step{Kind: StepReject, Targets: missing,
			Reason: fmt.Sprintf("podList names pods that are not pods of this cluster: %s", strings.Join(missing, ", "))}
	}
	if !obs.ClusterReady {
		return Step{Kind: StepWait, Reason: fmt.Sprintf("operation %s waits until the cluster is Running: %s", op.ID, obs.NotReady)}
	}
	if obs.RollingRestartPending {
		return Step{Kind: StepWait, Reason: fmt.Sprintf("operation %s waits for the rolling restart to finish", op.ID)}
	}
	return Step{Kind: StepStart, Targets: targets(c, op)}
}

// PendingOperation is the operation in the spec that has not run yet, or nil. An id that ended
// (Completed or Error) is used up, even if it stays in the spec or comes back later.
func PendingOperation(c *ackov1alpha1.AerospikeCluster) *ackov1alpha1.OperationSpec {
	if len(c.Spec.Operations) == 0 {
		return nil
	}
	op := &c.Spec.Operations[0]
	if slices.Contains(c.Status.FinishedOperations, op.ID) {
		return nil
	}
	if st := c.Status.OperationStatus; st != nil && st.ID == op.ID && st.Phase != ackov1alpha1.OperationInProgress {
		return nil
	}
	return op
}

// notPods lists the podList names the spec has no pod for (sorted).
func notPods(c *ackov1alpha1.AerospikeCluster, op *ackov1alpha1.OperationSpec) []string {
	var missing []string
	for _, name := range op.PodList {
		if !slices.Contains(c.DesiredPodNames(), name) {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing
}

// targets freezes the operation's pods (podList, or every pod the spec asks for) in rack, then
// ordinal order.
func targets(c *ackov1alpha1.AerospikeCluster, op *ackov1alpha1.OperationSpec) []string {
	names := slices.Clone(op.PodList)
	if len(names) == 0 {
		names = c.DesiredPodNames()
	}
	slices.SortStableFunc(names, func(a, b string) int { return c.ComparePods(a, b, false) })
	return names
}

func planInProgress(c *ackov1alpha1.AerospikeCluster, st *ackov1alpha1.OperationStatus, obs Observed, cfg Config) Step {
	// A scale-down or a rack removal made meanwhile waits for the operation, so the operation must not
	// wait for a pod that is leaving: the pod is not restarted (or not waited for), and that ends it.
	if pod := cmp.Or(st.CurrentPod, nextTarget(st)); pod != "" && !slices.Contains(c.DesiredPodNames(), pod) {
		return Step{Kind: StepPodFailed, Pod: pod,
			Reason: fmt.Sprintf("pod %s is no longer part of the cluster (spec.size or spec.rackConfig changed)", pod)}
	}
	if st.CurrentPod == "" {
		return planNext(st, obs, cfg)
	}
	if !st.CurrentPodSignalled {
		return planUnconfirmed(st, obs, cfg)
	}
	return planWaitBack(st, obs, cfg)
}

// planNext waits, with a deadline, until the next target pod exists and every node is up and stable,
// then begins it.
func planNext(st *ackov1alpha1.OperationStatus, obs Observed, cfg Config) Step {
	next := nextTarget(st)
	if next == "" {
		return Step{Kind: StepPodDone} // every target done; finishing is recorded by StepPodDone
	}
	var why string
	var limit time.Duration
	switch pod := obs.Pods[next]; {
	case pod == nil || pod.DeletionTimestamp != nil:
		// Being recreated (a drain, a crash): its StatefulSet brings it back.
		why, limit = fmt.Sprintf("pod %s does not exist (its StatefulSet recreates it)", next), cfg.PodTimeout
	case !obs.NodesUp:
		// e.g. after a pause, or another pod went down meanwhile: never take a second node away.
		why, limit = fmt.Sprintf("pod %s waits until every node is up and the cluster is stable: %s", next, obs.NodesDown),
			cfg.ClusterTimeout
	case st.Kind == ackov1alpha1.OperationWarmRestart && obs.HealthOK && obs.Health.Nodes[next].Err == nil &&
		obs.Health.Nodes[next].Facts.Uptime < minUptime:
		return Step{Kind: StepWait, Pod: next, Reason: fmt.Sprintf("pod %s: Aerospike started less than %s ago", next, minUptime)}
	default:
		return Step{Kind: StepBegin, Pod: next}
	}
	switch {
	case st.WaitingSince == nil:
		return Step{Kind: StepWaitSince, Pod: next, Reason: why}
	case obs.Now.Sub(st.WaitingSince.Time) > limit:
		return Step{Kind: StepPodFailed, Pod: next, Reason: fmt.Sprintf("waited %s: %s", limit, why)}
	}
	return Step{Kind: StepWait, Pod: next, Reason: why}
}

func nextTarget(st *ackov1alpha1.OperationStatus) string {
	for _, p := range st.TargetPods {
		if !slices.Contains(st.CompletedPods, p) && !slices.Contains(st.FailedPods, p) {
			return p
		}
	}
	return ""
}

// planUnconfirmed settles a restart that was recorded as begun but not as sent: it is about to be
// sent, or the operator stopped in between. It never restarts a pod whose restart may have happened.
func planUnconfirmed(st *ackov1alpha1.OperationStatus, obs Observed, cfg Config) Step {
	pod := obs.Pods[st.CurrentPod]
	if st.Kind == ackov1alpha1.OperationPodRestart {
		if pod == nil || string(pod.UID) != st.CurrentPodUID || pod.DeletionTimestamp != nil {
			return Step{Kind: StepConfirm, Pod: st.CurrentPod}
		}
	} else {
		// asd restarted since (its uptime says, or, when it does not answer, its container ended after the
		// attempt: a config it refuses): it loaded the copy made for the attempt, which the pod then records.
		if obs.Health.RestartedSince(st.CurrentPod, startedBefore(st)) || pod != nil && st.CurrentPodAttempted != nil &&
			string(pod.UID) == st.CurrentPodUID && resources.AerospikeExitedSince(pod, st.CurrentPodAttempted.Time) {
			return Step{Kind: StepConfirm, Pod: st.CurrentPod}
		}
		// An attempt began and its outcome is unknown: the uptime tells within SettleDelay.
		if st.CurrentPodAttempted != nil && obs.Now.Sub(st.CurrentPodAttempted.Time) < cfg.SettleDelay {
			return Step{Kind: StepWait, Pod: st.CurrentPod, Reason: "settling whether the restart signal went out"}
		}
	}
	return Step{Kind: StepAct, Pod: st.CurrentPod} // the executor bounds the act by PodTimeout, saying why
}

func planWaitBack(st *ackov1alpha1.OperationStatus, obs Observed, cfg Config) Step {
	if why := notBack(st, obs); why != "" {
		since := startTime(st)
		if dl := obs.loading(st.CurrentPod); dl != nil {
			why = dl.Message
			if dl.Progressed.After(since) {
				since = dl.Progressed.Time
			}
		}
		if obs.Now.Sub(since) > cfg.PodTimeout {
			return Step{Kind: StepPodFailed, Pod: st.CurrentPod,
				Reason: fmt.Sprintf("pod %s did not come back within %s: %s", st.CurrentPod, cfg.PodTimeout, why)}
		}
		return Step{Kind: StepWait, Pod: st.CurrentPod, Reason: why}
	}
	return Step{Kind: StepPodDone, Pod: st.CurrentPod}
}

// loading is the pod's cold start, nil when it has none (or the observer does not say).
func (obs Observed) loading(pod string) *ackov1alpha1.DataLoading {
	if obs.Loading == nil {
		return nil
	}
	return obs.Loading(pod)
}

// notBack says why the current pod does not count as completed yet ("" when it does): it must be
// Ready again, or kept from it by a sidecar alone (a new instance for PodRestart; its readiness gate says
// its node is a member of the cluster), its node must have restarted since the signal (WarmRestart), and every node
// must be up and the Aerospike cluster stable again.
func notBack(st *ackov1alpha1.OperationStatus, obs Observed) string {
	pod := obs.Pods[st.CurrentPod]
	switch {
	case pod == nil:
		return "pod is not recreated yet"
	case st.Kind == ackov1alpha1.OperationPodRestart && string(pod.UID) == st.CurrentPodUID:
		return "pod is not recreated yet"
	case !resources.PodReady(pod) && !resources.SidecarNotReady(pod):
		// A sidecar that is not ready is the spec's to fix (a rolling restart, which waits for this
		// operation); the node is back once it serves.
		return "pod is not Ready"
	case !obs.HealthOK:
		return "no Aerospike health reading yet"
	}
	if st.Kind == ackov1alpha1.OperationWarmRestart &&
		!obs.Health.RestartedSince(st.CurrentPod, startedBefore(st)) {
		return "Aerospike node has not restarted yet"
	}
	node, ok := obs.Health.Nodes[st.CurrentPod]
	if !ok || node.Err != nil || !node.ReadAt.After(resources.ReadySince(pod)) {
		return "Aerospike node has not answered since the pod became Ready"
	}
	if !obs.NodesUp {
		return "the nodes are not all up and stable yet: " + obs.NodesDown
	}
	return ""
}

func startedBefore(st *ackov1alpha1.OperationStatus) time.Time {
	if st.CurrentPodNodeStartedBefore == nil {
		return time.Time{}
	}
	return st.CurrentPodNodeStartedBefore.Time
}

func startTime(st *ackov1alpha1.OperationStatus) time.Time {
	if st.CurrentPodStartTime == nil {
		return time.Time{}
	}
	return st.CurrentPodStartTime.Time
}
