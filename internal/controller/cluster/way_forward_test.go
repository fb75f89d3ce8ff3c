package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

var _ = Describe("Always a way forward", Label("way-forward"), func() {
	var (
		ns string
		w  *world
	)

	BeforeEach(func() {
		ns, w = newNamespace()
	})

	It("stops a roll whose pod never comes back (RolloutStuck), and heals when the spec is fixed", func() {
		startOperator(w, operations.Config{})
		key := runningWithDeadline(ns, "stuck")
		Expect(kstatusOf(fetch(key))).To(Equal(kstatus.CurrentStatus))

		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.1.1-broken" })
		Eventually(func() kstatus.Status { return kstatusOf(fetch(key)) }, timeout, poll).Should(Equal(kstatus.InProgressStatus))
		Eventually(condition(key, ackov1alpha1.ConditionStalled), time.Minute, poll).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ackov1alpha1.ReasonRolloutStuck),
			HaveField("Message", And(ContainSubstring("pod stuck-2 did not come back within the progress deadline (10s)"),
				ContainSubstring("ImagePullBackOff")))))
		stuck := fetch(key)
		Expect(condOf(stuck, ackov1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionFalse),
			"Stalled and Reconciling are never True together")
		Expect(stuck.Status.Phase).To(Equal(ackov1alpha1.PhaseError))
		Expect(kstatusOf(stuck)).To(Equal(kstatus.FailedStatus))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventRolloutStuck) }, timeout, poll).Should(
			ContainElement(ContainSubstring("stuck-2")), "events are recorded asynchronously")
		Consistently(w.creations, 2*time.Second, poll).Should(Equal(map[string]int{"stuck-0": 1, "stuck-1": 1, "stuck-2": 2}),
			"exactly one pod restarted: the roll stops there")

		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.1.1" })
		waitRunning(key)
		Expect(w.creations()).To(Equal(map[string]int{"stuck-0": 1, "stuck-1": 1, "stuck-2": 3}),
			"the broken pod is replaced at once, the others are left alone")
		healed := fetch(key)
		Expect(condOf(healed, ackov1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
		Expect(kstatusOf(healed)).To(Equal(kstatus.CurrentStatus))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventPodReplaced) }, timeout, poll).Should(
			ContainElement(ContainSubstring("stuck-2")), "events are recorded asynchronously")
	})

	// Issue 22, point 7: a pod whose node joins but that never becomes Ready held the roll forever.
	It("stops a roll whose pod joins but never becomes Ready, and replaces that pod once the spec is reverted", func() {
		startOperator(w, operations.Config{})
		w.set(func(w *world) { w.neverReady["stuck-probe"] = true })
		key := runningWithDeadline(ns, "sidecar")

		update(key, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.PodSpec = &ackov1alpha1.PodOverrides{Sidecars: []ackov1alpha1.Sidecar{
				{Container: corev1.Container{Name: "stuck-probe", Image: "busybox:1.37"}}}}
		})
		Eventually(condition(key, ackov1alpha1.ConditionStalled), timeout, poll).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ackov1alpha1.ReasonRolloutStuck),
			HaveField("Message", And(ContainSubstring("pod sidecar-2 did not come back within the progress deadline (10s)"),
				ContainSubstring("containers not ready: stuck-probe")))))
		Expect(w.creations()).To(Equal(map[string]int{"sidecar-0": 1, "sidecar-1": 1, "sidecar-2": 2}))

		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.PodSpec = nil })
		waitRunning(key)
		Expect(w.creations()).To(Equal(map[string]int{"sidecar-0": 1, "sidecar-1": 1, "sidecar-2": 3}),
			"the pod that never became Ready is replaced, the others are left alone")
		Expect(condOf(fetch(key), ackov1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
	})

	// Issue 22, point 8: a restart in place into a config asd refuses left the refused file in the
	// pod's own copy; after a revert the pod matched the spec by its annotation and was never fixed.
	It("replaces a pod whose asd crash-loops on a config it refused once that config is reverted", func() {
		startOperator(w, operations.Config{})
		key := runningWithDeadline(ns, "refused")
		good := fetch(key).Status.Pods["refused-2"].ConfigHash
		Expect(good).NotTo(BeEmpty())
		w.set(func(w *world) { w.refuses = func(hash string) bool { return hash != good } })

		update(key, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.AerospikeConfig.Value["service"] = map[string]any{"proto-fd-max": int64(20000)}
		})
		// The operator records the restart in place; then the kubelet reports asd's exit.
		Eventually(func() *ackov1alpha1.PodUpdate { return fetch(key).Status.Pods["refused-2"].Update }, timeout, poll).
			Should(And(Not(BeNil()), HaveField("Method", ackov1alpha1.UpdateInPlace), HaveField("Done", true)),
				func() string {
					return fmt.Sprintf("warm restarts %d; %s", w.warmRestarts("refused-2"),
						condOf(fetch(key), ackov1alpha1.ConditionReconciling).Message)
				})
		w.crashNow()
		Eventually(condition(key, ackov1alpha1.ConditionStalled), timeout, poll).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ackov1alpha1.ReasonRolloutStuck),
			HaveField("Message", And(ContainSubstring("pod refused-2 did not come back"), ContainSubstring("CrashLoopBackOff"),
				ContainSubstring("at once when it is broken")))))
		Expect(fetch(key).Status.Pods["refused-2"].ConfigHash).NotTo(Equal(good), "the pod records the file it was given")

		update(key, func(c *ackov1alpha1.AerospikeCluster) { delete(c.Spec.AerospikeConfig.Value, "service") })
		waitRunning(key)
		Expect(w.creations()).To(Equal(map[string]int{"refused-0": 1, "refused-1": 1, "refused-2": 2}),
			"the crash-looping pod is replaced (its new copy is the reverted config), the others are left alone")
		Expect(w.warmRestarts("refused-0") + w.warmRestarts("refused-1")).To(BeZero())
		Expect(fetch(key).Status.Pods["refused-2"].ConfigHash).To(Equal(good))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventPodReplaced) }, timeout, poll).Should(
			ContainElement(ContainSubstring("refused-2")), "events are recorded asynchronously")
	})

	It("reports Ready only once the last pod rolled: kubectl wait returns after the change is in", func() {
		startOperator(w, operations.Config{})
		key := create(sampleCluster(ns, "waited", 3))
		waitRunning(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })
		Eventually(func() bool {
			c := fetch(key)
			ready := condOf(c, ackov1alpha1.ConditionReady)
			if ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == c.Generation {
				// The first moment Ready is True for the new generation, every pod runs the new image.
				for name, p := range c.Status.Pods {
					Expect(p.Image).To(Equal("aerospike:ce-8.1.2.0"), name)
				}
				return true
			}
			Expect(kstatusOf(c)).NotTo(Equal(kstatus.CurrentStatus), "not Current while pods roll")
			return false
		}, time.Minute, 20*time.Millisecond).Should(BeTrue())
	})

	It("clears a child conflict by itself once the foreign object is gone", func() {
		startOperator(w, operations.Config{})
		foreign := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clash"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
		Expect(k8s.Create(context.Background(), foreign)).To(Succeed())
		key := create(sampleCluster(ns, "clash", 1))
		Eventually(condition(key, ackov1alpha1.ConditionStalled), timeout, poll).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ackov1alpha1.ReasonChildConflict)))
		Expect(kstatusOf(fetch(key))).To(Equal(kstatus.FailedStatus))
		Expect(k8s.Delete(context.Background(), foreign)).To(Succeed())
		deleted := time.Now()
		waitRunning(key)
		Expect(time.Since(deleted)).To(BeNumerically("<", 15*time.Second), "looked at again within seconds")
	})

	It("corrects drift of the headless Service, which has no generation", func() {
		startOperator(w, operations.Config{})
		key := create(sampleCluster(ns, "drift", 1))
		waitRunning(key)
		svc := &corev1.Service{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "drift-headless"}, svc)).To(Succeed())
		svc.Spec.PublishNotReadyAddresses = false
		Expect(k8s.Update(context.Background(), svc)).To(Succeed())
		Eventually(func() bool {
			Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(svc), svc)).To(Succeed())
			return svc.Spec.PublishNotReadyAddresses
		}, timeout, poll).Should(BeTrue())
	})

	It("gives each created object its own Created event", func() {
		startOperator(w, operations.Config{})
		key := create(sampleCluster(ns, "fresh", 1))
		waitRunning(key)
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventCreated) }, timeout, poll).Should(
			ConsistOf("Created Service fresh-headless", "Created Service fresh", "Created ConfigMap fresh-config",
				"Created PodDisruptionBudget fresh", "Created StatefulSet fresh"))
	})

	It("ends an operation whose wait for the cluster expires, which frees spec.operations", func() {
		// The pod timeout is longer than the cluster wait: late-0 must come back even on a loaded machine (CI runs
		// this beside the e2e suite); the spec is about the cluster wait of late-1.
		startOperator(w, operations.Config{ClusterTimeout: 3 * time.Second, PodTimeout: 10 * time.Second})
		key := create(sampleCluster(ns, "late", 3))
		waitRunning(key)
		setOperation(key, ackov1alpha1.OperationPodRestart, "slow", "late-0", "late-1")
		Eventually(func() []string {
			if st := operationStatus(key); st != nil {
				return st.CompletedPods
			}
			return nil
		}, timeout, poll).Should(Equal([]string{"late-0"}))
		// Another pod goes down: late-1 must wait for the cluster, and that wait has a deadline.
		w.set(func(w *world) { w.holdReady["late-2"] = true })
		Expect(k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-2"}})).To(Succeed())
		st := waitOperation(key, "slow", ackov1alpha1.OperationError)
		Expect(st.FailedPods).To(Equal([]string{"late-1"}))
		// Whether late-1 was begun (or even restarted) before late-2 went down or not, the wait ended (3 s for the
		// cluster, 10 s for the pod), saying why.
		Expect(st.Message).To(Or(ContainSubstring("waited 3s: pod late-1 waits until every node is up and the cluster is stable"),
			MatchRegexp("could not be restarted within 10s: restart of late-1 held by check (SafetyRule|PodsReady)"),
			ContainSubstring("pod late-1 did not come back within 10s: the nodes are not all up and stable yet")))
		// spec.operations is free: the next operation is accepted and starts (its own 3 s waits may end it
		// either way on a loaded machine, which is not what this spec is about).
		w.set(func(w *world) { delete(w.holdReady, "late-2") })
		setOperation(key, ackov1alpha1.OperationWarmRestart, "next")
		Eventually(func() string {
			if st := operationStatus(key); st != nil {
				return st.ID
			}
			return ""
		}, timeout, poll).Should(Equal("next"))
	})

	// Issue 22, point 9: a pod under two budgets cannot be evicted at all (the API server answers 500);
	// the operation looped through the circuit breaker with no deadline.
	It("ends a PodRestart whose pod another PodDisruptionBudget also selects, after the pod timeout, saying why", func() {
		key := startCluster(ns, w, operations.Config{PodTimeout: 5 * time.Second})
		addSecondBudget(key)
		setOperation(key, podRestart, "evict", "ops-1")
		Eventually(condition(key, ackov1alpha1.ConditionReconciling), timeout, poll).Should(
			HaveField("Message", ContainSubstring("more than one PodDisruptionBudget")), "the wait says why")
		st := waitOperation(key, "evict", ackov1alpha1.OperationError)
		Expect(st.FailedPods).To(Equal([]string{"ops-1"}))
		Expect(st.Message).To(And(ContainSubstring("could not be restarted within 5s: eviction of pod ops-1 refused"),
			ContainSubstring("more than one PodDisruptionBudget")))
		Expect(condition(key, ackov1alpha1.ConditionCircuitBreakerOpen)()).To(BeNil(), "a refusal is no reconcile failure")
		Expect(w.creations()).To(Equal(map[string]int{"ops-0": 1, "ops-1": 1, "ops-2": 1}))
	})

	// Issue 22, point 9: a roll's eviction that the API server refuses (500) for longer than the progress
	// deadline stalls the cluster instead of waiting with no end; it is tried again, and goes once the
	// second budget is gone.
	It("stalls a roll whose evictions a second PodDisruptionBudget refuses, and goes on once it is deleted", func() {
		startOperator(w, operations.Config{})
		key := runningWithDeadline(ns, "twice")
		second := addSecondBudget(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })
		Eventually(condition(key, ackov1alpha1.ConditionStalled), time.Minute, poll).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ackov1alpha1.ReasonRolloutStuck),
			HaveField("Message", And(MatchRegexp(`the eviction of pod twice-\d has been refused since`),
				ContainSubstring("longer than the progress deadline (10s)")))))
		Expect(w.creations()).To(Equal(map[string]int{"twice-0": 1, "twice-1": 1, "twice-2": 1}), "no pod went")
		Expect(condition(key, ackov1alpha1.ConditionCircuitBreakerOpen)()).To(BeNil(), "a refusal is no reconcile failure")

		Expect(k8s.Delete(context.Background(), second)).To(Succeed())
		waitRunning(key)
		Expect(w.creations()).To(Equal(map[string]int{"twice-0": 2, "twice-1": 2, "twice-2": 2}))
		Expect(condOf(fetch(key), ackov1alpha1.ConditionStalled).Status).To(Equal(metav1.ConditionFalse))
	})

	// Issue 22, point 10: the roll waits for the operation InProgress; the operation's next pod waited
	// for the cluster to be Running, which needs no outdated pod: each waited for the other.
	It("finishes an operation before the roll of a spec change made during it, without waiting for its deadline", func() {
		key := startCluster(ns, w, operations.Config{}) // the default 10-minute waits
		setOperation(key, warmRestart, "during")
		Eventually(func() []string {
			if st := operationStatus(key); st != nil {
				return st.CompletedPods
			}
			return nil
		}, timeout, poll).Should(ContainElement("ops-0"))
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })
		st := waitOperation(key, "during", ackov1alpha1.OperationCompleted)
		Expect(st.CompletedPods).To(Equal(allPods))
		waitRunning(key)
		for name, p := range fetch(key).Status.Pods {
			Expect(p.Image).To(Equal("aerospike:ce-8.1.2.0"), name)
		}
		events := timeline(key, allPods, ackov1alpha1.EventOperation, ackov1alpha1.EventRollingRestartStarted)
		finished := slices.Index(events, "Operation/Finish")
		Expect(finished).To(BeNumerically(">=", 0))
		Expect(slices.Index(events, ackov1alpha1.EventRollingRestartStarted+"/Restart")).To(BeNumerically(">", finished),
			"the operation goes first, the roll after it: %v", events)
	})

	It("reports a split brain, takes no node down while split, and restarts a node an operation names", func() {
		startOperator(w, operations.Config{})
		key := create(sampleCluster(ns, "split", 3))
		waitRunning(key)
		w.set(func(w *world) { w.alone["split-2"] = true })
		Eventually(condition(key, ackov1alpha1.ConditionClusterSplit), timeout, poll).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ackov1alpha1.ReasonSplitBrain),
			HaveField("Message", And(ContainSubstring("split-0"), ContainSubstring("split-2")))))
		Expect(condition(key, ackov1alpha1.ConditionReady)()).To(HaveField("Status", metav1.ConditionFalse))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventClusterSplit) }, timeout, poll).ShouldNot(BeEmpty())

		// An operation the user asks for restarts the node it names, split or not (the user accepts the cost).
		setOperation(key, ackov1alpha1.OperationWarmRestart, "heal", "split-2")
		Eventually(func() int { return w.warmRestarts("split-2") }, timeout, poll).Should(Equal(1))
		w.set(func(w *world) { delete(w.alone, "split-2") })
		waitOperation(key, "heal", ackov1alpha1.OperationCompleted)
		waitRunning(key)

		// A config change while split restarts no node, on either side, and says why.
		w.set(func(w *world) { w.alone["split-2"] = true })
		Eventually(condition(key, ackov1alpha1.ConditionClusterSplit), timeout, poll).Should(HaveField("Status", metav1.ConditionTrue))
		update(key, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.AerospikeConfig.Value["service"] = map[string]any{"proto-fd-max": int64(20000)}
		})
		Eventually(condition(key, ackov1alpha1.ConditionReconciling), timeout, poll).Should(
			HaveField("Message", ContainSubstring("check NoSplitBrain")))
		Consistently(func() int { return w.warmRestarts("split-0") + w.warmRestarts("split-1") + w.warmRestarts("split-2") },
			2*time.Second, poll).Should(Equal(1))
		w.set(func(w *world) { delete(w.alone, "split-2") })
		waitRunning(key)
		Expect(w.warmRestarts("split-0") + w.warmRestarts("split-1") + w.warmRestarts("split-2")).To(Equal(4))
		Expect(condition(key, ackov1alpha1.ConditionClusterSplit)()).To(HaveField("Status", metav1.ConditionFalse))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventClusterJoined) }, timeout, poll).ShouldNot(BeEmpty())
	})
})

// runningWithDeadline creates a 3-pod cluster whose restarted pods have 10 s (the least allowed) to come
// back, and waits until it is Running.
// addSecondBudget creates a PodDisruptionBudget of the user's over the cluster's pods, beside the
// operator's: the API server then refuses every eviction of them (500).
func addSecondBudget(key types.NamespacedName) *policyv1.PodDisruptionBudget {
	second := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "someone-elses"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: fetch(key).SelectorLabels()}},
	}
	Expect(k8s.Create(context.Background(), second)).To(Succeed())
	return second
}

func runningWithDeadline(ns, name string) types.NamespacedName {
	c := sampleCluster(ns, name, 3)
	c.Spec.ProgressDeadlineSeconds = ptr.To(int32(10))
	key := create(c)
	waitRunning(key)
	return key
}

// gate returns a channel that stays open until release is called, once, at the latest when the spec
// ends: an exec held open.
func gate() (held <-chan struct{}, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	DeferCleanup(release)
	return ch, release
}

// Reconcile never waits on the network: a warm restart whose exec hangs delays nothing but its own
// cluster's step, and a pause of another cluster is acknowledged at once meanwhile.
var _ = Describe("A hung exec", Label("way-forward"), func() {
	It("does not hold up another cluster's pause", func() {
		ns, w := newNamespace()
		hung, release := gate()
		w.signalErr = func(pod string) error {
			if pod == "hangs-0" {
				<-hung // the exec stream that never answers, until the task's deadline
				return errors.New("exec timed out")
			}
			return nil
		}
		w.workers = 1 // even with a single reconcile worker
		op := startOperator(w, operations.Config{})
		a, b := create(sampleCluster(ns, "hangs", 1)), create(sampleCluster(ns, "other", 1))
		waitRunning(a)
		waitRunning(b)
		setOperation(a, ackov1alpha1.OperationWarmRestart, "stuck-exec")
		Eventually(func() bool {
			_, busy := op.reconciler.Tasks.Busy(a)
			return busy
		}, timeout, poll).Should(BeTrue(), "the exec runs in the background")
		start := time.Now()
		setPausedSpec(b, true)
		waitPaused(b)
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		_, busy := op.reconciler.Tasks.Busy(a)
		Expect(busy).To(BeTrue(), "the hung exec was still hanging when the other pause was acknowledged")
		release()
	})
})

// Background work never races a reconcile of its own cluster: while a warm restart's exec is in
// flight, the cluster is reconciled again and again by several workers, yet no second exec starts
// and the pod is not recorded done; once the exec ends, every pod is restarted exactly once.
var _ = Describe("A task in flight", Label("way-forward"), func() {
	It("is never raced by a reconcile of its own cluster", func() {
		ns, w := newNamespace()
		held, release := gate()
		var inFlight, most, calls atomic.Int32
		w.signalErr = func(string) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if calls.Add(1) == 1 {
				<-held // the first exec hangs until released
			}
			return nil
		}
		w.workers = 4
		// An attempt whose outcome is unknown is settled after 500 ms: a reconcile that did not see
		// the task in flight would then act again.
		op := startOperator(w, operations.Config{SettleDelay: 500 * time.Millisecond})
		key := create(sampleCluster(ns, "busy", 3))
		waitRunning(key)
		setOperation(key, ackov1alpha1.OperationWarmRestart, "held")
		Eventually(func() bool { _, busy := op.reconciler.Tasks.Busy(key); return busy }, timeout, poll).Should(BeTrue())
		for range 20 {
			w.wake() // a reconcile of the cluster, as the prober's wake-up would
			Eventually(func() int { return len(w.events) }, timeout, poll).Should(BeZero())
			time.Sleep(100 * time.Millisecond)
		}
		Consistently(func() []string { return operationStatus(key).CompletedPods }, 2*time.Second, poll).Should(BeEmpty())
		Expect(calls.Load()).To(Equal(int32(1)), "a reconcile started a second exec while the first was in flight")
		release()
		waitOperation(key, "held", ackov1alpha1.OperationCompleted)
		Expect(w.warmRestarts("busy-0") + w.warmRestarts("busy-1") + w.warmRestarts("busy-2")).To(Equal(3))
		Expect(most.Load()).To(Equal(int32(1)), "two execs of one cluster ran at once")
	})
})
