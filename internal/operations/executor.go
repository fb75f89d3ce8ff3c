package operations

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/tasks"
)

// StatusWriter records a status transition with optimistic locking: it writes the cluster's status
// as mutated, at the cluster's resourceVersion, and updates the cluster in place. A conflict means
// the step was decided on stale data; the caller looks again instead of retrying blindly.
type StatusWriter interface {
	WriteStatus(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster,
		mutate func(*ackov1alpha1.AerospikeClusterStatus)) error
}

// Executor performs the steps Plan decides.
type Executor struct {
	// Client records the config a warm-restarted pod runs.
	Client client.Client
	// Signaller prepares a warm restart (the config copied into place); the actuator signals it.
	Signaller podexec.Signaller
	// Tasks runs the warm restart (exec into the pod) outside Reconcile.
	Tasks    *tasks.Runner
	Status   StatusWriter
	Recorder events.EventRecorder
	Config   Config

	// prepared is the WarmRestart attempt, per cluster, whose pod a background task prepared (its config
	// copied into place, PID 1 checked): its signal goes through the door again, after a last look, and
	// out in one exec. In memory: an operator that restarts settles the attempt and prepares again.
	prepared sync.Map // types.NamespacedName → preparedAttempt
}

type preparedAttempt struct {
	id, pod string
	attempt time.Time
	ready   bool // the preparation ended well
	// uid and recorded are the pod instance prepared and the config it recorded when its copy was made:
	// a pod recreated since has the ConfigMap's file of then, and a live change recorded since copied its
	// own file over the prepared one, so the signal needs a new copy.
	uid, recorded string
}

// SameAttempt: a recorded attempt is the one made at at (a recorded time is whole microseconds).
func SameAttempt(recorded *metav1.MicroTime, at time.Time) bool {
	return recorded != nil && recorded.Sub(at).Abs() < time.Microsecond
}

// isPrepared: the current pod's recorded attempt is the one prepared, so its signal certainly did not
// go out yet (it need not settle).
func (e *Executor) isPrepared(c *ackov1alpha1.AerospikeCluster) bool {
	v, ok := e.prepared.Load(clusterKey(c))
	p, _ := v.(preparedAttempt)
	st := c.Status.OperationStatus
	return ok && p.ready && st != nil && p.id == st.ID && p.pod == st.CurrentPod && !st.CurrentPodSignalled &&
		SameAttempt(st.CurrentPodAttempted, p.attempt)
}

// preparedFor: the prepared copy is still the pod's own file: the same pod instance records the config
// it recorded when the copy was made. Otherwise the attempt is prepared again.
func (e *Executor) preparedFor(c *ackov1alpha1.AerospikeCluster, pod *corev1.Pod) bool {
	v, _ := e.prepared.Load(clusterKey(c))
	p := v.(preparedAttempt)
	return p.uid == string(pod.UID) && p.recorded == pod.Annotations[ackov1alpha1.AnnotationConfigHash]
}

// Result tells the reconciler what the executor did.
type Result struct {
	// Active: an operation is InProgress (the rolling restart waits, the prober polls faster).
	Active bool
	// Progressed: the executor wrote status; call it again to take the next step.
	Progressed bool
	// Waiting explains why the operation cannot progress now ("" when it is not waiting).
	Waiting string
}

// taskName names the background signal of the operation's current pod's warm restart.
func taskName(st *ackov1alpha1.OperationStatus) string {
	return "operation/" + st.ID + "/" + st.CurrentPod
}

// prepareName names the background preparation of the operation's current pod's warm restart.
func prepareName(st *ackov1alpha1.OperationStatus) string { return "prepare/" + taskName(st) }

// Step plans and performs at most one step of the cluster's operation.
func (e *Executor) Step(ctx context.Context, c *ackov1alpha1.AerospikeCluster, obs Observed) (Result, error) {
	st := c.Status.OperationStatus
	inProgress := st != nil && st.Phase == ackov1alpha1.OperationInProgress
	if inProgress && st.CurrentPod != "" && !st.CurrentPodSignalled {
		if res, done, err := e.background(ctx, c, obs); done {
			return res, err
		}
	}
	if inProgress && st.CurrentPodSignalled && st.CurrentPodConfigHash != "" {
		return e.recordCopiedConfig(ctx, c, obs.Pods[st.CurrentPod])
	}
	step := e.plan(c, obs)
	switch step.Kind {
	case StepIdle:
		return Result{}, nil
	case StepWait:
		return Result{Active: inProgress, Waiting: step.Reason}, nil
	case StepAct:
		return e.act(ctx, c, obs.Pods[step.Pod], obs)
	case StepPodDone:
		return e.podDone(ctx, c, step.Pod)
	}
	t, err := e.transitionFor(c, step, obs)
	if err != nil {
		return Result{}, err
	}
	return e.progress(ctx, c, t)
}

// plan is Plan's step, but for a prepared attempt: its signal certainly did not go out, so it does not
// settle but goes to the door at once.
func (e *Executor) plan(c *ackov1alpha1.AerospikeCluster, obs Observed) Step {
	step := Plan(c, obs, e.Config)
	if st := c.Status.OperationStatus; step.Kind == StepWait && st != nil && st.Phase == ackov1alpha1.OperationInProgress &&
		e.isPrepared(c) {
		return Step{Kind: StepAct, Pod: st.CurrentPod}
	}
	return step
}

// transitionFor is the status change of a step that only records.
func (e *Executor) transitionFor(c *ackov1alpha1.AerospikeCluster, step Step, obs Observed) (transition, error) {
	switch step.Kind {
	case StepWaitSince:
		return e.waitSince(obs), nil
	case StepStart:
		return e.start(c, step), nil
	case StepReject:
		return e.reject(c, step), nil
	case StepBegin:
		return e.begin(obs.Pods[step.Pod], obs), nil
	case StepConfirm:
		return e.confirm(c, step.Pod, obs), nil
	case StepPodFailed:
		return e.podFailed(c, step.Pod, step.Reason), nil
	}
	return transition{}, fmt.Errorf("unknown operation step %d", step.Kind)
}

// background follows the current pod's warm restart in the background: its result when it ended
// (taken once), or a wait while it runs. done is false when there is nothing in the background.
func (e *Executor) background(ctx context.Context, c *ackov1alpha1.AerospikeCluster, obs Observed) (Result, bool, error) {
	name, key := taskName(c.Status.OperationStatus), clusterKey(c)
	if res, ok := obs.Results[prepareName(c.Status.OperationStatus)]; ok {
		delete(obs.Results, prepareName(c.Status.OperationStatus))
		if res.Err == nil {
			if v, known := e.prepared.Load(key); known {
				p := v.(preparedAttempt)
				p.ready = true
				e.prepared.Store(key, p)
			}
			return Result{}, false, nil // on to the signal, through the door
		}
		e.prepared.Delete(key)
		r, err := e.warmRestartResult(ctx, c, obs, res)
		return r, true, err
	}
	if res, ok := obs.Results[name]; ok {
		delete(obs.Results, name)
		r, err := e.warmRestartResult(ctx, c, obs, res)
		return r, true, err
	}
	if key, busy := e.Tasks.Busy(clusterKey(c)); busy {
		return Result{Active: true, Waiting: "waiting for " + key.Name}, true, nil
	}
	return Result{}, false, nil
}

func clusterKey(c *ackov1alpha1.AerospikeCluster) types.NamespacedName {
	return types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
}

// transition is one recorded step: the status change, and what to announce once it is written
// (events and metrics count transitions that happened, not attempts).
type transition struct {
	mutate   func(*ackov1alpha1.AerospikeClusterStatus)
	announce []func()
}

func (e *Executor) progress(ctx context.Context, c *ackov1alpha1.AerospikeCluster, t transition) (Result, error) {
	if err := e.Status.WriteStatus(ctx, c, t.mutate); err != nil {
		return Result{Active: true}, err
	}
	for _, a := range t.announce {
		a()
	}
	st := c.Status.OperationStatus
	return Result{Active: st != nil && st.Phase == ackov1alpha1.OperationInProgress, Progressed: true}, nil
}

func (e *Executor) start(c *ackov1alpha1.AerospikeCluster, step Step) transition {
	op := c.Spec.Operations[0]
	return transition{
		mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
			s.OperationStatus = &ackov1alpha1.OperationStatus{
				ID: op.ID, Kind: op.Kind, Phase: ackov1alpha1.OperationInProgress,
				CompletedPods: []string{}, FailedPods: []string{}, TargetPods: step.Targets,
			}
		},
		announce: []func(){e.eventf(c, nil, corev1.EventTypeNormal, ackov1alpha1.EventOperation, "Start",
			"Started %s operation %s on %d pods: %v", op.Kind, op.ID, len(step.Targets), step.Targets)},
	}
}

func (e *Executor) reject(c *ackov1alpha1.AerospikeCluster, step Step) transition {
	op := c.Spec.Operations[0]
	return transition{
		mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
			s.OperationStatus = &ackov1alpha1.OperationStatus{
				ID: op.ID, Kind: op.Kind, Phase: ackov1alpha1.OperationError,
				CompletedPods: []string{}, FailedPods: step.Targets, Message: step.Reason,
			}
			s.FinishedOperations = rememberFinished(s.FinishedOperations, op.ID)
		},
		announce: []func(){
			e.eventf(c, nil, corev1.EventTypeWarning, ackov1alpha1.EventOperation, "Fail",
				"Operation %s Error before any pod was touched: %s", op.ID, step.Reason),
			countOperation(c, op.Kind, ackov1alpha1.OperationError),
		},
	}
}

// waitSince records when the wait between pods began: its deadline counts from there.
func (e *Executor) waitSince(obs Observed) transition {
	since := metav1.NewTime(obs.Now)
	return transition{mutate: func(s *ackov1alpha1.AerospikeClusterStatus) { s.OperationStatus.WaitingSince = &since }}
}

// begin records the pod as current before touching it. From the next reconcile its readiness gate is
// held (a WarmRestart), so that the disruption budget counts it before it goes down.
func (e *Executor) begin(pod *corev1.Pod, obs Observed) transition {
	now := metav1.NewMicroTime(obs.Now)
	return transition{mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
		st := s.OperationStatus
		clearCurrent(st)
		st.CurrentPod, st.CurrentPodUID, st.CurrentPodStartTime = pod.Name, string(pod.UID), &now
	}}
}

// act restarts the current pod through the cluster's actuator, which alone takes it down after its
// door: a PodRestart evicts it (the PodDisruptionBudget arbitrates; a refusal is a wait, up to the pod
// timeout), a WarmRestart records the node's start time and the attempt, prepares it in the background,
// and has the actuator signal it once prepared.
func (e *Executor) act(ctx context.Context, c *ackov1alpha1.AerospikeCluster, pod *corev1.Pod, obs Observed) (Result, error) {
	st := c.Status.OperationStatus
	warm := st.Kind == ackov1alpha1.OperationWarmRestart
	if pod == nil {
		return Result{Active: true, Waiting: fmt.Sprintf("pod %s does not exist", st.CurrentPod)}, nil
	}
	if warm && obs.Health.NodeStarted(pod.Name).IsZero() {
		// Only a start time read before the signal tells later that asd restarted: without one the
		// restart could never be confirmed, and its readiness gate would stay held.
		return e.waitOrFail(ctx, c, obs, fmt.Sprintf("pod %s's Aerospike node does not answer", pod.Name))
	}
	if !warm {
		why, refused, err := obs.Actuator.Evict(ctx, pod, types.UID(st.CurrentPodUID))
		switch {
		case err != nil:
			return Result{Active: true}, err
		case why != "":
			return e.waitOrFail(ctx, c, obs, why)
		case refused != "":
			return e.refused(ctx, c, obs, refused)
		}
		return e.progress(ctx, c, e.confirm(c, pod.Name, obs))
	}
	if e.isPrepared(c) && e.preparedFor(c, pod) {
		why, err := obs.Actuator.Signal(ctx, pod, tasks.Key{Cluster: clusterKey(c), Name: taskName(st)})
		if err != nil || why != "" {
			return e.doorSays(ctx, c, obs, why, err)
		}
		e.prepared.Delete(clusterKey(c))
		return Result{Active: true, Waiting: fmt.Sprintf("restarting pod %s in place", pod.Name)}, nil
	}
	if why, err := obs.Actuator.MayTakeDown(ctx, pod.Name, true); err != nil || why != "" {
		return e.doorSays(ctx, c, obs, why, err)
	}
	started, attempt := metav1.NewMicroTime(obs.Health.NodeStarted(pod.Name)), metav1.NewMicroTime(obs.Now)
	hash := obs.ConfigHash(pod.Name)
	if err := e.Status.WriteStatus(ctx, c, func(s *ackov1alpha1.AerospikeClusterStatus) {
		op := s.OperationStatus
		op.CurrentPodNodeStartedBefore, op.CurrentPodAttempted, op.CurrentPodConfigHash = &started, &attempt, hash
		// The attempt is on the pod as it is now: one recreated since the operation chose it (a drain)
		// records what this attempt copies into it (model seed 66859).
		op.CurrentPodUID = string(pod.UID)
	}); err != nil {
		return Result{Active: true}, err
	}
	e.prepared.Store(clusterKey(c), preparedAttempt{id: st.ID, pod: pod.Name, attempt: attempt.Time,
		uid: string(pod.UID), recorded: pod.Annotations[ackov1alpha1.AnnotationConfigHash]})
	e.Tasks.Run(tasks.Key{Cluster: clusterKey(c), Name: prepareName(st)}, func(ctx context.Context) (string, error) {
		return "", e.Signaller.PrepareRestart(ctx, pod, hash)
	})
	return Result{Active: true, Waiting: fmt.Sprintf("preparing the restart of pod %s in place", pod.Name)}, nil
}

// doorSays is the operation's answer when the actuator's door does not let its pod go now: a wait, up
// to the pod timeout, or the reconcile's error.
func (e *Executor) doorSays(ctx context.Context, c *ackov1alpha1.AerospikeCluster, obs Observed, why string,
	err error) (Result, error) {
	if err != nil {
		return Result{Active: true}, err
	}
	return e.waitOrFail(ctx, c, obs, why)
}

// warmRestartResult takes the outcome of the background warm restart. A pod whose PID 1 cannot
// restart asd in place fails the operation; a config the kubelet has not projected yet is a wait; any
// other failure is tried again once the node's uptime has settled whether the signal went out.
func (e *Executor) warmRestartResult(ctx context.Context, c *ackov1alpha1.AerospikeCluster, obs Observed,
	res tasks.Result) (Result, error) {
	st := c.Status.OperationStatus
	switch {
	case res.Err == nil:
		return e.progress(ctx, c, e.confirm(c, st.CurrentPod, obs))
	case errors.Is(res.Err, podexec.ErrNotTini):
		return e.progress(ctx, c, e.podFailed(c, st.CurrentPod, res.Err.Error()))
	case errors.Is(res.Err, podexec.ErrNotProjected):
		// Nothing was copied or signalled: the next attempt need not wait for the uptime.
		return e.progress(ctx, c, transition{mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
			s.OperationStatus.CurrentPodAttempted = nil
		}})
	}
	return e.waitOrFail(ctx, c, obs, fmt.Sprintf("restarting pod %s failed, trying again: %v", st.CurrentPod, res.Err))
}

// refused records a refusal of the current pod's eviction: when the first came (a refusal that lasts
// the progress deadline stalls the cluster, RolloutStuck; see RefusedSince) and what the last said, so
// that an operation that runs out of time names it even between two attempts. Then it waits like the
// checks: a refusal has the pod's deadline too.
func (e *Executor) refused(ctx context.Context, c *ackov1alpha1.AerospikeCluster, obs Observed, why string) (Result, error) {
	st := c.Status.OperationStatus
	if st.CurrentPodAttempted == nil || st.Message != why {
		first := st.CurrentPodAttempted
		if first == nil {
			first = ptr.To(metav1.NewMicroTime(obs.Now))
		}
		if err := e.Status.WriteStatus(ctx, c, func(s *ackov1alpha1.AerospikeClusterStatus) {
			s.OperationStatus.CurrentPodAttempted, s.OperationStatus.Message = first, why
		}); err != nil {
			return Result{Active: true}, err
		}
	}
	return e.waitOrFail(ctx, c, obs, why)
}

// RefusedSince is when the eviction of the operation's current pod was first refused (zero when it
// was not, or went out since).
func RefusedSince(st *ackov1alpha1.OperationStatus) time.Time {
	if st == nil || st.Phase != ackov1alpha1.OperationInProgress || st.Kind != ackov1alpha1.OperationPodRestart ||
		st.CurrentPodSignalled || st.CurrentPodAttempted == nil {
		return time.Time{}
	}
	return st.CurrentPodAttempted.Time
}

// waitOrFail waits for the current pod's restart to become possible, up to PodTimeout from its begin;
// past it, the operation ends in Error saying what it waited for: the refusal of its eviction, if one
// came, rather than the wait for fresh readings between two attempts.
func (e *Executor) waitOrFail(ctx context.Context, c *ackov1alpha1.AerospikeCluster, obs Observed, why string) (Result, error) {
	st := c.Status.OperationStatus
	if limit := e.Config.withDefaults().PodTimeout; obs.Now.Sub(startTime(st)) > limit {
		if !RefusedSince(st).IsZero() {
			why = st.Message
		}
		return e.progress(ctx, c, e.podFailed(c, st.CurrentPod, fmt.Sprintf("could not be restarted within %s: %s", limit, why)))
	}
	return Result{Active: true, Waiting: why}, nil
}

// confirm records that the current pod's restart went out.
func (e *Executor) confirm(c *ackov1alpha1.AerospikeCluster, name string, obs Observed) transition {
	st := c.Status.OperationStatus
	reason, eventReason := ackov1alpha1.RestartReasonWarmRestart, ackov1alpha1.EventPodWarmRestarted
	msg := "Sent SIGUSR1 to tini in pod %s (operation %s)"
	if st.Kind == ackov1alpha1.OperationPodRestart {
		reason, eventReason = ackov1alpha1.RestartReasonManualRestart, ackov1alpha1.EventPodColdRestarted
		msg = "Evicted pod %s to recreate it (operation %s)"
	}
	at := metav1.NewTime(obs.Now)
	key := clusterKey(c)
	return transition{
		mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
			s.OperationStatus.CurrentPodSignalled = true
			s.OperationStatus.Message = "" // a refusal before it is over
			setLastRestart(s, name, reason, at)
		},
		announce: []func(){
			e.eventf(c, obs.Pods[name], corev1.EventTypeNormal, eventReason, "Restart", msg, name, st.ID),
			func() { metrics.RecordRestart(key, reason) },
		},
	}
}

// setLastRestart sets status.pods[name]'s restart reason and time.
func setLastRestart(s *ackov1alpha1.AerospikeClusterStatus, name string, reason ackov1alpha1.RestartReason, at metav1.Time) {
	if s.Pods == nil {
		s.Pods = map[string]ackov1alpha1.PodStatus{}
	}
	p := s.Pods[name]
	p.LastRestartReason, p.LastRestartTime = reason, &at
	s.Pods[name] = p
}

// podDone records the current pod completed (and the operation finished after its last pod). A
// warm-restarted pod recorded the config it loaded once signalled (recordCopiedConfig), which counts as
// its turn in a rolling restart.
func (e *Executor) podDone(ctx context.Context, c *ackov1alpha1.AerospikeCluster, name string) (Result, error) {
	st := c.Status.OperationStatus
	completed := st.CompletedPods
	var announce []func()
	if name != "" && !slices.Contains(completed, name) {
		completed = append(slices.Clone(completed), name)
		announce = append(announce, e.eventf(c, nil, corev1.EventTypeNormal, ackov1alpha1.EventOperation, "Progress",
			"Operation %s: pod %s restarted and back (%d/%d)", st.ID, name, len(completed), len(st.TargetPods)))
	}
	finished := len(completed)+len(st.FailedPods) >= len(st.TargetPods)
	if finished {
		announce = append(announce, e.finished(c, ackov1alpha1.OperationCompleted, len(completed), len(st.FailedPods), "")...)
	}
	return e.progress(ctx, c, transition{
		mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
			op := s.OperationStatus
			op.CompletedPods = completed
			clearCurrent(op)
			if finished {
				op.Phase = ackov1alpha1.OperationCompleted
				s.FinishedOperations = rememberFinished(s.FinishedOperations, op.ID)
			}
		},
		announce: announce,
	})
}

// recordCopiedConfig: once a WarmRestart's signal went out, the pod's own copy of the config is the one
// copied for it, which asd loads at this start and at every later one, whether it takes it or refuses it.
// The pod records it at once, so that a spec reverted meanwhile finds the pod outdated (and replaces it
// when asd refuses the file) rather than up to date with a file it does not run. A recreated pod got its
// copy from the ConfigMap, as its annotation says already. It is recorded once: the status then forgets
// the hash, so that a live change the pod records later (which copies its own file too) is never
// overwritten by this older one (model seed 69975: a replication-factor set live after the restart, the
// spec back at the old one, and the pod recorded the restart's config while its node ran the live factor).
// The rolling restart applies no live change to the pod meanwhile (operationRecording).
func (e *Executor) recordCopiedConfig(ctx context.Context, c *ackov1alpha1.AerospikeCluster, pod *corev1.Pod) (Result, error) {
	st := c.Status.OperationStatus
	if st.Kind == ackov1alpha1.OperationWarmRestart && pod != nil && string(pod.UID) == st.CurrentPodUID {
		if err := pods.RecordConfig(ctx, e.Client, pod, st.CurrentPodConfigHash); err != nil {
			return Result{Active: true}, err
		}
	}
	return e.progress(ctx, c, transition{mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
		s.OperationStatus.CurrentPodConfigHash = ""
	}})
}

// podFailed ends the operation: the seed's Error phase means "one or more pods failed", and
// stopping at the first failure is the safe reading: no further pod is touched. Ending it releases
// the lock on spec.operations.
func (e *Executor) podFailed(c *ackov1alpha1.AerospikeCluster, name, reason string) transition {
	st := c.Status.OperationStatus
	failed := append(slices.Clone(st.FailedPods), name)
	return transition{
		mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
			op := s.OperationStatus
			op.FailedPods = failed
			op.Phase = ackov1alpha1.OperationError
			op.Message = fmt.Sprintf("pod %s failed: %s; no further pod was touched", name, reason)
			clearCurrent(op)
			s.FinishedOperations = rememberFinished(s.FinishedOperations, op.ID)
		},
		announce: e.finished(c, ackov1alpha1.OperationError, len(st.CompletedPods), len(failed), reason),
	}
}

func (e *Executor) finished(c *ackov1alpha1.AerospikeCluster, phase ackov1alpha1.OperationPhase,
	done, failed int, why string) []func() {
	st := c.Status.OperationStatus
	kind, msg := corev1.EventTypeNormal, fmt.Sprintf("Operation %s %s: %d pods completed, %d failed", st.ID, phase, done, failed)
	if phase == ackov1alpha1.OperationError {
		kind, msg = corev1.EventTypeWarning, msg+"; stopped: "+why
	}
	return []func(){e.eventf(c, nil, kind, ackov1alpha1.EventOperation, "Finish", "%s", msg), countOperation(c, st.Kind, phase)}
}

func countOperation(c *ackov1alpha1.AerospikeCluster, kind ackov1alpha1.OperationKind, phase ackov1alpha1.OperationPhase) func() {
	return func() { metrics.Operations.WithLabelValues(c.Namespace, c.Name, string(kind), string(phase)).Inc() }
}

func clearCurrent(op *ackov1alpha1.OperationStatus) {
	op.CurrentPod, op.CurrentPodUID, op.CurrentPodStartTime, op.CurrentPodSignalled = "", "", nil, false
	op.CurrentPodNodeStartedBefore, op.CurrentPodAttempted, op.CurrentPodConfigHash, op.WaitingSince = nil, nil, "", nil
}

// rememberFinished keeps the last FinishedOperationHistory ids that ended.
func rememberFinished(ids []string, id string) []string {
	if slices.Contains(ids, id) {
		return ids
	}
	ids = append(slices.Clone(ids), id)
	if extra := len(ids) - ackov1alpha1.FinishedOperationHistory; extra > 0 {
		ids = ids[extra:]
	}
	return ids
}

// eventf returns a function that records the event, for announcing after a write. related (a pod)
// keeps the events of one reason apart.
func (e *Executor) eventf(c *ackov1alpha1.AerospikeCluster, related *corev1.Pod, kind, reason, action, format string,
	args ...any) func() {
	return func() {
		if e.Recorder == nil {
			return
		}
		var rel runtime.Object
		if related != nil {
			rel = related
		}
		e.Recorder.Eventf(c, rel, kind, reason, action, format, args...)
	}
}
