package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/podexec"
)

const (
	warmRestart = ackov1alpha1.OperationWarmRestart
	podRestart  = ackov1alpha1.OperationPodRestart
)

// allPods are the pods of the 3-pod cluster "ops" the operation tests run on, in restart order.
var allPods = []string{"ops-0", "ops-1", "ops-2"}

// startCluster runs an operator with the given executor config and a 3-pod cluster "ops" that
// has reached Running: operations are tested on a cluster that is up.
func startCluster(ns string, w *world, opCfg operations.Config) types.NamespacedName {
	startOperator(w, opCfg)
	key := create(sampleCluster(ns, "ops", 3))
	waitRunning(key)
	return key
}

func setOperation(key types.NamespacedName, kind ackov1alpha1.OperationKind, id string, podList ...string) {
	update(key, func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: kind, ID: id, PodList: podList}}
	})
}

func operationStatus(key types.NamespacedName) *ackov1alpha1.OperationStatus {
	return fetch(key).Status.OperationStatus
}

// waitOperation waits until status says operation id reached phase, and returns that status.
func waitOperation(key types.NamespacedName, id string, phase ackov1alpha1.OperationPhase) *ackov1alpha1.OperationStatus {
	EventuallyWithOffset(1, func() string {
		c := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(context.Background(), key, c); err != nil {
			return err.Error()
		}
		if st := c.Status.OperationStatus; st != nil {
			return fmt.Sprintf("%s %s", st.ID, st.Phase)
		}
		return "no operation"
	}, timeout, poll).Should(Equal(fmt.Sprintf("%s %s", id, phase)))
	return operationStatus(key)
}

// waitObserved waits until the operator has reconciled the current spec.
func waitObserved(key types.NamespacedName) {
	EventuallyWithOffset(1, func() bool {
		c := fetch(key)
		return c.Status.ObservedGeneration == c.Generation
	}, timeout, poll).Should(BeTrue())
}

// trace is what happened to one pod so far: its current instance, the warm restarts the world
// received and the instances it created.
type trace struct {
	uid           types.UID
	warm, created int
}

func traces(key types.NamespacedName, w *world) map[string]trace {
	created := w.creations()
	out := map[string]trace{}
	for name, uid := range podUIDs(key) {
		out[name] = trace{uid: uid, warm: w.warmRestarts(name), created: created[name]}
	}
	return out
}

// restartsSince says what happened to each pod since before ("warm×1", "recreated×1"); pods
// left alone are absent. A new UID always shows as recreated, so a WarmRestart that replaced a
// pod cannot pass for an in-place one.
func restartsSince(before map[string]trace, key types.NamespacedName, w *world) map[string]string {
	out := map[string]string{}
	for name, now := range traces(key, w) {
		was := before[name]
		var what []string
		if d := now.warm - was.warm; d != 0 {
			what = append(what, fmt.Sprintf("warm×%d", d))
		}
		if now.uid != was.uid || now.created != was.created {
			what = append(what, fmt.Sprintf("recreated×%d", now.created-was.created))
		}
		if len(what) > 0 {
			out[name] = strings.Join(what, " ")
		}
	}
	return out
}

// each says that every pod of names had the same thing happen to it.
func each(names []string, what string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = what
	}
	return out
}

// timeline lists the cluster's events of the given reasons in the order they were emitted, as
// "Reason/Action" followed by the pod of names the note is about, if any.
func timeline(key types.NamespacedName, names []string, reasons ...string) []string {
	list := &eventsv1.EventList{}
	ExpectWithOffset(1, k8s.List(context.Background(), list, client.InNamespace(key.Namespace))).To(Succeed())
	events := slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool {
		return e.Regarding.Name != key.Name || !slices.Contains(reasons, e.Reason)
	})
	sort.SliceStable(events, func(i, j int) bool { return events[i].EventTime.Before(&events[j].EventTime) })
	var out []string
	for _, e := range events {
		entry := e.Reason + "/" + e.Action
		for _, n := range names {
			if strings.Contains(e.Note, "pod "+n+" ") {
				entry += " " + n
			}
		}
		out = append(out, entry)
	}
	return out
}

// operationsEnded reads acko_operations_total for the cluster "ops" of namespace ns.
func operationsEnded(ns string, kind ackov1alpha1.OperationKind, phase ackov1alpha1.OperationPhase) float64 {
	return testutil.ToFloat64(metrics.Operations.WithLabelValues(ns, "ops", string(kind), string(phase)))
}

func podReady(ns, name string) func() bool {
	return func() bool {
		pod := &corev1.Pod{}
		return k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pod) == nil && podIsReady(pod)
	}
}

func containersReady(ns, name string) func() bool {
	return func() bool {
		pod := &corev1.Pod{}
		if k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pod) != nil {
			return false
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.ContainersReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
}

var _ = Describe("On-demand operations", func() {
	var (
		ns string
		w  *world
	)

	BeforeEach(func() {
		ns, w = newNamespace()
	})

	DescribeTable("restarts the targets one at a time, records each restart and completes",
		func(kind ackov1alpha1.OperationKind, podList, want []string) {
			key := startCluster(ns, w, operations.Config{})
			before := traces(key, w)
			setAt := time.Now()
			setOperation(key, kind, "op-1", podList...)

			st := waitOperation(key, "op-1", ackov1alpha1.OperationCompleted)
			Expect(st.Kind).To(Equal(kind))
			Expect(st.TargetPods).To(Equal(want))
			Expect(st.CompletedPods).To(Equal(want), "completed in rack, then ordinal order")
			Expect(st.FailedPods).To(BeEmpty())
			Expect(st.CurrentPod).To(BeEmpty())
			Expect(fetch(key).Status.FinishedOperations).To(Equal([]string{"op-1"}))

			how, reason, podEvent := "warm×1", ackov1alpha1.RestartReasonWarmRestart, ackov1alpha1.EventPodWarmRestarted
			if kind == podRestart {
				how, reason, podEvent = "recreated×1", ackov1alpha1.RestartReasonManualRestart, ackov1alpha1.EventPodColdRestarted
			}
			// Each target exactly once (a WarmRestart keeps the pod's UID), no other pod, and nothing
			// more once the operation is over.
			Consistently(func() map[string]string { return restartsSince(before, key, w) }, time.Second, poll).
				Should(Equal(each(want, how)))
			waitRunning(key)

			c := fetch(key)
			for _, name := range allPods {
				p := c.Status.Pods[name]
				if !slices.Contains(want, name) {
					Expect(p.LastRestartReason).To(BeEmpty(), name)
					continue
				}
				Expect(p.LastRestartReason).To(Equal(reason), name)
				Expect(p.LastRestartTime).NotTo(BeNil(), name)
				Expect(p.LastRestartTime.Time).To(BeTemporally(">=", setAt.Truncate(time.Second)), name)
			}

			// One at a time: a pod is restarted only after the previous one was back. The events say
			// so in the order the operator emitted them.
			wantTimeline := []string{"Operation/Start"}
			for _, name := range want {
				wantTimeline = append(wantTimeline, podEvent+"/Restart "+name, "Operation/Progress "+name)
			}
			wantTimeline = append(wantTimeline, "Operation/Finish")
			Eventually(func() []string { return timeline(key, allPods, ackov1alpha1.EventOperation, podEvent) }).
				WithTimeout(timeout).Should(Equal(wantTimeline))
			Expect(eventMessages(key, ackov1alpha1.EventOperation)).To(ContainElements(
				ContainSubstring("Started %s operation op-1 on %d pods", kind, len(want)),
				ContainSubstring("Operation op-1 Completed: %d pods completed, 0 failed", len(want))))
			Expect(testutil.ToFloat64(metrics.PodRestarts.WithLabelValues(ns, "ops", string(reason)))).To(BeEquivalentTo(len(want)))
			Expect(operationsEnded(ns, kind, ackov1alpha1.OperationCompleted)).To(BeEquivalentTo(1))
		},
		Entry("WarmRestart of every pod", warmRestart, nil, allPods),
		Entry("PodRestart of every pod", podRestart, nil, allPods),
		Entry("PodRestart of a podList of one", podRestart, []string{"ops-1"}, []string{"ops-1"}),
		Entry("WarmRestart of a podList of two, in ordinal order", warmRestart, []string{"ops-2", "ops-0"}, []string{"ops-0", "ops-2"}),
	)

	// envtest runs no webhook, as when it is bypassed: the operation fails, the cluster stays managed.
	It("ends an operation whose podList names a pod the cluster does not have in Error, before touching any pod", func() {
		key := startCluster(ns, w, operations.Config{})
		before := traces(key, w)
		setOperation(key, warmRestart, "bad", "ops-0", "ops-7")
		st := waitOperation(key, "bad", ackov1alpha1.OperationError)
		Expect(st.FailedPods).To(Equal([]string{"ops-7"}))
		Expect(st.CompletedPods).To(BeEmpty())
		Expect(st.Message).To(ContainSubstring("ops-7"))
		Consistently(func() map[string]string { return restartsSince(before, key, w) }, time.Second, poll).Should(BeEmpty())
		waitRunning(key)
		Expect(condition(key, ackov1alpha1.ConditionReconcileFailed)()).To(BeNil(), "the cluster itself is fine")
	})

	It("stops at a pod that cannot be warm-restarted: Error, that pod failed, the rest untouched", func() {
		// A refusal whose result comes back after the reconcile that recorded the attempt is judged after the
		// settle delay (the uptime decides); 1 s keeps that inside the spec's wait.
		key := startCluster(ns, w, operations.Config{SettleDelay: time.Second})
		w.set(func(w *world) {
			w.signalErr = func(pod string) error {
				if pod != "ops-1" {
					return nil
				}
				return &podexec.NotTiniError{Pod: ns + "/" + pod, Cmdline: []string{"asd", "--foreground"},
					Reason: "not tini started with -r SIGUSR1"}
			}
		})
		before := traces(key, w)
		setOperation(key, warmRestart, "reload")

		st := waitOperation(key, "reload", ackov1alpha1.OperationError)
		Expect(st.CompletedPods).To(Equal([]string{"ops-0"}))
		Expect(st.FailedPods).To(Equal([]string{"ops-1"}))
		Expect(st.Message).To(And(ContainSubstring("pod ops-1 failed"), ContainSubstring(`"asd --foreground"`),
			ContainSubstring("use a PodRestart operation instead"), ContainSubstring("no further pod was touched")))
		Consistently(func() map[string]string { return restartsSince(before, key, w) }, 2*time.Second, poll).
			Should(Equal(map[string]string{"ops-0": "warm×1"}))
		Expect(fetch(key).Status.FinishedOperations).To(ContainElement("reload"))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventOperation) }).WithTimeout(timeout).Should(
			ContainElement(And(ContainSubstring("Operation reload Error: 1 pods completed, 1 failed"),
				ContainSubstring("stopped"), ContainSubstring("use a PodRestart operation instead"))))
		Expect(operationsEnded(ns, warmRestart, ackov1alpha1.OperationError)).To(BeEquivalentTo(1))
		Expect(testutil.ToFloat64(metrics.PodRestarts.WithLabelValues(ns, "ops", string(ackov1alpha1.RestartReasonWarmRestart)))).
			To(BeEquivalentTo(1))
		waitRunning(key) // the failed operation leaves a healthy cluster managed
	})

	It("fails a pod that does not come back within the pod timeout, and touches no further pod", func() {
		podTimeout := 2 * time.Second
		key := startCluster(ns, w, operations.Config{PodTimeout: podTimeout})
		w.set(func(w *world) { w.holdRecreated["ops-0"] = true })
		before := traces(key, w)
		setAt := time.Now()
		setOperation(key, podRestart, "slow")

		st := waitOperation(key, "slow", ackov1alpha1.OperationError)
		Expect(time.Since(setAt)).To(BeNumerically(">=", podTimeout), "the pod had its full timeout")
		Expect(st.FailedPods).To(Equal([]string{"ops-0"}))
		Expect(st.CompletedPods).To(BeEmpty())
		Expect(st.Message).To(ContainSubstring("pod ops-0 did not come back within 2s: pod is not Ready"))
		Consistently(func() map[string]string { return restartsSince(before, key, w) }, 2*time.Second, poll).
			Should(Equal(map[string]string{"ops-0": "recreated×1"}))
	})

	It("runs an id once, even when it is re-applied later, and runs every new id", func() {
		key := startCluster(ns, w, operations.Config{})
		runs := func(id string) {
			GinkgoHelper()
			before := traces(key, w)
			setOperation(key, warmRestart, id)
			waitOperation(key, id, ackov1alpha1.OperationCompleted)
			Expect(restartsSince(before, key, w)).To(Equal(each(allPods, "warm×1")))
		}
		// reapplied removes the operation, sets it again, and checks that nothing runs once the
		// operator has seen it.
		reapplied := func(id string) {
			GinkgoHelper()
			before, ended := traces(key, w), operationStatus(key)
			update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Operations = nil })
			waitObserved(key)
			setOperation(key, warmRestart, id)
			waitObserved(key)
			Consistently(func(g Gomega) {
				g.Expect(restartsSince(before, key, w)).To(BeEmpty())
				g.Expect(operationStatus(key)).To(Equal(ended))
			}, 2*time.Second, poll).Should(Succeed())
		}
		runs("first")
		reapplied("first")
		runs("second")
		reapplied("first")
		Expect(fetch(key).Status.FinishedOperations).To(Equal([]string{"first", "second"}))
	})

	It("holds an operation present at creation until the cluster is first Running, then runs it", func() {
		startOperator(w, operations.Config{})
		w.set(func(w *world) { w.holdReady["ops-2"] = true })
		cluster := sampleCluster(ns, "ops", 3)
		cluster.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: warmRestart, ID: "boot"}}
		key := create(cluster)
		// Every pod is up but ops-2, which is not Ready: the operation must not start.
		Eventually(func() int { return len(podUIDs(key)) }, timeout, poll).Should(Equal(3))
		Eventually(podReady(ns, "ops-0"), timeout, poll).Should(BeTrue())
		Eventually(podReady(ns, "ops-1"), timeout, poll).Should(BeTrue())
		Eventually(condition(key, ackov1alpha1.ConditionReconciling), timeout, poll).Should(
			HaveField("Message", ContainSubstring("operation boot waits until the cluster is Running")))
		before := traces(key, w)
		Consistently(func(g Gomega) {
			g.Expect(operationStatus(key)).To(BeNil())
			g.Expect(restartsSince(before, key, w)).To(BeEmpty())
		}, time.Second, poll).Should(Succeed())

		w.set(func(w *world) { delete(w.holdReady, "ops-2") })
		st := waitOperation(key, "boot", ackov1alpha1.OperationCompleted)
		Expect(st.CompletedPods).To(Equal(allPods))
		Expect(restartsSince(before, key, w)).To(Equal(each(allPods, "warm×1")))
		waitRunning(key)
	})

	It("pauses mid-operation without touching a pod, and on resume restarts only the pods not done", func() {
		key := startCluster(ns, w, operations.Config{})
		// ops-1's new instance stays not Ready: the operation stops there with ops-0 done.
		w.set(func(w *world) { w.holdRecreated["ops-1"] = true })
		before := traces(key, w)
		setOperation(key, podRestart, "roll")
		Eventually(func() string {
			st := operationStatus(key)
			if st == nil {
				return "no operation"
			}
			return fmt.Sprintf("done=%v current=%s sent=%v", st.CompletedPods, st.CurrentPod, st.CurrentPodSignalled)
		}, timeout, poll).Should(Equal("done=[ops-0] current=ops-1 sent=true"))
		// The world has recreated ops-1 (a snapshot taken while it creates would be torn).
		Eventually(func() int { return w.creations()["ops-1"] }, timeout, poll).Should(Equal(2))

		setPausedSpec(key, true)
		waitPaused(key)
		paused, touched := operationStatus(key), traces(key, w)
		// Let ops-1 come back: an operator that ignored the pause would now complete it and
		// delete ops-2. (Its readiness gate is the operator's to set, which a paused operator does not.)
		w.set(func(w *world) { delete(w.holdRecreated, "ops-1"); delete(w.holdReady, "ops-1") })
		Eventually(containersReady(ns, "ops-1"), timeout, poll).Should(BeTrue())
		Consistently(func(g Gomega) {
			g.Expect(traces(key, w)).To(Equal(touched))
			g.Expect(operationStatus(key)).To(Equal(paused))
			g.Expect(phaseOf(key)()).To(Equal(ackov1alpha1.PhasePaused))
		}, 2*time.Second, poll).Should(Succeed())

		setPausedSpec(key, false)
		st := waitOperation(key, "roll", ackov1alpha1.OperationCompleted)
		Expect(st.CompletedPods).To(Equal(allPods))
		Expect(restartsSince(before, key, w)).To(Equal(each(allPods, "recreated×1")))
		waitRunning(key)
	})
})
