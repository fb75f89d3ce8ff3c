package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

func setPausedSpec(key types.NamespacedName, paused bool) {
	update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = paused })
}

// waitPaused waits until the Paused condition is True for the current generation, as
// `kubectl wait --for=condition=Paused` does.
func waitPaused(key types.NamespacedName) {
	EventuallyWithOffset(1, func() bool {
		c := &ackov1alpha1.AerospikeCluster{}
		if k8s.Get(context.Background(), key, c) != nil {
			return false
		}
		p := condOf(c, ackov1alpha1.ConditionPaused)
		return c.Status.Phase == ackov1alpha1.PhasePaused && p != nil && p.Status == metav1.ConditionTrue &&
			p.ObservedGeneration == c.Generation
	}, timeout, poll).Should(BeTrue())
}

// exceptGuards drops the writes of the guards that follow the readings (pod gates, the budget).
func exceptGuards(writes []string) []string {
	return slices.DeleteFunc(slices.Clone(writes), func(wr string) bool {
		return strings.HasPrefix(wr, "patch/status *v1.Pod ") || strings.Contains(wr, "*v1.PodDisruptionBudget ")
	})
}

// statusPhasesSince lists the phases the operator wrote to the cluster's status in writes begun after
// mark (writeCounter.mark).
func statusPhasesSince(op *operator, name string, mark int) []string {
	var phases []string
	for _, wr := range op.writes.since(mark) {
		if strings.Contains(wr, "update/status") && strings.Contains(wr, " "+name+" ") {
			phases = append(phases, wr[strings.Index(wr, "phase=")+len("phase="):])
		}
	}
	return phases
}

var _ = Describe("Pause and resume (ADR-0018)", func() {
	var (
		ns string
		w  *world
		op *operator
	)

	BeforeEach(func() {
		ns, w = newNamespace()
		op = startOperator(w, operations.Config{})
	})

	It("acknowledges the pause with the exact condition, and writes and requeues nothing afterwards", func() {
		key := create(sampleCluster(ns, "calm", 3))
		waitRunning(key)
		setPausedSpec(key, true)
		waitPaused(key)
		c := fetch(key)
		p := condOf(c, ackov1alpha1.ConditionPaused)
		Expect(p.Reason).To(Equal("UserRequested"))
		Expect(p.Message).To(Equal("Cluster paused by user"))
		Expect(condOf(c, ackov1alpha1.ConditionPendingChanges)).To(BeNil())
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventPaused) }).WithTimeout(timeout).Should(HaveLen(1))

		// The guards (readiness gates, the budget's maxUnavailable) follow the readings while paused, so a
		// reading that changes (a slow answer on a loaded machine) may write them, one request each; nothing
		// else is written.
		before := op.writes.count()
		Consistently(func() []string { return exceptGuards(op.writes.list()[before:]) }, 2*time.Second, 100*time.Millisecond).
			Should(BeEmpty())
		mark, requests := op.writes.count(), op.requests.Load()
		for range 10 {
			res, err := op.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			Expect(err).NotTo(HaveOccurred())
			Expect(res).To(Equal(ctrl.Result{}), "a paused cluster is not requeued")
		}
		guards := op.writes.list()[mark:]
		Expect(exceptGuards(guards)).To(BeEmpty())
		Expect(op.requests.Load()).To(BeNumerically("<=", requests+int64(len(guards))),
			"paused reconciles read the cache only (and write a guard whose reading changed)")
		Expect(eventMessages(key, ackov1alpha1.EventPaused)).To(HaveLen(1), "events on transitions only")
		w.mu.Lock()
		Expect(w.probed[key].Targets).To(HaveLen(3), "a paused cluster is still probed: its gates and budget follow the readings")
		w.mu.Unlock()
	})

	It("ends Paused even when the status write fails with conflicts and then errors, retrying 10s later", func() {
		key := create(sampleCluster(ns, "stubborn", 3))
		waitRunning(key)
		conflict := apierrors.NewConflict(schema.GroupResource{Group: "acko.io", Resource: "aerospikeclusters"}, key.Name, errors.New("injected"))
		attempts := 0
		op.writes.setFail(func(verb string, obj client.Object) error {
			if verb != "update/status" || obj.GetName() != key.Name {
				return nil
			}
			attempts++
			if attempts <= 5 {
				return conflict // exhausts retry.DefaultRetry
			}
			return errors.New("injected API server error")
		})
		mark := op.writes.mark()
		setPausedSpec(key, true)
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventStatusWriteFailed) }).
			WithTimeout(timeout).ShouldNot(BeEmpty())
		Expect(attempts).To(BeNumerically(">=", 5))

		res, err := op.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
		Expect(err).NotTo(HaveOccurred(), "RequeueAfter is only honoured with a nil error")
		Expect(res.RequeueAfter).To(Equal(10 * time.Second))

		failedAt := time.Now()
		op.writes.setFail(nil)
		waitPaused(key)
		Expect(time.Since(failedAt)).To(BeNumerically("<", 12*time.Second))
		Expect(statusPhasesSince(op, key.Name, mark)).NotTo(ContainElement("Running"),
			"no write after the pause request sets Running")
		Expect(statusPhasesSince(op, key.Name, mark)).To(ContainElement("Paused"), "writes: %v", op.writes.since(mark))
	})

	It("removes a ReconcileFailed from before the pause on resume, then goes Reconciling and Running", func() {
		op.reconciler.Backoff = Backoff{Retry: 20 * time.Millisecond, Breaker: 100 * time.Millisecond, Max: 200 * time.Millisecond}
		op.writes.setFail(func(verb string, obj client.Object) error {
			if _, ok := obj.(*corev1.Service); ok && verb == "create" {
				return errors.New("injected failure")
			}
			return nil
		})
		key := create(sampleCluster(ns, "scarred", 3))
		Eventually(condition(key, ackov1alpha1.ConditionCircuitBreakerOpen), timeout, poll).ShouldNot(BeNil())
		setPausedSpec(key, true)
		waitPaused(key)
		c := fetch(key)
		Expect(c.Status.Phase).To(Equal(ackov1alpha1.PhasePaused), "while paused, Paused decides the phase")
		Expect(condOf(c, ackov1alpha1.ConditionReconcileFailed)).NotTo(BeNil())

		op.writes.setFail(nil)
		mark := op.writes.mark()
		setPausedSpec(key, false)
		waitRunning(key)
		c = fetch(key)
		for _, t := range []string{ackov1alpha1.ConditionReconcileFailed, ackov1alpha1.ConditionPaused,
			ackov1alpha1.ConditionCircuitBreakerOpen, ackov1alpha1.ConditionPendingChanges} {
			Expect(condOf(c, t)).To(BeNil(), t)
		}
		Expect(c.Status.CircuitBreaker).To(BeNil(), "resume resets the breaker")
		phases := statusPhasesSince(op, key.Name, mark)
		Expect(phases).NotTo(BeEmpty())
		Expect(phases[0]).To(Equal("Reconciling"))
		Expect(phases[len(phases)-1]).To(Equal("Running"))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventResumed) }).WithTimeout(timeout).Should(HaveLen(1))
	})

	It("does not act on spec changes while paused, says they are pending, and applies them on resume", func() {
		key := create(sampleCluster(ns, "later", 3))
		waitRunning(key)
		before := podUIDs(key)
		applied := fetch(key).Status.AppliedSpecHash
		setPausedSpec(key, true)
		waitPaused(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })
		Eventually(condition(key, ackov1alpha1.ConditionPendingChanges), timeout, poll).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", ackov1alpha1.ReasonSpecChangedWhilePaused)))
		waitPaused(key)
		Expect(condition(key, ackov1alpha1.ConditionPaused)().Message).To(Equal("Cluster paused by user"))
		Consistently(func() map[string]types.UID { return podUIDs(key) }, 2*time.Second, poll).Should(Equal(before))
		sts := &appsv1.StatefulSet{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "later"}, sts)).To(Succeed())
		Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("aerospike:ce-8.1.1.1"))
		c := fetch(key)
		Expect(c.Status.AppliedSpecHash).To(Equal(applied), "the change is not applied")
		Expect(c.Status.ObservedGeneration).To(Equal(c.Generation), "observed and held: kstatus Current")
		Expect(condOf(c, ackov1alpha1.ConditionReady)).To(BeNil(), "readiness is not tracked while paused")
		Expect(kstatusOf(c)).To(Equal(kstatus.CurrentStatus))

		setPausedSpec(key, false)
		waitRunning(key)
		c = fetch(key)
		Expect(condOf(c, ackov1alpha1.ConditionPendingChanges)).To(BeNil())
		for name, uid := range podUIDs(key) {
			Expect(uid).NotTo(Equal(before[name]))
			Expect(c.Status.Pods[name].LastRestartReason).To(Equal(ackov1alpha1.RestartReasonImageChanged))
		}
	})

	It("stops a rolling restart at the next pod boundary and restarts each pod exactly once overall", func() {
		key := create(sampleCluster(ns, "midway", 3))
		waitRunning(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })
		Eventually(func() int { return w.creations()["midway-2"] }, timeout, poll).Should(Equal(2))
		setPausedSpec(key, true)
		waitPaused(key)
		paused := w.creations()
		Consistently(w.creations, 2*time.Second, poll).Should(Equal(paused), "no pod restarted while paused")
		setPausedSpec(key, false)
		waitRunning(key)
		Expect(w.creations()).To(Equal(map[string]int{"midway-0": 2, "midway-1": 2, "midway-2": 2}))
		for name, p := range fetch(key).Status.Pods {
			Expect(p.LastRestartReason).To(Equal(ackov1alpha1.RestartReasonImageChanged), name)
		}
	})

	It("lets a paused cluster be deleted", func() {
		key := create(sampleCluster(ns, "bye", 1))
		waitRunning(key)
		setPausedSpec(key, true)
		waitPaused(key)
		Expect(k8s.Delete(context.Background(), fetch(key))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(context.Background(), key, &ackov1alpha1.AerospikeCluster{}))
		}, timeout, poll).Should(BeTrue())
	})
})
