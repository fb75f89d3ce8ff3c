package localcluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/acko-io/acko/test/aerosim"
)

// Pod status as a kubelet writes it, for what kwok's stages do not do: the Aerospike container
// crash-loops while the simulator's asd refuses its config (and runs again once it starts), and a
// pod is Ready only when its containers are and every readiness gate's condition is True. The
// reasons and messages are the kubelet's (pkg/kubelet/status/generate.go).

// Reasons the kubelet gives.
const (
	reasonCrashLoop          = "CrashLoopBackOff"
	reasonContainersNotReady = "ContainersNotReady"
	reasonGatesNotReady      = "ReadinessGatesNotReady"
	reasonPodInitializing    = "PodInitializing"
	reasonNotInitialized     = "ContainersNotInitialized"
	reasonCompleted          = "Completed"
	reasonError              = "Error"
)

// The kubelet's back-off before it runs a failed container again: 10 s, doubling, at most 5 minutes.
const (
	initBackoffFirst = 10 * time.Second
	initBackoffMax   = 5 * time.Minute
)

// initFailure is an init container of a pod that exited with an error: the kubelet starts none of
// the pod's containers and runs it again after its back-off.
type initFailure struct {
	uid       types.UID
	container string
	running   bool      // it has not exited: it waits (prepare-volumes, for its plan)
	output    string    // what the command printed
	failures  int       // consecutive failed runs
	at        time.Time // of the last one
	retry     time.Time // when it runs again
}

// initBackoff is the kubelet's back-off after the nth consecutive failure of a container.
func initBackoff(failures int) time.Duration {
	d := initBackoffFirst
	for i := 1; i < failures && d < initBackoffMax; i++ {
		d *= 2
	}
	return min(d, initBackoffMax)
}

// desiredStatus is the pod's status with the node's state (or its failing init container)
// reflected and Ready computed; changed is false when the pod has it already. node is nil for a pod
// without a simulated node, init nil unless an init container is failing; reports are the termination
// messages of the init containers that ran, by container.
func desiredStatus(pod *corev1.Pod, node *aerosim.NodeState, init *initFailure, reports map[string]string,
	now time.Time) (*corev1.PodStatus, bool) {
	st := pod.Status.DeepCopy()
	if len(st.ContainerStatuses) == 0 || pod.DeletionTimestamp != nil {
		return st, false // kwok has not started it yet, or it is going
	}
	showReports(st, reports)
	switch {
	case init != nil:
		reflectInitFailure(st, pod, init, now)
	case node != nil && (initFailedIn(st) || initRunningIn(st)):
		reflectInitDone(st, pod, now)
	}
	if c := aerospikeContainer(pod); node != nil && c != nil {
		for i := range st.ContainerStatuses {
			if st.ContainerStatuses[i].Name == c.Name {
				reflectNode(&st.ContainerStatuses[i], pod, node, now)
			}
		}
	}
	containers := containersReady(st.ContainerStatuses)
	setCondition(st, containers, now)
	ready := containers
	if ready.Status == corev1.ConditionTrue {
		ready = gatesReady(pod, st.Conditions)
	}
	ready.Type = corev1.PodReady
	setCondition(st, ready, now)
	return st, !equality.Semantic.DeepEqual(st, &pod.Status)
}

// showReports sets the termination message of each init container that completed and reported one.
func showReports(st *corev1.PodStatus, reports map[string]string) {
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 && reports[cs.Name] != "" {
			cs.State.Terminated.Message = reports[cs.Name]
		}
	}
}

// reflectInitFailure shows a running init container that waits as the kubelet does (running, the
// pod Pending, the containers after it PodInitializing), and a failing one: terminated with an error
// after its first failure (`kubectl get` says Init:Error), then waiting out its back-off
// (Init:CrashLoopBackOff) with its restarts counted; the init containers after it and the
// containers wait (PodInitializing), and the pod is Pending and not Initialized.
func reflectInitFailure(st *corev1.PodStatus, pod *corev1.Pod, f *initFailure, now time.Time) {
	incomplete, after := make([]string, 0, len(st.InitContainerStatuses)), false
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		switch {
		case cs.Name == f.container && f.running:
			cs.Ready = false
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(f.at)}}
			after = true
		case cs.Name == f.container:
			cs.Ready, cs.RestartCount = false, int32(f.failures-1)
			exited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
				Reason: reasonError, Message: terminationMessage(pod, cs.Name, f.output),
				StartedAt: metav1.NewTime(f.at), FinishedAt: metav1.NewTime(f.at)}}
			if f.failures == 1 {
				cs.State, cs.LastTerminationState = exited, corev1.ContainerState{}
			} else {
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoop,
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
						initBackoff(f.failures), cs.Name, pod.Name, pod.Namespace, pod.UID)}}
				cs.LastTerminationState = exited
			}
			after = true
		case after:
			cs.Ready = false
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonPodInitializing}}
		default:
			continue
		}
		incomplete = append(incomplete, cs.Name)
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.Ready, cs.Started = false, ptrTo(false)
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonPodInitializing}}
	}
	st.Phase = corev1.PodPending
	setCondition(st, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse,
		Reason:  reasonNotInitialized,
		Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))}, now)
}

// terminationMessage is what the kubelet records of a container that failed: its log's tail only
// when the container asks for it (the default policy reads /dev/termination-log, which cp leaves
// empty).
func terminationMessage(pod *corev1.Pod, container, output string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			return output
		}
	}
	return ""
}

// initFailedIn reports whether the status shows an init container that failed (reflectInitFailure's,
// not a broken image's ImagePullBackOff).
func initFailedIn(st *corev1.PodStatus) bool {
	return slices.ContainsFunc(st.InitContainerStatuses, failedShown)
}

// initRunningIn reports whether the status shows an init container that runs and has not completed
// while the pod is Pending (reflectInitFailure's waiting one).
func initRunningIn(st *corev1.PodStatus) bool {
	return st.Phase == corev1.PodPending && slices.ContainsFunc(st.InitContainerStatuses, func(cs corev1.ContainerStatus) bool {
		return cs.State.Running != nil
	})
}

// failedShown: the container's status says it failed and waits to run again, or has just failed.
func failedShown(cs corev1.ContainerStatus) bool {
	return (cs.State.Waiting != nil && cs.State.Waiting.Reason == reasonCrashLoop) ||
		(cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0)
}

// initRestarts is how many times the status says the init container failed in a row (0 when it
// shows no failure): a sync loop that restarted goes on with the back-off from there.
func initRestarts(st *corev1.PodStatus, container string) int {
	for _, cs := range st.InitContainerStatuses {
		if cs.Name == container && failedShown(cs) {
			return int(cs.RestartCount) + 1
		}
	}
	return 0
}

// reflectInitDone shows the init containers completed, at last, and the containers started, as
// kwok's pod-ready stage would have (a container whose readiness probe runs `false` is never
// ready); the pod runs and is Initialized.
func reflectInitDone(st *corev1.PodStatus, pod *corev1.Pod, now time.Time) {
	at := metav1.NewTime(now)
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			cs.Ready = true
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reasonCompleted,
				StartedAt: at, FinishedAt: at}}
		}
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonPodInitializing {
			continue
		}
		cs.Ready, cs.Started = !neverReady(pod, cs.Name), ptrTo(true)
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}
	}
	st.Phase = corev1.PodRunning
	setCondition(st, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, now)
}

// neverReady: the container's readiness probe runs `false` (pod-stages.yaml keeps it unready).
func neverReady(pod *corev1.Pod, container string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == container && c.ReadinessProbe != nil && c.ReadinessProbe.Exec != nil &&
			len(c.ReadinessProbe.Exec.Command) > 0 && c.ReadinessProbe.Exec.Command[0] == "false" {
			return true
		}
	}
	return false
}

// reflectNode makes the container's status say what the node's asd does.
func reflectNode(cs *corev1.ContainerStatus, pod *corev1.Pod, node *aerosim.NodeState, now time.Time) {
	crashLooping := cs.State.Waiting != nil && cs.State.Waiting.Reason == reasonCrashLoop
	switch {
	case node.Phase == aerosim.PhaseFailed && (!crashLooping || cs.RestartCount != int32(node.Crashes)):
		at := metav1.NewTime(now)
		cs.Ready, cs.Started, cs.RestartCount = false, ptrTo(false), int32(node.Crashes)
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoop,
			Message: fmt.Sprintf("back-off restarting failed container=%s pod=%s_%s(%s)", cs.Name, pod.Name,
				pod.Namespace, pod.UID)}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
			Reason: "Error", Message: node.Error, StartedAt: at, FinishedAt: at}}
	case node.Phase != aerosim.PhaseFailed && crashLooping:
		cs.Ready, cs.Started = true, ptrTo(true)
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
	}
}

// containersReady is the ContainersReady condition of the statuses.
func containersReady(statuses []corev1.ContainerStatus) corev1.PodCondition {
	var unready []string
	for _, cs := range statuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	if len(unready) > 0 {
		return corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse,
			Reason:  reasonContainersNotReady,
			Message: fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))}
	}
	return corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
}

// gatesReady is Ready as the readiness gates make it, for a pod whose containers are ready.
func gatesReady(pod *corev1.Pod, conds []corev1.PodCondition) corev1.PodCondition {
	var unready []string
	for _, g := range pod.Spec.ReadinessGates {
		c := condition(conds, g.ConditionType)
		switch {
		case c == nil:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.",
				g.ConditionType))
		case c.Status != corev1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v",
				g.ConditionType, c.Status))
		}
	}
	if len(unready) > 0 {
		return corev1.PodCondition{Status: corev1.ConditionFalse, Reason: reasonGatesNotReady,
			Message: strings.Join(unready, ", ")}
	}
	return corev1.PodCondition{Status: corev1.ConditionTrue}
}

// setCondition sets a condition, keeping its transition time unless its status changes.
func setCondition(st *corev1.PodStatus, want corev1.PodCondition, now time.Time) {
	c := condition(st.Conditions, want.Type)
	if c == nil {
		want.LastTransitionTime = metav1.NewTime(now)
		st.Conditions = append(st.Conditions, want)
		return
	}
	if c.Status != want.Status {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	c.Status, c.Reason, c.Message = want.Status, want.Reason, want.Message
}

func ptrTo[T any](v T) *T { return &v }
