package operations_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/operations"
)

func TestPlan(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Operations plan")
}

const (
	warm = ackov1alpha1.OperationWarmRestart
	cold = ackov1alpha1.OperationPodRestart
)

var (
	// began is when the current pod's restart was recorded.
	began = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// cfg has round numbers so that each case says on which side of a bound it falls.
	cfg = operations.Config{PodTimeout: time.Minute, ClusterTimeout: 2 * time.Minute, SettleDelay: 10 * time.Second}
)

var kindNames = map[operations.StepKind]string{
	operations.StepIdle: "Idle", operations.StepWait: "Wait", operations.StepWaitSince: "WaitSince", operations.StepStart: "Start",
	operations.StepReject: "Reject", operations.StepBegin: "Begin", operations.StepAct: "Act",
	operations.StepConfirm: "Confirm", operations.StepPodDone: "PodDone", operations.StepPodFailed: "PodFailed",
}

// decision is a Step with its kind by name, so that a failure reads "Act" rather than 5.
type decision struct {
	Kind    string
	Pod     string
	Targets []string
}

func decide(kind operations.StepKind, pod string, targets ...string) decision {
	return decision{Kind: kindNames[kind], Pod: pod, Targets: targets}
}

// scene is a cluster and what the reconciler observes of it. By default: a Running single-rack
// cluster "c" of three Ready pods whose Aerospike nodes answer, stable, and have been up for an
// hour; the observation is taken 30s after began.
type scene struct {
	c   *ackov1alpha1.AerospikeCluster
	obs operations.Observed
}

type change func(*scene)

func build(changes ...change) scene {
	s := scene{
		c: &ackov1alpha1.AerospikeCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
			Spec:       ackov1alpha1.AerospikeClusterSpec{Size: 3},
		},
		obs: operations.Observed{ClusterReady: true, NodesUp: true, Now: began.Add(30 * time.Second)},
	}
	withPods("c-0", "c-1", "c-2")(&s)
	for _, ch := range changes {
		ch(&s)
	}
	return s
}

// withPods replaces the pods with Ready pods of these names (uid "<name>-old"), each with a node
// that answers, up for an hour, in a stable cluster of that many nodes.
func withPods(names ...string) change {
	return func(s *scene) {
		s.obs.Pods = map[string]*corev1.Pod{}
		s.obs.HealthOK = true
		s.obs.Health = aerospike.ClusterHealth{ExpectedSize: len(names), Nodes: map[string]aerospike.NodeHealth{}, ReadAt: s.obs.Now}
		for _, n := range names {
			s.obs.Pods[n] = readyPod(n, n+"-old", began.Add(-time.Hour))
			s.obs.Health.Nodes[n] = aerospike.NodeHealth{ReadAt: s.obs.Now, Facts: aerospike.NodeFacts{
				NodeID: n, Uptime: time.Hour, ClusterSize: len(names), ClusterKey: "A1", ClusterIntegrity: true}}
		}
	}
}

func readyPod(name, uid string, readySince time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}},
	}
}

func racks(ids ...int32) change {
	return func(s *scene) {
		s.c.Spec.RackConfig = &ackov1alpha1.RackConfig{}
		for _, id := range ids {
			s.c.Spec.RackConfig.Racks = append(s.c.Spec.RackConfig.Racks, ackov1alpha1.Rack{ID: id})
		}
	}
}

func operation(kind ackov1alpha1.OperationKind, id string, podList ...string) change {
	return func(s *scene) {
		s.c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: kind, ID: id, PodList: podList}}
	}
}

// ended records in status that operation id ended (phase) and the ids that ended before it.
func ended(id string, phase ackov1alpha1.OperationPhase, earlier ...string) change {
	return func(s *scene) {
		s.c.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: id, Kind: warm, Phase: phase}
		s.c.Status.FinishedOperations = append(earlier, id)
	}
}

// running records operation "op" InProgress over targets with the completed pods done.
func running(kind ackov1alpha1.OperationKind, targets, completed []string) change {
	return func(s *scene) {
		operation(kind, "op")(s)
		s.c.Status.OperationStatus = &ackov1alpha1.OperationStatus{
			ID: "op", Kind: kind, Phase: ackov1alpha1.OperationInProgress,
			TargetPods: targets, CompletedPods: completed, FailedPods: []string{},
		}
	}
}

// current records the restart of c-1 as begun at began, on its instance "c-1-old", after c-0;
// signalled says whether the restart was recorded as sent. A WarmRestart also records its attempt at
// began, with c-1's asd start as the scene's reading shows it (an hour before the reading).
func current(kind ackov1alpha1.OperationKind, signalled bool) change {
	return func(s *scene) {
		running(kind, []string{"c-0", "c-1", "c-2"}, []string{"c-0"})(s)
		st := s.c.Status.OperationStatus
		at := metav1.NewMicroTime(began)
		st.CurrentPod, st.CurrentPodUID, st.CurrentPodStartTime, st.CurrentPodSignalled = "c-1", "c-1-old", &at, signalled
		if kind == warm {
			before := metav1.NewMicroTime(s.obs.Health.NodeStarted("c-1"))
			st.CurrentPodNodeStartedBefore, st.CurrentPodAttempted = &before, &at
		}
	}
}

// noAttempt: the operator stopped between recording the pod and recording an attempt at it.
func noAttempt(s *scene) {
	s.c.Status.OperationStatus.CurrentPodNodeStartedBefore, s.c.Status.OperationStatus.CurrentPodAttempted = nil, nil
}

// waiting records that the operation began waiting for its next pod at began.
func waiting(s *scene) {
	t := metav1.NewTime(began)
	s.c.Status.OperationStatus.WaitingSince = &t
}

// clusterNotReady: a node is down or the cluster is not stable, so the cluster is not Running either.
func clusterNotReady(why string) change {
	return func(s *scene) {
		s.obs.ClusterReady, s.obs.NotReady = false, why
		s.obs.NodesUp, s.obs.NodesDown = false, why
	}
}

// specChanged: the spec changed during the operation (pods are outdated, the roll waits for the
// operation): the cluster is not Running, but every node is up and stable.
func specChanged(s *scene) {
	s.obs.ClusterReady, s.obs.NotReady = false, "1/3 pods run an older template or config: c-2"
	s.obs.RollingRestartPending = true
}

// recreated replaces c-1 by a new instance, Ready since the given time after began.
func recreated(readyAfter time.Duration) change {
	return func(s *scene) { s.obs.Pods["c-1"] = readyPod("c-1", "c-1-new", began.Add(readyAfter)) }
}

// asdStarted sets c-1's asd start, seen by a reading taken readAfter began.
func asdStarted(startedAfter, readAfter time.Duration) change {
	return func(s *scene) {
		n := s.obs.Health.Nodes["c-1"]
		n.ReadAt = began.Add(readAfter)
		n.Facts.Uptime = readAfter - startedAfter
		s.obs.Health.Nodes["c-1"] = n
	}
}

// uptime sets the whole-second uptime (as asd reports it) of a node, read now.
func uptime(name string, seconds int) change {
	return func(s *scene) {
		n := s.obs.Health.Nodes[name]
		n.ReadAt, n.Facts.Uptime = s.obs.Now, time.Duration(seconds)*time.Second
		s.obs.Health.Nodes[name] = n
	}
}

func at(sinceBegan time.Duration) change {
	return func(s *scene) { s.obs.Now = began.Add(sinceBegan) }
}

func notReady(name string) change {
	return func(s *scene) { s.obs.Pods[name].Status.Conditions[0].Status = corev1.ConditionFalse }
}

// c1Gone: pod c-1 does not exist.
// sidecarNotReady makes c-1 not Ready by a sidecar's failing probe alone, its Aerospike gate as given.
func sidecarNotReady(gate corev1.ConditionStatus) change {
	return func(s *scene) {
		pod := s.obs.Pods["c-1"]
		pod.Status.Conditions[0].Status = corev1.ConditionFalse
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: ackov1alpha1.PodConditionAerospikeReady, Status: gate})
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName, Ready: true},
			{Name: "never-ready"}}
	}
}

func c1Gone(s *scene) { delete(s.obs.Pods, "c-1") }

func terminating(name string) change {
	return func(s *scene) {
		now := metav1.NewTime(s.obs.Now)
		s.obs.Pods[name].DeletionTimestamp = &now
	}
}

// asdExited: c-1's Aerospike container ended at the given time after began (asd exited on a config it
// refuses, and tini with it), and its node answers no reading.
func asdExited(after time.Duration) change {
	return func(s *scene) {
		noHealth(s)
		s.obs.Pods["c-1"].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
				FinishedAt: metav1.NewTime(began.Add(after))}}}}
	}
}

func noHealth(s *scene) { s.obs.HealthOK, s.obs.Health = false, aerospike.ClusterHealth{} }

func nodeErr(name string) change {
	return func(s *scene) {
		n := s.obs.Health.Nodes[name]
		n.Err = errors.New("connection refused")
		s.obs.Health.Nodes[name] = n
	}
}

var _ = Describe("Plan", func() {
	DescribeTable("decides the next step",
		func(want decision, reason string, changes ...change) {
			s := build(changes...)
			step := operations.Plan(s.c, s.obs, cfg)
			Expect(decision{Kind: kindNames[step.Kind], Pod: step.Pod, Targets: step.Targets}).To(Equal(want))
			Expect(step.Reason).To(ContainSubstring(reason))
		},
		// No operation to start.
		Entry("idle without an operation", decide(operations.StepIdle, ""), ""),
		Entry("idle when the id Completed", decide(operations.StepIdle, ""), "",
			operation(warm, "a"), ended("a", ackov1alpha1.OperationCompleted)),
		Entry("idle when the id ended in Error", decide(operations.StepIdle, ""), "",
			operation(warm, "a"), ended("a", ackov1alpha1.OperationError)),
		Entry("idle when an old id is re-applied after another operation ran", decide(operations.StepIdle, ""), "",
			operation(warm, "a"), ended("b", ackov1alpha1.OperationCompleted, "a")),

		// A new operation.
		Entry("a new id after a Completed one waits until the cluster is Running",
			decide(operations.StepWait, ""), "operation b waits until the cluster is Running: c-2 not Ready",
			operation(warm, "b"), ended("a", ackov1alpha1.OperationCompleted), clusterNotReady("c-2 not Ready")),
		Entry("waits for a rolling restart to finish", decide(operations.StepWait, ""), "waits for the rolling restart",
			operation(cold, "a"), func(s *scene) { s.obs.RollingRestartPending = true }),
		Entry("starts on every pod the spec asks for, frozen in rack then ordinal order (numeric, not lexical)",
			decide(operations.StepStart, "", "c-2-0", "c-2-1", "c-2-2", "c-10-0", "c-10-1"), "",
			racks(10, 2), func(s *scene) { s.c.Spec.Size = 5 }, withPods("c-10-1", "c-2-1", "c-10-0", "c-2-2", "c-2-0"),
			operation(warm, "a")),
		Entry("starts on a single-rack podList in ordinal order",
			decide(operations.StepStart, "", "c-0", "c-2"), "", operation(cold, "a", "c-2", "c-0")),
		Entry("rejects a podList naming pods the spec has not, listing them, whatever the cluster's state",
			decide(operations.StepReject, "", "c-5", "c-7"), "not pods of this cluster: c-5, c-7",
			operation(warm, "a", "c-7", "c-0", "c-5"), clusterNotReady("c-1 not Ready")),

		// An operation InProgress, between pods.
		Entry("an operation InProgress goes on even while a rolling restart is pending",
			decide(operations.StepBegin, "c-1"), "",
			running(warm, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}),
			func(s *scene) { s.obs.RollingRestartPending = true }),
		// asd reports its uptime in whole seconds, up to a second ahead: a restart proves itself by a
		// start more than a second after the one read before it only when asd had run 3 s.
		Entry("WarmRestart: the next pod waits while its asd started less than 3 s ago",
			decide(operations.StepWait, "c-1"), "Aerospike started less than 3s ago",
			running(warm, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}), uptime("c-1", 2)),
		Entry("WarmRestart: the next pod goes once its asd has been up 3 s",
			decide(operations.StepBegin, "c-1"), "",
			running(warm, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}), uptime("c-1", 3)),
		Entry("PodRestart: the next pod goes whatever its uptime (the UID settles a PodRestart)",
			decide(operations.StepBegin, "c-1"), "",
			running(cold, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}), uptime("c-1", 0)),
		Entry("the next pod waits while a node is down: the wait is recorded, for its deadline",
			decide(operations.StepWaitSince, "c-1"), "pod c-1 waits until every node is up and the cluster is stable: c-2 not Ready",
			running(warm, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}), clusterNotReady("c-2 not Ready")),
		Entry("... and goes on waiting within the deadline",
			decide(operations.StepWait, "c-1"), "pod c-1 waits until every node is up and the cluster is stable",
			running(warm, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}), clusterNotReady("c-2 not Ready"),
			waiting, at(2*time.Minute)),
		Entry("... and ends the operation past it, saying what it waited for",
			decide(operations.StepPodFailed, "c-1"), "waited 2m0s: pod c-1 waits until every node is up and the cluster is stable: c-2 not Ready",
			running(warm, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}), clusterNotReady("c-2 not Ready"),
			waiting, at(2*time.Minute+time.Second)),
		// Issue 22, point 10: the roll waits for the operation InProgress, so the operation must not wait
		// for the roll (for Running, which needs no outdated pod).
		Entry("a spec change during the operation does not hold its next pod",
			decide(operations.StepBegin, "c-1"), "",
			running(warm, []string{"c-0", "c-1", "c-2"}, []string{"c-0"}), specChanged),
		Entry("... nor keep its current pod from counting as back",
			decide(operations.StepPodDone, "c-1"), "",
			current(warm, true), asdStarted(time.Second, 30*time.Second), specChanged),
		Entry("... while a new operation still waits for the cluster to be Running",
			decide(operations.StepWait, ""), "operation b waits until the cluster is Running: 1/3 pods run an older",
			operation(warm, "b"), specChanged),
		Entry("the targets stay frozen: a pod added later is not restarted, the operation finishes",
			decide(operations.StepPodDone, ""), "",
			running(warm, []string{"c-0", "c-1"}, []string{"c-0", "c-1"}), withPods("c-0", "c-1", "c-2", "c-3")),
		// A scale-down made meanwhile waits for the operation: the operation does not wait for a leaving pod.
		Entry("a next target the spec no longer has (scaled down) ends the operation",
			decide(operations.StepPodFailed, "c-2"), "pod c-2 is no longer part of the cluster (spec.size or spec.rackConfig changed)",
			running(cold, []string{"c-0", "c-1", "c-2"}, []string{"c-0", "c-1"}), func(s *scene) { s.c.Spec.Size = 2 }),
		Entry("... as does a current pod that leaves while it comes back",
			decide(operations.StepPodFailed, "c-1"), "pod c-1 is no longer part of the cluster",
			current(cold, true), func(s *scene) { s.c.Spec.Size = 1 }),
		Entry("... but a pod that stays is waited for as before",
			decide(operations.StepWait, "c-1"), "pod is not recreated yet",
			current(cold, true), func(s *scene) { s.c.Spec.Size = 2 }),
		Entry("a target that is missing (being recreated) is waited for",
			decide(operations.StepWaitSince, "c-1"), "pod c-1 does not exist",
			running(cold, []string{"c-0", "c-1"}, []string{"c-0"}), c1Gone),
		Entry("... within the pod timeout",
			decide(operations.StepWait, "c-1"), "pod c-1 does not exist",
			running(cold, []string{"c-0", "c-1"}, []string{"c-0"}), c1Gone, waiting, at(time.Minute)),
		Entry("... and fails the operation past it",
			decide(operations.StepPodFailed, "c-1"), "waited 1m0s: pod c-1 does not exist",
			running(cold, []string{"c-0", "c-1"}, []string{"c-0"}), c1Gone, waiting, at(61*time.Second)),

		// Recorded as begun, not as sent: the operator stopped between the two writes.
		Entry("PodRestart: the recorded instance still runs, so it was not deleted: delete it",
			decide(operations.StepAct, "c-1"), "", current(cold, false)),
		Entry("PodRestart: a new instance proves the deletion", decide(operations.StepConfirm, "c-1"), "",
			current(cold, false), recreated(5*time.Second)),
		Entry("PodRestart: no pod proves the deletion", decide(operations.StepConfirm, "c-1"), "",
			current(cold, false), c1Gone),
		Entry("PodRestart: a terminating instance proves the deletion", decide(operations.StepConfirm, "c-1"), "",
			current(cold, false), terminating("c-1")),
		Entry("WarmRestart: asd started after the attempt: the signal went out",
			decide(operations.StepConfirm, "c-1"), "", current(warm, false), asdStarted(2*time.Second, 20*time.Second)),
		Entry("WarmRestart: asd up since before, read after the settle delay: try again",
			decide(operations.StepAct, "c-1"), "", current(warm, false), asdStarted(-time.Hour, 10*time.Second),
			at(10*time.Second)),
		Entry("WarmRestart: within the settle delay of an attempt: wait",
			decide(operations.StepWait, "c-1"), "settling", current(warm, false), asdStarted(-time.Hour, 9*time.Second),
			at(9*time.Second)),
		Entry("WarmRestart: no reading within the settle delay: wait", decide(operations.StepWait, "c-1"), "settling",
			current(warm, false), noHealth, at(5*time.Second)),
		Entry("WarmRestart: recorded, no attempt yet: act (after the safety checks)",
			decide(operations.StepAct, "c-1"), "", current(warm, false), noAttempt),
		Entry("WarmRestart: still not restarted after the pod timeout: act (the executor fails it, saying why)",
			decide(operations.StepAct, "c-1"), "", current(warm, false), noHealth, at(61*time.Second)),
		// Model hole 29: a config asd refuses, copied for the attempt, and the operator stopped before it learnt
		// that the signal went out: asd never answers again, but its container ended after the attempt.
		Entry("WarmRestart: asd silent, its container ended after the attempt: it restarted on the copy",
			decide(operations.StepConfirm, "c-1"), "", current(warm, false), asdExited(2*time.Second), at(20*time.Second)),
		Entry("WarmRestart: asd silent, its container ended before the attempt: that proves nothing",
			decide(operations.StepAct, "c-1"), "", current(warm, false), asdExited(-time.Minute), at(20*time.Second)),

		// Sent: waiting for the pod to come back.
		Entry("PodRestart: the old instance still runs", decide(operations.StepWait, "c-1"), "pod is not recreated yet",
			current(cold, true)),
		Entry("PodRestart: no pod yet", decide(operations.StepWait, "c-1"), "pod is not recreated yet",
			current(cold, true), c1Gone),
		Entry("PodRestart: the new instance is not Ready", decide(operations.StepWait, "c-1"), "pod is not Ready",
			current(cold, true), recreated(5*time.Second), notReady("c-1")),
		Entry("PodRestart: no health reading yet", decide(operations.StepWait, "c-1"), "no Aerospike health reading yet",
			current(cold, true), recreated(5*time.Second), noHealth),
		Entry("PodRestart: the node has not answered since the pod became Ready",
			decide(operations.StepWait, "c-1"), "has not answered since the pod became Ready",
			current(cold, true), recreated(31*time.Second)),
		Entry("PodRestart: the node answers with an error", decide(operations.StepWait, "c-1"),
			"has not answered since the pod became Ready", current(cold, true), recreated(5*time.Second), nodeErr("c-1")),
		Entry("PodRestart: the cluster is not stable yet (migrating)", decide(operations.StepWait, "c-1"),
			"the nodes are not all up and stable yet: c-0: migrate_partitions_remaining=12",
			current(cold, true), recreated(5*time.Second), clusterNotReady("c-0: migrate_partitions_remaining=12")),
		Entry("PodRestart: back", decide(operations.StepPodDone, "c-1"), "", current(cold, true), recreated(5*time.Second)),
		// A sidecar is the spec's to fix, by a rolling restart that waits for this operation.
		Entry("PodRestart: back while only a sidecar is not ready and its node serves (gate True)",
			decide(operations.StepPodDone, "c-1"), "", current(cold, true), recreated(5*time.Second), sidecarNotReady(corev1.ConditionTrue)),
		Entry("... but not while its gate is False", decide(operations.StepWait, "c-1"), "pod is not Ready",
			current(cold, true), recreated(5*time.Second), sidecarNotReady(corev1.ConditionFalse)),
		Entry("WarmRestart: asd has not restarted yet", decide(operations.StepWait, "c-1"), "Aerospike node has not restarted yet",
			current(warm, true)),
		Entry("WarmRestart: restarted but the pod is not Ready", decide(operations.StepWait, "c-1"), "pod is not Ready",
			current(warm, true), asdStarted(time.Second, 30*time.Second), notReady("c-1")),
		Entry("WarmRestart: back", decide(operations.StepPodDone, "c-1"), "",
			current(warm, true), asdStarted(time.Second, 30*time.Second)),
		Entry("a pod not back within the pod timeout fails the operation",
			decide(operations.StepPodFailed, "c-1"), "pod c-1 did not come back within 1m0s: pod is not Ready",
			current(cold, true), recreated(5*time.Second), notReady("c-1"), at(61*time.Second)),
		Entry("a pod back after the pod timeout still counts", decide(operations.StepPodDone, "c-1"), "",
			current(cold, true), recreated(5*time.Second), at(61*time.Second)),
		// A cold start of a large device takes longer than any timeout: only time without progress counts.
		Entry("a pod loading its data past the pod timeout, with progress within it, is waited for",
			decide(operations.StepWait, "c-1"), "loading data: test 2000 records",
			current(warm, true), loadingProgressed(30*time.Second), at(85*time.Second)),
		Entry("... and fails once it showed no progress for the pod timeout",
			decide(operations.StepPodFailed, "c-1"), "pod c-1 did not come back within 1m0s: loading data: test 2000 records",
			current(warm, true), loadingProgressed(20*time.Second), at(81*time.Second)),
	)

	// asd's uptime is whole seconds and up to a second ahead: a reading after the signal that shows the
	// same start as the one before it, give or take that second, is no restart. Status keeps the start
	// to the microsecond.
	It("does not take the rounding of asd's uptime for a restart", func() {
		s := build(current(warm, false))
		before := metav1.NewMicroTime(began.Add(-10*time.Second + 300*time.Millisecond))
		s.c.Status.OperationStatus.CurrentPodNodeStartedBefore = &before
		raw, err := json.Marshal(s.c) // what the API server stores and answers
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(raw, s.c)).To(Succeed())
		Expect(s.c.Status.OperationStatus.CurrentPodNodeStartedBefore.Time).To(BeTemporally("==", before.Time))
		for _, up := range []time.Duration{29, 30, 31} { // read 20 s after began: a start 9–11 s before began
			asdStarted(20*time.Second-up*time.Second, 20*time.Second)(&s)
			Expect(kindNames[operations.Plan(s.c, s.obs, cfg).Kind]).NotTo(Equal("Confirm"), "uptime %ds", up)
		}
		asdStarted(time.Second, 20*time.Second)(&s) // restarted a second after the attempt
		Expect(kindNames[operations.Plan(s.c, s.obs, cfg).Kind]).To(Equal("Confirm"))
	})
})

var _ = Describe("PendingOperation", func() {
	DescribeTable("returns the spec's operation unless its id ended",
		func(pending bool, changes ...change) {
			s := build(changes...)
			if pending {
				Expect(operations.PendingOperation(s.c)).To(Equal(&s.c.Spec.Operations[0]))
			} else {
				Expect(operations.PendingOperation(s.c)).To(BeNil())
			}
		},
		Entry("no operation", false),
		Entry("a new id", true, operation(warm, "a")),
		Entry("a new id after another ended", true, operation(warm, "b"), ended("a", ackov1alpha1.OperationCompleted)),
		Entry("the id InProgress", true, running(warm, []string{"c-0"}, nil)),
		Entry("the id Completed", false, operation(warm, "a"), ended("a", ackov1alpha1.OperationCompleted)),
		Entry("the id ended in Error", false, operation(cold, "a"), ended("a", ackov1alpha1.OperationError)),
		Entry("an old id re-applied after others ended", false,
			operation(warm, "a"), ended("c", ackov1alpha1.OperationError, "a", "b")),
	)
})

// loadingProgressed: the pod's asd reads its data back (a cold start), its log last showing progress
// this long after began.
func loadingProgressed(after time.Duration) change {
	return func(s *scene) {
		dl := &ackov1alpha1.DataLoading{Message: "loading data: test 2000 records", Records: 2000,
			Progressed: metav1.NewTime(began.Add(after))}
		s.obs.Loading = func(pod string) *ackov1alpha1.DataLoading {
			if pod == "c-1" {
				return dl
			}
			return nil
		}
	}
}
