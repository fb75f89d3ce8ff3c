package resources

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config/conffile"
)

func podWith(phase corev1.PodPhase, aerospike corev1.ContainerState, init *corev1.ContainerState) *corev1.Pod {
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, PodIP: "10.0.0.1",
		ContainerStatuses: []corev1.ContainerStatus{{Name: v1alpha1.AerospikeContainerName, State: aerospike}}}}
	if init != nil {
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: ConfigInitContainer, State: *init}}
	}
	return pod
}

func TestBrokenAndRunning(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	done := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	failed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "no such file"}}
	crashLoop := podWith(corev1.PodRunning, waiting("CrashLoopBackOff"), &done)
	crashLoop.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
		ExitCode: 1, Message: "CRITICAL (config): line 37 :: 'rack-id' is enterprise-only"}
	bestPractices := podWith(corev1.PodRunning, waiting("CrashLoopBackOff"), &done)
	bestPractices.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
		ExitCode: 1, Message: "CRITICAL (config): " + conffile.BestPracticesFailed}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		running bool
		broken  string
	}{
		{"running", podWith(corev1.PodRunning, running, &done), true, ""},
		{"starting (pulling the image)", podWith(corev1.PodPending, waiting("ContainerCreating"), nil), false, ""},
		{"image pull failing", podWith(corev1.PodPending, waiting("ImagePullBackOff"), nil), false,
			"container aerospike-server: ImagePullBackOff"},
		{"crash loop, with the last message", crashLoop, false,
			"container aerospike-server: CrashLoopBackOff (last exit 1: CRITICAL (config): line 37 :: 'rack-id' is enterprise-only)"},
		{"crash loop on the host's best practices, with what to do", bestPractices, false,
			"container aerospike-server: CrashLoopBackOff (last exit 1: CRITICAL (config): " + conffile.BestPracticesFailed +
				"; the host fails asd's best-practices checks (kernel and memory settings; asd's log names each) and " +
				"service.enforce-best-practices is true: set it to false, or prepare the hosts)"},
		{"config copy failed", podWith(corev1.PodPending, waiting("PodInitializing"), &failed), false,
			"init container copy-config: terminated with exit 1: no such file"},
		{"asd exited", podWith(corev1.PodRunning, failed, &done), false, "container aerospike-server: terminated with exit 1: no such file"},
	}
	for _, tt := range tests {
		broken, why := Broken(tt.pod)
		if PodRunning(tt.pod) != tt.running || broken != (tt.broken != "") || why != tt.broken {
			t.Errorf("%s: running %t, broken %t %q; want %t %q", tt.name, PodRunning(tt.pod), broken, why, tt.running, tt.broken)
		}
	}
	gone := podWith(corev1.PodRunning, running, &done)
	gone.DeletionTimestamp = &metav1.Time{}
	if PodRunning(gone) {
		t.Error("a pod being deleted does not count as running: its node leaves")
	}
}

// Every pod carries the Aerospike readiness gate; PodReady follows the pod's Ready condition, which the
// kubelet sets only when every gate is True.
func TestReadinessGate(t *testing.T) {
	c := newCluster()
	gates := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template.Spec.ReadinessGates
	if len(gates) != 1 || gates[0].ConditionType != v1alpha1.PodConditionAerospikeReady {
		t.Fatalf("readiness gates %v", gates)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: gates}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: v1alpha1.PodConditionAerospikeReady, Status: corev1.ConditionFalse, Reason: "NotAnswering"},
	}}}
	if !HasGate(pod) || !PodReady(pod) || GateCondition(pod).Reason != "NotAnswering" {
		t.Errorf("HasGate %t PodReady %t gate %+v", HasGate(pod), PodReady(pod), GateCondition(pod))
	}
}

func TestPVCRetention(t *testing.T) {
	retain := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	del := appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	for _, tt := range []struct {
		policy                  *v1alpha1.PVCRetention
		whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType
	}{
		{nil, retain, retain},
		{&v1alpha1.PVCRetention{WhenDeleted: v1alpha1.PVCDelete}, del, retain},
		{&v1alpha1.PVCRetention{WhenScaled: v1alpha1.PVCDelete}, retain, del},
	} {
		c := newCluster(withVolumes(volume("data", "/opt/aerospike/data", "1Gi", "")))
		c.Spec.Storage.PVCRetention = tt.policy
		p := StatefulSet(c, c.RackPlan()[0], "h").Spec.PersistentVolumeClaimRetentionPolicy
		if p.WhenDeleted != tt.whenDeleted || p.WhenScaled != tt.whenScaled {
			t.Errorf("%+v: policy %+v", tt.policy, p)
		}
	}
	// A changed policy is a change of the StatefulSet; the API server's defaults are not.
	c := newCluster()
	existing := StatefulSet(c, c.RackPlan()[0], "h")
	existing.Spec.PersistentVolumeClaimRetentionPolicy = nil
	if NeedsUpdate(existing, StatefulSet(c, c.RackPlan()[0], "h")) {
		t.Error("the default policy (Retain, Retain) is not a change")
	}
	c.Spec.Storage = &v1alpha1.StorageSpec{PVCRetention: &v1alpha1.PVCRetention{WhenScaled: v1alpha1.PVCDelete}}
	if !NeedsUpdate(existing, StatefulSet(c, c.RackPlan()[0], "h")) {
		t.Error("a new retention policy must update the StatefulSet")
	}
}

func TestNotReadyContainers(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: v1alpha1.AerospikeContainerName, Ready: true},
		{Name: "probe-fails", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "not-started", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
	}}}
	if got := NotReadyContainers(pod); len(got) != 2 || got[0] != "probe-fails" || got[1] != "not-started" {
		t.Errorf("got %v, want [probe-fails not-started]", got)
	}
	if got := NotReadyContainers(nil); got != nil {
		t.Errorf("no pod: got %v", got)
	}
}
