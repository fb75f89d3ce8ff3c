package localcluster

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
)

// desiredStatus is the pod's status with the node's state reflected and Ready computed; changed
// is false when the pod has it already. node is nil for a pod without a simulated node.
func desiredStatus(pod *corev1.Pod, node *aerosim.NodeState, now time.Time) (*corev1.PodStatus, bool) {
	st := pod.Status.DeepCopy()
	if len(st.ContainerStatuses) == 0 || pod.DeletionTimestamp != nil {
		return st, false // kwok has not started it yet, or it is going
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
