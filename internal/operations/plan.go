// Package operations runs on-demand operations (WarmRestart, PodRestart): one pod at a time, each
// step recorded in status before it acts, so that an operator killed between any two API calls
// neither restarts a pod twice nor skips one.
//
// Plan is the pure state machine (status in, next step out); Executor performs one step.
package operations

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
)

// StepKind names what the executor does next.
type StepKind int

const (
	// StepIdle: no operation to run.
	StepIdle StepKind = iota
	// StepWait: an operation is pending or a pod is coming back; look again later.
	StepWait
	// StepStart: record a new operation with its frozen list of target pods.
	StepStart
	// StepReject: record a new operation as Error before touching any pod (e.g. a missing pod).
	StepReject
	// StepBegin: record the next pod as current, then restart it.
	StepBegin
	// StepAct: the current pod was recorded but its restart was never confirmed, and the evidence
	// says it did not happen: restart it.
	StepAct
	// StepConfirm: the current pod's restart happened (by UID or uptime) but was not recorded.
	StepConfirm
	// StepPodDone: the current pod is back; record it completed.
	StepPodDone
	// StepPodFailed: the current pod failed or timed out; the operation ends with Error.
	StepPodFailed
)

// Observed is what the reconciler knows of the cluster right now.
type Observed struct {
	// Pods of the cluster by name.
	Pods map[string]*corev1.Pod
	// Health is the prober's latest reading; HealthOK is false before the first one.
	Health   aerospike.ClusterHealth
	HealthOK bool
	// ClusterReady: every desired pod is Ready and the Aerospike cluster is stable. A new operation
	// starts only then.
	ClusterReady bool
	// RollingRestartPending: pods still run an outdated template. A new operation waits for the
	// rolling restart to finish; one already InProgress goes first.
	RollingRestartPending bool
	// Now is the time of the observation.
	Now time.Time
}

// Config tunes the executor.
type Config struct {
	// PodTimeout bounds the wait for one pod to come back.
	PodTimeout time.Duration
	// SettleDelay is how long after a warm restart began a node's uptime is trusted to tell
	// whether an unconfirmed signal went out.
	SettleDelay time.Duration
	// PollInterval is the requeue while waiting.
	PollInterval time.Duration
}

// DefaultConfig is used for zero fields.
var DefaultConfig = Config{PodTimeout: 10 * time.Minute, SettleDelay: 15 * time.Second, PollInterval: 2 * time.Second}

func (c Config) withDefaults() Config {
	if c.PodTimeout <= 0 {
		c.PodTimeout = DefaultConfig.PodTimeout
	}
	if c.SettleDelay <= 0 {
		c.SettleDelay = DefaultConfig.SettleDelay
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultConfig.PollInterval
	}
	return c
}

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
		return planInProgress(st, obs, cfg)
	}
	op := PendingOperation(c)
	if op == nil {
		return Step{Kind: StepIdle}
	}
	if !obs.ClusterReady {
		return Step{Kind: StepWait, Reason: fmt.Sprintf("operation %s waits until the cluster is Running", op.ID)}
	}
	if obs.RollingRestartPending {
		return Step{Kind: StepWait, Reason: fmt.Sprintf("operation %s waits for the rolling restart to finish", op.ID)}
	}
	targets, missing := resolveTargets(c, op, obs.Pods)
	if len(missing) > 0 {
		return Step{Kind: StepReject, Targets: missing,
			Reason: fmt.Sprintf("podList names pods that are not pods of this cluster: %s", strings.Join(missing, ", "))}
	}
	return Step{Kind: StepStart, Targets: targets}
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

// resolveTargets freezes the operation's pods in rack, then ordinal order.
func resolveTargets(c *ackov1alpha1.AerospikeCluster, op *ackov1alpha1.OperationSpec,
	pods map[string]*corev1.Pod) (targets, missing []string) {
	names := op.PodList
	if len(names) == 0 {
		for name := range pods {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if _, ok := pods[name]; !ok {
			missing = append(missing, name)
			continue
		}
		targets = append(targets, name)
	}
	sortPods(c, targets)
	sort.Strings(missing)
	return targets, missing
}

func sortPods(c *ackov1alpha1.AerospikeCluster, names []string) {
	sort.SliceStable(names, func(i, j int) bool {
		ri, oi, _ := c.ParsePodName(names[i])
		rj, oj, _ := c.ParsePodName(names[j])
		if ri != rj {
			return ri < rj
		}
		if oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
}

func planInProgress(st *ackov1alpha1.OperationStatus, obs Observed, cfg Config) Step {
	if st.CurrentPod == "" {
		next := nextTarget(st)
		if next == "" {
			return Step{Kind: StepPodDone} // every target done; finishing is recorded by StepPodDone
		}
		if _, ok := obs.Pods[next]; !ok {
			return Step{Kind: StepPodFailed, Pod: next, Reason: fmt.Sprintf("pod %s no longer exists", next)}
		}
		if !obs.ClusterReady {
			// e.g. after a pause, or another pod went down meanwhile: never take a second node away.
			return Step{Kind: StepWait, Pod: next, Reason: fmt.Sprintf("pod %s waits until the cluster is Running", next)}
		}
		if st.Kind == ackov1alpha1.OperationWarmRestart && asdJustStarted(obs, next) {
			return Step{Kind: StepWait, Pod: next, Reason: fmt.Sprintf("pod %s: Aerospike started less than a second ago", next)}
		}
		return Step{Kind: StepBegin, Pod: next}
	}
	if !st.CurrentPodSignalled {
		return planUnconfirmed(st, obs, cfg)
	}
	return planWaitBack(st, obs, cfg)
}

// asdJustStarted: by its latest reading, the node's asd started less than a second ago. asd reports
// its uptime in whole seconds, so such a start cannot be told from one caused by a signal sent now:
// an operator that stopped between recording the restart and sending the signal would leave its
// successor counting the pod as restarted without restarting it (planUnconfirmed). Waiting that
// second out before the restart is recorded keeps the uptime evidence sound. Without a reading
// there is nothing to wait for.
func asdJustStarted(obs Observed, pod string) bool {
	node, ok := obs.Health.Nodes[pod]
	if !obs.HealthOK || !ok || node.Err != nil {
		return false
	}
	return node.ReadAt.Add(-node.Facts.Uptime).After(obs.Now.Add(-time.Second))
}

func nextTarget(st *ackov1alpha1.OperationStatus) string {
	for _, p := range st.TargetPods {
		if !slices.Contains(st.CompletedPods, p) && !slices.Contains(st.FailedPods, p) {
			return p
		}
	}
	return ""
}

// planUnconfirmed settles a restart that was recorded as begun but not as sent: the operator
// stopped between the two. It never restarts a pod whose restart may have happened.
func planUnconfirmed(st *ackov1alpha1.OperationStatus, obs Observed, cfg Config) Step {
	pod := obs.Pods[st.CurrentPod]
	if st.Kind == ackov1alpha1.OperationPodRestart {
		if pod == nil || string(pod.UID) != st.CurrentPodUID || pod.DeletionTimestamp != nil {
			return Step{Kind: StepConfirm, Pod: st.CurrentPod}
		}
		return Step{Kind: StepAct, Pod: st.CurrentPod}
	}
	began := startTime(st)
	switch restartedSince(obs, st.CurrentPod, began) {
	case evidenceRestarted:
		return Step{Kind: StepConfirm, Pod: st.CurrentPod}
	case evidenceNotRestarted:
		if node := obs.Health.Nodes[st.CurrentPod]; node.ReadAt.Sub(began) >= cfg.SettleDelay {
			return Step{Kind: StepAct, Pod: st.CurrentPod}
		}
	}
	if obs.Now.Sub(began) > cfg.PodTimeout {
		return Step{Kind: StepPodFailed, Pod: st.CurrentPod,
			Reason: fmt.Sprintf("could not tell whether pod %s restarted within %s", st.CurrentPod, cfg.PodTimeout)}
	}
	return Step{Kind: StepWait, Pod: st.CurrentPod, Reason: "settling whether the restart signal went out"}
}

func planWaitBack(st *ackov1alpha1.OperationStatus, obs Observed, cfg Config) Step {
	if why := notBack(st, obs); why != "" {
		if obs.Now.Sub(startTime(st)) > cfg.PodTimeout {
			return Step{Kind: StepPodFailed, Pod: st.CurrentPod,
				Reason: fmt.Sprintf("pod %s did not come back within %s: %s", st.CurrentPod, cfg.PodTimeout, why)}
		}
		return Step{Kind: StepWait, Pod: st.CurrentPod, Reason: why}
	}
	return Step{Kind: StepPodDone, Pod: st.CurrentPod}
}

// notBack says why the current pod does not count as completed yet ("" when it does): it must be
// Ready again (a new instance for PodRestart), its node must answer with an uptime that proves the
// restart (WarmRestart), and the Aerospike cluster must be stable again.
func notBack(st *ackov1alpha1.OperationStatus, obs Observed) string {
	pod := obs.Pods[st.CurrentPod]
	switch {
	case pod == nil:
		return "pod is not recreated yet"
	case st.Kind == ackov1alpha1.OperationPodRestart && string(pod.UID) == st.CurrentPodUID:
		return "pod is not recreated yet"
	case !PodReady(pod):
		return "pod is not Ready"
	}
	if st.Kind == ackov1alpha1.OperationWarmRestart && restartedSince(obs, st.CurrentPod, startTime(st)) != evidenceRestarted {
		return "Aerospike node has not restarted yet"
	}
	if !obs.HealthOK {
		return "no Aerospike health reading yet"
	}
	node, ok := obs.Health.Nodes[st.CurrentPod]
	if !ok || node.Err != nil || !node.ReadAt.After(readySince(pod)) {
		return "Aerospike node has not answered since the pod became Ready"
	}
	if stable, why := obs.Health.Stable(); !stable {
		return "Aerospike cluster is not stable: " + why
	}
	return ""
}

type evidence int

const (
	evidenceNone evidence = iota
	evidenceRestarted
	evidenceNotRestarted
)

// restartedSince reads the node's uptime: asd restarted after t when its uptime is shorter than
// the time between t and the reading.
func restartedSince(obs Observed, pod string, t time.Time) evidence {
	node, ok := obs.Health.Nodes[pod]
	if !obs.HealthOK || !ok || node.Err != nil || !node.ReadAt.After(t) {
		return evidenceNone
	}
	if node.Facts.Uptime < node.ReadAt.Sub(t) {
		return evidenceRestarted
	}
	return evidenceNotRestarted
}

func startTime(st *ackov1alpha1.OperationStatus) time.Time {
	if st.CurrentPodStartTime == nil {
		return time.Time{}
	}
	return st.CurrentPodStartTime.Time
}

// PodReady reports the pod's Ready condition.
func PodReady(pod *corev1.Pod) bool {
	if pod == nil || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readySince is when the pod last became Ready (zero if unknown).
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
