package operations

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/podexec"
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
	// Client deletes pods for PodRestart.
	Client    client.Client
	Signaller podexec.Signaller
	Status    StatusWriter
	Recorder  events.EventRecorder
	Config    Config
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

// Step plans and performs at most one step of the cluster's operation.
func (e *Executor) Step(ctx context.Context, c *ackov1alpha1.AerospikeCluster, obs Observed) (Result, error) {
	step := Plan(c, obs, e.Config)
	inProgress := c.Status.OperationStatus != nil && c.Status.OperationStatus.Phase == ackov1alpha1.OperationInProgress
	switch step.Kind {
	case StepIdle:
		return Result{}, nil
	case StepWait:
		return Result{Active: inProgress, Waiting: step.Reason}, nil
	case StepStart:
		return e.progress(ctx, c, e.start(c, step))
	case StepReject:
		return e.progress(ctx, c, e.reject(c, step))
	case StepBegin:
		return e.begin(ctx, c, step.Pod, obs)
	case StepAct:
		return e.act(ctx, c, obs.Pods[step.Pod], obs)
	case StepConfirm:
		return e.progress(ctx, c, e.confirm(c, step.Pod, obs))
	case StepPodDone:
		return e.progress(ctx, c, e.podDone(c, step.Pod))
	case StepPodFailed:
		return e.progress(ctx, c, e.podFailed(c, step.Pod, step.Reason))
	}
	return Result{}, fmt.Errorf("unknown operation step %d", step.Kind)
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
		announce: []func(){e.eventf(c, corev1.EventTypeNormal, ackov1alpha1.EventOperation, "Start",
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
			e.eventf(c, corev1.EventTypeWarning, ackov1alpha1.EventOperation, "Fail",
				"Operation %s Error before any pod was touched: %s", op.ID, step.Reason),
			countOperation(c, op.Kind, ackov1alpha1.OperationError),
		},
	}
}

// begin records the pod as current before touching it, then restarts it in the same pass.
func (e *Executor) begin(ctx context.Context, c *ackov1alpha1.AerospikeCluster, name string, obs Observed) (Result, error) {
	pod := obs.Pods[name]
	now := metav1.NewMicroTime(obs.Now)
	err := e.Status.WriteStatus(ctx, c, func(s *ackov1alpha1.AerospikeClusterStatus) {
		st := s.OperationStatus
		st.CurrentPod, st.CurrentPodUID, st.CurrentPodStartTime, st.CurrentPodSignalled = name, string(pod.UID), &now, false
	})
	if err != nil {
		return Result{Active: true}, err
	}
	return e.act(ctx, c, pod, obs)
}

// act restarts the current pod and records that it did. A pod whose PID 1 cannot restart asd in
// place fails the operation; a transient error (the API server, the exec stream) is returned.
func (e *Executor) act(ctx context.Context, c *ackov1alpha1.AerospikeCluster, pod *corev1.Pod, obs Observed) (Result, error) {
	st := c.Status.OperationStatus
	var err error
	if st.Kind == ackov1alpha1.OperationPodRestart {
		err = e.deletePod(ctx, pod, st.CurrentPodUID)
	} else {
		err = e.Signaller.WarmRestart(ctx, pod)
	}
	if errors.Is(err, podexec.ErrNotTini) {
		return e.progress(ctx, c, e.podFailed(c, pod.Name, err.Error()))
	}
	if err != nil {
		// Retried on the next reconcile; a signal that may have gone out (podexec.ErrSignalUnconfirmed)
		// is settled by the node's uptime before any second signal (planUnconfirmed).
		return Result{Active: true}, fmt.Errorf("restarting pod %s: %w", pod.Name, err)
	}
	return e.progress(ctx, c, e.confirm(c, pod.Name, obs))
}

// deletePod deletes the pod instance recorded in status; a pod already gone or replaced means
// the deletion happened.
func (e *Executor) deletePod(ctx context.Context, pod *corev1.Pod, uid string) error {
	u := types.UID(uid)
	err := e.Client.Delete(ctx, pod, client.Preconditions{UID: &u})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// confirm records that the current pod's restart went out.
func (e *Executor) confirm(c *ackov1alpha1.AerospikeCluster, name string, obs Observed) transition {
	st := c.Status.OperationStatus
	reason, eventReason := ackov1alpha1.RestartReasonWarmRestart, ackov1alpha1.EventPodWarmRestarted
	msg := "Sent SIGUSR1 to tini in pod %s (operation %s)"
	if st.Kind == ackov1alpha1.OperationPodRestart {
		reason, eventReason = ackov1alpha1.RestartReasonManualRestart, ackov1alpha1.EventPodColdRestarted
		msg = "Deleted pod %s to recreate it (operation %s)"
	}
	at := metav1.NewTime(obs.Now)
	if st.CurrentPodStartTime != nil {
		at = metav1.NewTime(st.CurrentPodStartTime.Time)
	}
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	return transition{
		mutate: func(s *ackov1alpha1.AerospikeClusterStatus) {
			s.OperationStatus.CurrentPodSignalled = true
			RecordRestart(s, name, reason, at)
		},
		announce: []func(){
			e.eventf(c, corev1.EventTypeNormal, eventReason, "Restart", msg, name, st.ID),
			func() { metrics.RecordRestart(key, reason) },
		},
	}
}

// RecordRestart sets status.pods[name]'s restart reason and time.
func RecordRestart(s *ackov1alpha1.AerospikeClusterStatus, name string, reason ackov1alpha1.RestartReason, at metav1.Time) {
	if s.Pods == nil {
		s.Pods = map[string]ackov1alpha1.PodStatus{}
	}
	p := s.Pods[name]
	p.LastRestartReason, p.LastRestartTime = reason, &at
	s.Pods[name] = p
}

func (e *Executor) podDone(c *ackov1alpha1.AerospikeCluster, name string) transition {
	st := c.Status.OperationStatus
	completed := st.CompletedPods
	var announce []func()
	if name != "" && !slices.Contains(completed, name) {
		completed = append(slices.Clone(completed), name)
		announce = append(announce, e.eventf(c, corev1.EventTypeNormal, ackov1alpha1.EventOperation, "Progress",
			"Operation %s: pod %s restarted and back (%d/%d)", st.ID, name, len(completed), len(st.TargetPods)))
	}
	finished := len(completed)+len(st.FailedPods) >= len(st.TargetPods)
	if finished {
		announce = append(announce, e.finished(c, ackov1alpha1.OperationCompleted, len(completed), len(st.FailedPods), "")...)
	}
	return transition{
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
	}
}

// podFailed ends the operation: the seed's Error phase means "one or more pods failed", and
// stopping at the first failure is the safe reading: no further pod is touched.
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
	return []func(){e.eventf(c, kind, ackov1alpha1.EventOperation, "Finish", "%s", msg), countOperation(c, st.Kind, phase)}
}

func countOperation(c *ackov1alpha1.AerospikeCluster, kind ackov1alpha1.OperationKind, phase ackov1alpha1.OperationPhase) func() {
	return func() { metrics.Operations.WithLabelValues(c.Namespace, c.Name, string(kind), string(phase)).Inc() }
}

func clearCurrent(op *ackov1alpha1.OperationStatus) {
	op.CurrentPod, op.CurrentPodUID, op.CurrentPodStartTime, op.CurrentPodSignalled = "", "", nil, false
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

// eventf returns a function that records the event, for announcing after a write.
func (e *Executor) eventf(c *ackov1alpha1.AerospikeCluster, kind, reason, action, format string, args ...any) func() {
	return func() {
		if e.Recorder != nil {
			e.Recorder.Eventf(c, nil, kind, reason, action, format, args...)
		}
	}
}
