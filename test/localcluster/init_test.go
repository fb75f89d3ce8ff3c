package localcluster

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/aerosim"
)

// outsideAccess makes the pod's copy-config copy the file of its pod on its node, as ACKO's pods
// with NodePort or HostPort access do: that file is in the ConfigMap only once the operator knows
// the node's address.
func outsideAccess(pod *corev1.Pod) {
	init := &pod.Spec.InitContainers[0]
	init.Command = []string{"cp", "/etc/aerospike-configmap/$(POD_NAME)_$(NODE_NAME).conf", asdConfigFile}
	init.Env = append(init.Env, corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
	pod.Spec.NodeName = "kwok-zone-a-1"
}

// A `cp` whose source is not in the volume fails the init container with cp's message; once the
// ConfigMap has the file, the copy is made.
func TestInitCopyOfAMissingFile(t *testing.T) {
	pod, cm := acko(t)
	outsideAccess(pod)
	_, _, err := startFiles(pod, configMapLister(t, cm))
	var failed *initError
	if !errors.As(err, &failed) || failed.container != pod.Spec.InitContainers[0].Name ||
		failed.output != "cp: cannot stat '/etc/aerospike-configmap/db-0_kwok-zone-a-1.conf': No such file or directory" {
		t.Fatalf("a missing source: %v", err)
	}
	cm.Data["db-0_kwok-zone-a-1.conf"] = "service {\n}\n"
	vols, _, err := startFiles(pod, configMapLister(t, cm))
	if err != nil {
		t.Fatal(err)
	}
	if spec := nodeSpec(pod, vols); spec.Files[asdConfigFile] != "service {\n}\n" {
		t.Fatalf("asd's config: %q", spec.Files[asdConfigFile])
	}
	// A source outside the volumes is the image's: the simulator does not know it, nothing fails (the
	// report of the copy, which reads the copy the simulator did not make, is left out).
	pod.Spec.InitContainers = pod.Spec.InitContainers[:1]
	pod.Spec.InitContainers[0].Command = []string{"cp", "/usr/share/x.conf", asdConfigFile}
	if _, _, err := startFiles(pod, configMapLister(t, cm)); err != nil {
		t.Fatalf("a source in the image: %v", err)
	}
}

func TestInitBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 5: 160 * time.Second,
		6: 5 * time.Minute, 100: 5 * time.Minute} {
		if got := initBackoff(failures); got != want {
			t.Errorf("back-off after %d failures: %s, want %s", failures, got, want)
		}
	}
}

// failingInitPod is ACKO's pod for outside access as kwok's stage started it, and the name of its
// init container.
func failingInitPod(t *testing.T) (*corev1.Pod, string) {
	t.Helper()
	pod, _ := acko(t)
	outsideAccess(pod)
	pod.Spec.ReadinessGates = nil
	pod.Status = renderPodReady(t, pod)
	return pod, pod.Spec.InitContainers[0].Name
}

// A failing init container as the kubelet shows it after its first failure: Init:Error, the
// containers waiting, the pod Pending and not Ready.
func TestInitFailureShown(t *testing.T) {
	pod, init := failingInitPod(t)
	now := time.Now()
	st, changed := desiredStatus(pod, nil, &initFailure{uid: pod.UID, container: init, output: "cp: cannot stat",
		failures: 1, at: now}, nil, now)
	ics, cs := st.InitContainerStatuses[0], st.ContainerStatuses[0]
	if !changed || st.Phase != corev1.PodPending || ics.State.Terminated == nil || ics.State.Terminated.ExitCode != 1 ||
		ics.State.Terminated.Reason != "Error" || ics.State.Terminated.Message != "" || ics.RestartCount != 0 || ics.Ready {
		t.Fatalf("first failure: %+v", ics)
	}
	assertInitializing(t, st, cs, init)
	pod.Status = *st
	if !initializing(pod) || running(pod) {
		t.Error("a pod whose init container fails is initializing, not running")
	}
}

// assertInitializing checks that the container waits for the init container, and that the pod is
// neither Initialized nor Ready.
func assertInitializing(t *testing.T, st *corev1.PodStatus, cs corev1.ContainerStatus, init string) {
	t.Helper()
	if cs.Ready || cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonPodInitializing {
		t.Fatalf("container during init: %+v", cs)
	}
	if c := condition(st.Conditions, corev1.PodInitialized); c.Status != corev1.ConditionFalse ||
		c.Reason != reasonNotInitialized || c.Message != "containers with incomplete status: ["+init+" "+resources.ConfigReportContainer+"]" {
		t.Errorf("Initialized: %+v", c)
	}
	if r := readyOf(st); r.Status != corev1.ConditionFalse || r.Reason != reasonContainersNotReady {
		t.Errorf("Ready: %+v", r)
	}
}

// Failed again, the init container waits out its back-off (Init:CrashLoopBackOff) with its restarts
// counted, which a restarted sync loop reads back; its output is its termination message when it
// asks for its log.
func TestInitCrashLoopShown(t *testing.T) {
	pod, init := failingInitPod(t)
	pod.Spec.InitContainers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	now := time.Now()
	st, _ := desiredStatus(pod, nil, &initFailure{uid: pod.UID, container: init, output: "cp: cannot stat",
		failures: 3, at: now}, nil, now)
	ics := st.InitContainerStatuses[0]
	if ics.State.Waiting == nil || ics.State.Waiting.Reason != reasonCrashLoop || ics.RestartCount != 2 ||
		ics.State.Waiting.Message != "back-off 40s restarting failed container="+init+" pod=db-0_ns(uid-1)" ||
		ics.LastTerminationState.Terminated == nil || ics.LastTerminationState.Terminated.Message != "cp: cannot stat" {
		t.Fatalf("third failure: %+v", ics)
	}
	if got := initRestarts(st, init); got != 3 {
		t.Errorf("a restarted sync loop reads %d failures, want 3", got)
	}
}

// Once the init container succeeds (the node runs), the pod is as kwok's stage would have made it,
// its init container's restarts kept.
func TestInitDoneShown(t *testing.T) {
	pod, init := failingInitPod(t)
	kwokConditions := len(pod.Status.Conditions)
	now := time.Now()
	st, _ := desiredStatus(pod, nil, &initFailure{uid: pod.UID, container: init, failures: 3, at: now}, nil, now)
	pod.Status = *st
	if _, changed := desiredStatus(pod, nil, nil, nil, now); changed {
		t.Error("no node yet and no failure known (a restarted sync loop): the status stays")
	}
	node := &aerosim.NodeState{Phase: aerosim.PhaseJoining}
	st, changed := desiredStatus(pod, node, nil, nil, now.Add(time.Second))
	ics, cs := st.InitContainerStatuses[0], st.ContainerStatuses[0]
	if !changed || st.Phase != corev1.PodRunning || ics.State.Terminated == nil || ics.State.Terminated.Reason != reasonCompleted ||
		ics.RestartCount != 2 || !cs.Ready || cs.State.Running == nil || !podReadyIn(*st) {
		t.Fatalf("init done: %+v", st)
	}
	if c := condition(st.Conditions, corev1.PodInitialized); c.Status != corev1.ConditionTrue || len(st.Conditions) != kwokConditions {
		t.Errorf("conditions %+v", st.Conditions)
	}
	pod.Status = *st
	if _, changed := desiredStatus(pod, node, nil, nil, now.Add(time.Minute)); changed {
		t.Error("nothing more to change")
	}
}

// An init container that waits (prepare-volumes, for its plan) shows running, the pod Pending and
// initializing; with the node up at last, the init containers show completed and the pod runs.
func TestInitWaitingShown(t *testing.T) {
	pod, init := failingInitPod(t)
	now := time.Now()
	st, changed := desiredStatus(pod, nil, &initFailure{uid: pod.UID, container: init, running: true, at: now}, nil, now)
	ics, cs := st.InitContainerStatuses[0], st.ContainerStatuses[0]
	if !changed || st.Phase != corev1.PodPending || ics.State.Running == nil || ics.State.Terminated != nil ||
		ics.RestartCount != 0 || ics.Ready {
		t.Fatalf("waiting init container: %+v", ics)
	}
	assertInitializing(t, st, cs, init)
	pod.Status = *st
	if !initializing(pod) || running(pod) || initFailedIn(st) {
		t.Error("a pod whose init container waits is initializing, not running, and nothing failed")
	}
	node := &aerosim.NodeState{Phase: "member", Member: true}
	st, _ = desiredStatus(pod, node, nil, nil, now.Add(time.Second))
	if ics := st.InitContainerStatuses[0]; st.Phase != corev1.PodRunning || ics.State.Terminated == nil ||
		ics.State.Terminated.ExitCode != 0 {
		t.Errorf("once its node runs: phase %s, init %+v", st.Phase, ics.State)
	}
}

// ACKO's report container copies the pod's own file to its termination log; the status shows its last
// 4 KiB, as the kubelet does, where the operator reads which config the pod copied.
func TestInitReportShown(t *testing.T) {
	pod, cm := acko(t)
	vols, _, err := startFiles(pod, configMapLister(t, cm))
	if err != nil {
		t.Fatal(err)
	}
	reports := vols[terminationLogs]
	copied := config.CopiedHash(reports[resources.ConfigReportContainer])
	if copied == "" || copied != config.Hash(cm.Data[config.FileName]) {
		t.Fatalf("reported %q, want the rack's config %s", copied, config.Hash(cm.Data[config.FileName]))
	}
	pod.Spec.ReadinessGates, pod.Spec.NodeName = nil, "kwok-zone-a-1"
	pod.Status = renderPodReady(t, pod)
	st, changed := desiredStatus(pod, nil, nil, reports, time.Now())
	if !changed || resources.CopiedConfig(&corev1.Pod{Status: *st}) != copied {
		t.Fatalf("the status does not show the report: %+v", st.InitContainerStatuses)
	}
}
