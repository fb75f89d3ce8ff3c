package resources

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// PodReady reports the pod's Ready condition: its containers are ready and every readiness gate (the
// Aerospike one included) is True. A pod being deleted is never Ready.
func PodReady(pod *corev1.Pod) bool {
	_, ready := readySince(pod)
	return ready
}

// ReadySince is when the pod last became Ready (zero when it is not Ready, or it is unknown).
func ReadySince(pod *corev1.Pod) time.Time {
	t, _ := readySince(pod)
	return t
}

func readySince(pod *corev1.Pod) (time.Time, bool) {
	if pod == nil || pod.DeletionTimestamp != nil {
		return time.Time{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// PodRunning reports whether the pod's Aerospike container runs and the pod is not going away: its
// node must then be a member of the cluster.
func PodRunning(pod *corev1.Pod) bool {
	if pod == nil || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return false
	}
	s := containerStatus(pod.Status.ContainerStatuses, v1alpha1.AerospikeContainerName)
	return s != nil && s.State.Running != nil
}

// NotReadyContainers lists the pod's containers that are not ready (not started, crash-looping, or
// a readiness probe that fails, as a sidecar's may): they keep the pod not Ready however well its
// node does.
func NotReadyContainers(pod *corev1.Pod) []string {
	if pod == nil {
		return nil
	}
	var names []string
	for _, s := range pod.Status.ContainerStatuses {
		if !s.Ready {
			names = append(names, s.Name)
		}
	}
	return names
}

// SidecarNotReady: the pod's readiness gate is True (its node is a member of the cluster) and the
// containers that are not ready are not Aerospike's: its node serves while a sidecar's probe fails.
func SidecarNotReady(pod *corev1.Pod) bool {
	gate := GateCondition(pod)
	notReady := NotReadyContainers(pod)
	return gate != nil && gate.Status == corev1.ConditionTrue && len(notReady) > 0 &&
		!slices.Contains(notReady, v1alpha1.AerospikeContainerName)
}

// brokenWaiting are the waiting reasons of a container that will not start by itself.
var brokenWaiting = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// Broken says whether the pod is broken by its container state alone: an init container (prepare-volumes,
// copy-config) or the Aerospike container cannot start (image pull failing, crash loop, config errors) or has
// terminated. Such a pod serves nothing and holds no data of the cluster, so replacing it takes no
// node down. Readiness does not count: a node that migrates is not Ready and not broken.
func Broken(pod *corev1.Pod) (bool, string) {
	if pod == nil || pod.DeletionTimestamp != nil {
		return false, ""
	}
	for _, init := range []string{PrepareVolumesContainer, ConfigInitContainer, ConfigReportContainer} {
		if s := containerStatus(pod.Status.InitContainerStatuses, init); s != nil {
			if why := brokenState(s, true); why != "" {
				return true, "init container " + s.Name + ": " + why
			}
		}
	}
	if s := containerStatus(pod.Status.ContainerStatuses, v1alpha1.AerospikeContainerName); s != nil {
		if why := brokenState(s, false); why != "" {
			return true, "container " + s.Name + ": " + why
		}
	}
	return false, ""
}

// AerospikeExitedSince: the pod's Aerospike container ended at t or later (its last or current
// termination): asd stopped then, and what started after it loaded the pod's own copy of the config.
func AerospikeExitedSince(pod *corev1.Pod, t time.Time) bool {
	s := containerStatus(pod.Status.ContainerStatuses, v1alpha1.AerospikeContainerName)
	if s == nil {
		return false
	}
	for _, term := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
		if term != nil && !term.FinishedAt.Time.Before(t) {
			return true
		}
	}
	return false
}

func brokenState(s *corev1.ContainerStatus, init bool) string {
	switch {
	case s.State.Waiting != nil && brokenWaiting[s.State.Waiting.Reason]:
		why := s.State.Waiting.Reason
		if s.State.Waiting.Message != "" {
			why += ": " + s.State.Waiting.Message
		}
		if t := s.LastTerminationState.Terminated; t != nil {
			why += " (last " + exitText(t) + ")"
		}
		return why
	case s.State.Terminated != nil && (!init || s.State.Terminated.ExitCode != 0):
		return "terminated with " + exitText(s.State.Terminated)
	}
	return ""
}

// exitText is how a container ended, with what to do when asd stopped on its host's account.
func exitText(t *corev1.ContainerStateTerminated) string {
	text := fmt.Sprintf("exit %d: %s", t.ExitCode, firstNonEmpty(t.Message, t.Reason))
	if advice := config.StartRefusalAdvice(t.Message); advice != "" {
		text += "; " + advice
	}
	return text
}

func containerStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// AerospikeImage is the image of the pod's Aerospike container, "" when there is none.
func AerospikeImage(pod *corev1.Pod) string { return aerospikeImage(pod.Spec) }

// GateCondition is the pod's readiness-gate condition acko.io/aerospike-ready, nil when unset.
func GateCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1alpha1.PodConditionAerospikeReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// HasGate reports whether the pod carries the Aerospike readiness gate (pods created by older
// versions of the operator do not, until they are replaced).
func HasGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == v1alpha1.PodConditionAerospikeReady {
			return true
		}
	}
	return false
}

// AerospikeStartedAt is when the kubelet last started the Aerospike container (zero unless it runs).
func AerospikeStartedAt(pod *corev1.Pod) time.Time {
	if s := containerStatus(pod.Status.ContainerStatuses, v1alpha1.AerospikeContainerName); s != nil && s.State.Running != nil {
		return s.State.Running.StartedAt.Time
	}
	return time.Time{}
}
