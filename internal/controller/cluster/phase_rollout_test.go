package cluster

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// The rollout's deciders are pure: these tables run without an API server. Issue 22, points 7 and 8.

// withStep records a step for aero-2 in the settled state, begun (and, when done, carried out) the
// given time ago, for the pod instance uid.
func withStep(st *clusterState, method ackov1alpha1.PodUpdateMethod, done bool, ago time.Duration, uid string) *ackov1alpha1.PodUpdate {
	at := metav1.NewTime(st.now.Add(-ago))
	u := &ackov1alpha1.PodUpdate{Method: method, UID: uid, Reason: ackov1alpha1.RestartReasonConfigChanged,
		Started: metav1.NewMicroTime(at.Time), Done: done, ConfigHash: "new"}
	st.cluster.Status.Pods = map[string]ackov1alpha1.PodStatus{"aero-2": {Update: u, LastRestartTime: &at}}
	return u
}

// notReadyWith makes aero-2 not Ready, with the given containers not ready (its gate False otherwise).
func notReadyWith(st *clusterState, containers ...string) {
	pod := st.pods["aero-2"]
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName, Ready: true}}
	for _, c := range containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c})
	}
}

// crashLoops: asd on aero-2 crash-loops, so its pod is broken and its node no member.
func crashLoops(st *clusterState) {
	pod := st.pods["aero-2"]
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName}}
	st.broken["aero-2"] = "container aerospike-server: CrashLoopBackOff"
	st.members = st.members[:2]
}

func TestProgressDeadline(t *testing.T) {
	deadline := ackov1alpha1.DefaultProgressDeadline
	for _, tc := range []struct {
		name   string
		ago    time.Duration
		change func(st *clusterState)
		stuck  string // "" when the roll is not stuck
	}{
		{"back: Ready", deadline + time.Minute, func(*clusterState) {}, ""},
		{"a member whose sidecar's readiness never passes", deadline + time.Minute,
			func(st *clusterState) { notReadyWith(st, "stuck-probe") }, "containers not ready: stuck-probe"},
		{"... within the deadline", deadline - time.Second, func(st *clusterState) { notReadyWith(st, "stuck-probe") }, ""},
		{"a member that migrates: only its gate is False, which is progress", deadline + time.Minute,
			func(st *clusterState) { notReadyWith(st) }, ""},
		{"not a member", deadline + time.Minute, func(st *clusterState) {
			notReadyWith(st)
			st.members = st.members[:2]
		}, "pod is not Ready yet"},
		{"broken: its state is named", deadline + time.Minute, crashLoops, "container aerospike-server: CrashLoopBackOff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			st.broken = map[string]string{}
			u := withStep(st, ackov1alpha1.UpdateEvict, true, tc.ago, "old")
			tc.change(st)
			st.checkDeadline("aero-2", u, "pod is not Ready yet")
			switch {
			case tc.stuck == "" && st.stuck != "":
				t.Errorf("stuck: %s", st.stuck)
			case tc.stuck != "" && !strings.Contains(st.stuck, tc.stuck):
				t.Errorf("stuck = %q; want it to name %q", st.stuck, tc.stuck)
			case tc.stuck != "" && !strings.Contains(st.stuck, "pod aero-2 did not come back within the progress deadline (10m0s)"):
				t.Errorf("stuck = %q; want it to name the pod and the deadline", st.stuck)
			}
		})
	}
}

func TestFateOf(t *testing.T) {
	// outdatedAs: aero-2 is outdated, now decided for method m.
	outdatedAs := func(m ackov1alpha1.PodUpdateMethod) func(st *clusterState) {
		return func(st *clusterState) {
			st.outdated = append(st.outdated, outdatedPod{pod: st.pods["aero-2"], reason: ackov1alpha1.RestartReasonConfigChanged,
				method: m})
		}
	}
	outdated := outdatedAs(ackov1alpha1.UpdateReplace)
	// anotherNotReady: aero-1 is outdated too, not Ready, with no step yet: it goes first.
	anotherNotReady := func(st *clusterState) {
		st.pods["aero-1"].Status.Conditions[0].Status = corev1.ConditionFalse
		st.outdated = append(st.outdated, outdatedPod{pod: st.pods["aero-1"], reason: ackov1alpha1.RestartReasonConfigChanged,
			method: ackov1alpha1.UpdateEvict})
	}
	recorded := func(st *clusterState) {
		st.pods["aero-2"].Annotations = map[string]string{ackov1alpha1.AnnotationConfigHash: "new"}
	}
	// restarted: asd on aero-2 started 30 s after the start recorded before the signal.
	restarted := func(st *clusterState) {
		n := st.health.Nodes["aero-2"]
		n.Facts.Uptime = 10 * time.Second
		st.health.Nodes["aero-2"] = n
	}
	for _, tc := range []struct {
		name   string
		method ackov1alpha1.PodUpdateMethod
		done   bool
		uid    string // the instance the step was recorded for; the pod's is "old"
		change []func(st *clusterState)
		want   stepFate
	}{
		{"not taken yet, still fits", ackov1alpha1.UpdateReplace, false, "old", []func(*clusterState){outdated}, stepPending},
		{"not taken yet, reverted", ackov1alpha1.UpdateEvict, false, "old", nil, decideAgain},
		{"not taken yet, now decided another way", ackov1alpha1.UpdateEvict, false, "old",
			[]func(*clusterState){outdatedAs(ackov1alpha1.UpdateInPlace)}, decideAgain},
		{"in place, fallen back from a live change that is decided again", ackov1alpha1.UpdateInPlace, false, "old",
			[]func(*clusterState){outdatedAs(ackov1alpha1.UpdateLive)}, stepPending},
		{"live, now decided in place", ackov1alpha1.UpdateLive, false, "old",
			[]func(*clusterState){outdatedAs(ackov1alpha1.UpdateInPlace)}, decideAgain},
		{"eviction not taken, another outdated pod not Ready goes first", ackov1alpha1.UpdateEvict, false, "old",
			[]func(*clusterState){outdatedAs(ackov1alpha1.UpdateEvict), anotherNotReady}, decideAgain},
		{"live change not taken, another outdated pod not Ready goes first", ackov1alpha1.UpdateLive, false, "old",
			[]func(*clusterState){outdatedAs(ackov1alpha1.UpdateLive), anotherNotReady}, decideAgain},
		{"restart in place not taken waits for no other pod", ackov1alpha1.UpdateInPlace, false, "old",
			[]func(*clusterState){outdatedAs(ackov1alpha1.UpdateInPlace), anotherNotReady}, stepPending},
		{"eviction not taken, every other pod Ready", ackov1alpha1.UpdateEvict, false, "old",
			[]func(*clusterState){outdatedAs(ackov1alpha1.UpdateEvict)}, stepPending},
		{"evicted, the new pod is not Ready yet", ackov1alpha1.UpdateEvict, true, "older",
			[]func(*clusterState){func(st *clusterState) { notReadyWith(st, "stuck-probe") }}, followStep},
		// Point 7: the new pod never becomes Ready; the spec is reverted, so the pod is outdated again.
		{"evicted, the new pod never Ready and outdated again", ackov1alpha1.UpdateEvict, true, "older",
			[]func(*clusterState){func(st *clusterState) { notReadyWith(st, "stuck-probe") }, outdated}, decideAgain},
		{"evicted, the cache still shows the old pod", ackov1alpha1.UpdateEvict, true, "old",
			[]func(*clusterState){outdated}, followStep},
		// Point 8: asd crash-loops on the file the restart in place copied; the spec is reverted.
		{"in place, crash-looping on its file, reverted", ackov1alpha1.UpdateInPlace, true, "old",
			[]func(*clusterState){recorded, crashLoops, outdated}, decideAgain},
		{"in place, crash-looping on its file, spec unchanged", ackov1alpha1.UpdateInPlace, true, "old",
			[]func(*clusterState){recorded, crashLoops}, followStep},
		{"in place, the file not recorded on the pod yet", ackov1alpha1.UpdateInPlace, true, "old",
			[]func(*clusterState){crashLoops, outdated}, followStep},
		{"in place, asd not restarted yet: its gate stays held", ackov1alpha1.UpdateInPlace, true, "old",
			[]func(*clusterState){recorded, outdated}, followStep},
		{"in place, restarted, spec changed again", ackov1alpha1.UpdateInPlace, true, "old",
			[]func(*clusterState){recorded, restarted, outdated}, decideAgain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			st.broken = map[string]string{}
			st.pods["aero-2"].UID = types.UID("old")
			st.sets = map[string]*appsv1.StatefulSet{st.cluster.StatefulSetName(0): {Spec: appsv1.StatefulSetSpec{
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
					Annotations: map[string]string{ackov1alpha1.AnnotationConfigHash: "new"}}}}}}
			u := withStep(st, tc.method, tc.done, time.Minute, tc.uid)
			started := metav1.NewMicroTime(st.now.Add(-40 * time.Second))
			u.NodeStartedBefore = &started
			n := st.health.Nodes["aero-2"]
			n.Facts.Uptime = time.Hour
			st.health.Nodes["aero-2"] = n
			for _, c := range tc.change {
				c(st)
			}
			if got := st.fateOf("aero-2", u); got != tc.want {
				t.Errorf("fateOf = %d; want %d", got, tc.want)
			}
		})
	}
}

// Issue 22, point 9: an eviction the API server keeps refusing (a second PodDisruptionBudget over the
// pods, or a budget that allows no disruption) stalls the cluster once the refusals have lasted the
// progress deadline, counted from the first refusal, for a roll's step and for a PodRestart's pod alike.
func TestARefusedEvictionStalls(t *testing.T) {
	deadline := ackov1alpha1.DefaultProgressDeadline
	ago := func(st *clusterState, d time.Duration) *metav1.MicroTime {
		return ptr.To(metav1.NewMicroTime(st.now.Add(-d)))
	}
	step := func(method ackov1alpha1.PodUpdateMethod, done bool, refused time.Duration) func(st *clusterState) {
		return func(st *clusterState) {
			u := withStep(st, method, done, 2*deadline, "old")
			if refused > 0 {
				u.Attempted = ago(st, refused)
			}
		}
	}
	operation := func(kind ackov1alpha1.OperationKind, signalled bool, refused time.Duration) func(st *clusterState) {
		return func(st *clusterState) {
			st.cluster.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: "op", Kind: kind,
				Phase: ackov1alpha1.OperationInProgress, CurrentPod: "aero-2", CurrentPodStartTime: ago(st, 2*deadline),
				CurrentPodSignalled: signalled, CurrentPodAttempted: ago(st, refused)}
		}
	}
	for _, tc := range []struct {
		name    string
		change  func(st *clusterState)
		stalled bool
	}{
		{"a roll's eviction refused for longer than the deadline", step(ackov1alpha1.UpdateEvict, false, deadline+time.Second), true},
		{"... for less", step(ackov1alpha1.UpdateEvict, false, deadline-time.Second), false},
		{"a step held long by the checks, never refused", step(ackov1alpha1.UpdateEvict, false, 0), false},
		{"a step refused long ago, held by the checks now (a node down)", func(st *clusterState) {
			step(ackov1alpha1.UpdateEvict, false, deadline+time.Second)(st)
			st.pods["aero-0"].Status.Conditions[0].Status = corev1.ConditionFalse
		}, false},
		{"a step whose eviction went out after refusals", step(ackov1alpha1.UpdateEvict, true, deadline+time.Second), false},
		{"a restart in place (attempted: its signal)", step(ackov1alpha1.UpdateInPlace, false, deadline+time.Second), false},
		{"a PodRestart whose eviction was refused for longer than the deadline",
			operation(ackov1alpha1.OperationPodRestart, false, deadline+time.Second), true},
		{"... for less", operation(ackov1alpha1.OperationPodRestart, false, deadline-time.Second), false},
		{"... whose eviction went out since", operation(ackov1alpha1.OperationPodRestart, true, deadline+time.Second), false},
		{"... held by the checks now (migrations)", func(st *clusterState) {
			operation(ackov1alpha1.OperationPodRestart, false, deadline+time.Second)(st)
			n := st.health.Nodes["aero-0"]
			n.Facts.MigratePartitionsRemaining = 10
			st.health.Nodes["aero-0"] = n
		}, false},
		{"a WarmRestart (attempted: its signal)", operation(ackov1alpha1.OperationWarmRestart, false, deadline+time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			st.maxDown = 1 // replication-factor 2
			tc.change(st)
			st.checkRefused(actEvict, "aero-2", refusedSince(st.cluster.Status.Pods["aero-2"].Update))
			st.summarize(&st.cluster.Status)
			stalled := meta.FindStatusCondition(st.cluster.Status.Conditions, ackov1alpha1.ConditionStalled)
			switch {
			case !tc.stalled && stalled.Status == metav1.ConditionTrue:
				t.Errorf("Stalled: %s", stalled.Message)
			case tc.stalled && (stalled.Status != metav1.ConditionTrue || stalled.Reason != ackov1alpha1.ReasonRolloutStuck):
				t.Errorf("Stalled = %s %s; want True RolloutStuck", stalled.Status, stalled.Reason)
			case tc.stalled && !strings.Contains(stalled.Message, "the eviction of pod aero-2 has been refused since "+
				st.now.Add(-deadline-time.Second).UTC().Format(time.RFC3339)+", longer than the progress deadline (10m0s)"):
				t.Errorf("Stalled message %q; want it to name the pod, the first refusal and the deadline", stalled.Message)
			}
		})
	}
}

// Model seed 189: the new pod of a replacement is the next pod of a WarmRestart operation, which holds
// its gate; the roll waited for it to be Ready, the operation for the roll's next broken pod.
func TestBackFromStep(t *testing.T) {
	held := func(st *clusterState) { st.held["aero-2"] = "warm restart of operation op-1" }
	for _, tc := range []struct {
		name   string
		change []func(st *clusterState)
		want   bool
	}{
		{"Ready", nil, true},
		{"its gate held by an operation, its node a member", []func(*clusterState){func(st *clusterState) { notReadyWith(st) }, held}, true},
		{"not Ready, its gate not held", []func(*clusterState){func(st *clusterState) { notReadyWith(st) }}, false},
		{"its gate held, a container not ready", []func(*clusterState){func(st *clusterState) { notReadyWith(st, "stuck-probe") }, held}, false},
		{"its gate held, its node alone outside the cluster", []func(*clusterState){func(st *clusterState) { notReadyWith(st) }, held,
			func(st *clusterState) {
				n := st.health.Nodes["aero-2"]
				n.Facts.ClusterSize, n.Facts.ClusterKey = 1, "B7"
				st.health.Nodes["aero-2"] = n
			}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			st.held = map[string]string{}
			for _, c := range tc.change {
				c(st)
			}
			if got := st.backFromStep("aero-2"); got != tc.want {
				t.Errorf("backFromStep = %v; want %v", got, tc.want)
			}
		})
	}
}

// A batch takes its method's limit: the methods that take whole pods (evictions, replacements) up to
// min(rollingUpdateBatchSize, replication-factor − 1), a config change one pod at a time, a replication
// factor's change every outdated pod.
func TestBatchLimitIsTheMethods(t *testing.T) {
	st := settledState()
	st.cluster.Spec.RollingUpdateBatchSize = ptr.To[int32](3)
	st.maxDown = 2
	st.outdated = []outdatedPod{{pod: readyPod("aero-0")}, {pod: readyPod("aero-1")}, {pod: readyPod("aero-2")}}
	for method, want := range map[ackov1alpha1.PodUpdateMethod]int{
		ackov1alpha1.UpdateEvict: 2, ackov1alpha1.UpdateReplace: 2, ackov1alpha1.UpdateInPlace: 1,
		ackov1alpha1.UpdateLive: 1, ackov1alpha1.UpdateLiveTogether: 3,
	} {
		first := outdatedPod{pod: readyPod("aero-1"), reason: ackov1alpha1.RestartReasonConfigChanged, method: method}
		if got := st.batchLimit(first); got != want {
			t.Errorf("a batch of %s takes %d pods, want %d", method, got, want)
		}
	}
}
