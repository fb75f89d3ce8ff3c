package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/test/testenv"
)

// eventMessages lists the messages of the cluster's events with the given reason, oldest first.
func eventMessages(key types.NamespacedName, reason string) []string {
	out, err := testenv.EventMessages(k8s, key, reason)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return out
}

var _ = Describe("AerospikeCluster lifecycle", func() {
	var (
		ns string
		w  *world
		op *operator
	)

	BeforeEach(func() {
		ns, w = newNamespace()
		op = startOperator(w, operations.Config{})
	})

	It("creates the children, reaches Running with Ready=True, and records the pods", func() {
		key := create(sampleCluster(ns, "alpha", 3))
		waitRunning(key)
		ctx := context.Background()
		for _, obj := range []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "alpha-config"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "alpha-headless"}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}},
			&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}},
		} {
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: obj.GetName()}, obj)).To(Succeed(), "%T", obj)
			Expect(obj.GetOwnerReferences()).To(ContainElement(HaveField("Name", "alpha")), "%T owned", obj)
		}
		c := fetch(key)
		Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		Expect(c.Status.Size).To(Equal(int32(3)))
		Expect(c.Status.ReadyPods).To(Equal(int32(3)))
		Expect(c.Status.Selector).To(ContainSubstring("app.kubernetes.io/instance=alpha"))
		Expect(c.Status.Pods).To(HaveLen(3))
		Expect(c.Status.Pods["alpha-0"].PodIP).NotTo(BeEmpty())
		Expect(c.Status.Pods["alpha-0"].Image).To(Equal("aerospike:ce-8.1.1.1"))
		ready := condition(key, ackov1alpha1.ConditionReady)()
		Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		Expect(ready.ObservedGeneration).To(Equal(c.Generation))
		Expect(condition(key, ackov1alpha1.ConditionReconciling)().Status).To(Equal(metav1.ConditionFalse))
	})

	It("writes nothing when a healthy, unchanged cluster is reconciled again", func() {
		key := create(sampleCluster(ns, "quiet", 3))
		waitRunning(key)
		Eventually(func() int { return op.writes.count() }).WithTimeout(timeout).Should(BeNumerically(">", 0))
		waitWritesSettled(op)
		before := op.writes.count()
		for range 10 {
			res, err := op.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.RequeueAfter).To(BeZero(), "a steady cluster needs no periodic requeue")
		}
		Expect(op.writes.list()[before:]).To(BeEmpty())
	})

	It("scales up at once and down one batch at a time, only while Aerospike is stable", func() {
		key := create(sampleCluster(ns, "scale", 3))
		waitRunning(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 5 })
		waitRunning(key)
		Expect(podUIDs(key)).To(HaveLen(5))

		w.set(func(w *world) { w.migrating = true })
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 2 })
		// Migrating nodes are Ready (they serve); ClusterStable holds the scale down.
		Eventually(condition(key, ackov1alpha1.ConditionReconciling), timeout, poll).Should(
			HaveField("Message", ContainSubstring("Scale down of scale held by check ClusterStable")))
		Consistently(func() int { return len(podUIDs(key)) }, time.Second, poll).Should(Equal(5))

		var mu sync.Mutex
		var seen []int32
		observed := func() []int32 {
			mu.Lock()
			defer mu.Unlock()
			return append([]int32(nil), seen...)
		}
		stop := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			for {
				sts := &appsv1.StatefulSet{}
				if k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "scale"}, sts) == nil {
					mu.Lock()
					if r := ptr.Deref(sts.Spec.Replicas, 0); len(seen) == 0 || seen[len(seen)-1] != r {
						seen = append(seen, r)
					}
					mu.Unlock()
				}
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		Eventually(observed, timeout, poll).Should(Equal([]int32{5}))
		w.set(func(w *world) { w.migrating = false })
		waitRunning(key)
		close(stop)
		Expect(podUIDs(key)).To(HaveLen(2))
		Expect(podUIDs(key)).To(HaveKey("scale-0"))
		Expect(podUIDs(key)).To(HaveKey("scale-1"))
		Expect(observed()).To(Equal([]int32{5, 4, 3, 2}), "one pod per step with batch size 1")
	})

	DescribeTable("rolls every pod with the right reason, in batches capped to replication-factor − 1",
		func(batch, rf int64, change func(*ackov1alpha1.AerospikeCluster), reason ackov1alpha1.RestartReason,
			inPlace bool, wantBatches []int) {
			key := create(sampleCluster(ns, "roll", 3))
			update(key, func(c *ackov1alpha1.AerospikeCluster) {
				c.Spec.RollingUpdateBatchSize = ptr.To(int32(batch))
				c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = rf
			})
			waitRunning(key)
			before := podUIDs(key)
			update(key, change)
			Eventually(func() int {
				done := 0
				for name, uid := range podUIDs(key) {
					if before[name] != uid || inPlace && w.warmRestarts(name) == 1 {
						done++
					}
				}
				return done
			}, timeout, poll).Should(Equal(3))
			waitRunning(key)
			c := fetch(key)
			for name := range before {
				Expect(c.Status.Pods[name].LastRestartReason).To(Equal(reason), name)
				Expect(c.Status.Pods[name].LastRestartTime).NotTo(BeNil())
				Expect(c.Status.Pods[name].Update).To(BeNil())
				Expect(c.Status.Pods[name].ConfigHash).To(Equal(c.Status.Pods["roll-0"].ConfigHash))
			}
			if inPlace {
				Expect(podUIDs(key)).To(Equal(before), "a config change restarts asd in place: same pods")
			}
			var sizes []int
			Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventRollingRestartStarted) }).
				WithTimeout(timeout).Should(HaveLen(len(wantBatches)))
			for _, m := range eventMessages(key, ackov1alpha1.EventRollingRestartStarted) {
				sizes = append(sizes, strings.Count(m, "("+string(reason)))
			}
			Expect(sizes).To(Equal(wantBatches))
		},
		Entry("config, restarted in place one by one", int64(1), int64(2), func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.AerospikeConfig.Value["service"] = map[string]any{"proto-fd-max": int64(20000)}
		}, ackov1alpha1.RestartReasonConfigChanged, true, []int{1, 1, 1}),
		Entry("image, batch 2 capped to one at replication-factor 2", int64(2), int64(2), func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Image = "aerospike:ce-8.1.2.0"
		}, ackov1alpha1.RestartReasonImageChanged, false, []int{1, 1, 1}),
		Entry("image, two at a time at replication-factor 3", int64(2), int64(3), func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Image = "aerospike:ce-8.1.2.0"
		}, ackov1alpha1.RestartReasonImageChanged, false, []int{2, 1}),
		Entry("pod spec", int64(1), int64(2), func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.PodSpec = &ackov1alpha1.PodOverrides{Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}}
		}, ackov1alpha1.RestartReasonPodSpecChanged, false, []int{1, 1, 1}),
	)

	It("holds a rolling restart while a safety check fails, and says which", func() {
		key := create(sampleCluster(ns, "held", 3))
		waitRunning(key)
		before := podUIDs(key)
		w.set(func(w *world) { w.migrating = true })
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })
		// Migrating nodes are Ready (they serve); ClusterStable holds the roll.
		Eventually(condition(key, ackov1alpha1.ConditionReconciling), timeout, poll).Should(And(
			HaveField("Reason", ackov1alpha1.ReasonRestartBlocked),
			HaveField("Message", ContainSubstring("Rolling restart held by check ClusterStable"))))
		Expect(budgetOf(key)()).To(Equal("0"), "no drain while nodes migrate")
		Expect(condition(key, ackov1alpha1.ConditionReady)()).To(HaveField("Status", metav1.ConditionFalse))
		Consistently(func() map[string]types.UID { return podUIDs(key) }, time.Second, poll).Should(Equal(before))
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventRollingRestartBlocked) }).
			WithTimeout(timeout).ShouldNot(BeEmpty())
		w.set(func(w *world) { w.migrating = false })
		waitRunning(key)
		Expect(fetch(key).Status.Pods["held-0"].LastRestartReason).To(Equal(ackov1alpha1.RestartReasonImageChanged))
	})

	It("never claims Ready while a pod is down or migrations run", func() {
		key := create(sampleCluster(ns, "honest", 3))
		waitRunning(key)
		w.set(func(w *world) { w.holdReady["honest-1"] = true })
		Expect(k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "honest-1"}})).To(Succeed())
		Eventually(condition(key, ackov1alpha1.ConditionReady), timeout, poll).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", ackov1alpha1.ReasonPodsNotReady)))
		Expect(phaseOf(key)()).To(Equal(ackov1alpha1.PhaseReconciling))
		w.set(func(w *world) { delete(w.holdReady, "honest-1"); w.migrating = true })
		// Migrating nodes serve: their pods are Ready, the cluster is not (and the budget allows no drain).
		Eventually(condition(key, ackov1alpha1.ConditionReady), timeout, poll).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", ackov1alpha1.ReasonAerospikeNotStable)))
		Eventually(gateOf(ns, "honest-0"), timeout, poll).Should(Equal(gateReady))
		Expect(budgetOf(key)()).To(Equal("0"))
		w.set(func(w *world) { w.migrating = false })
		waitRunning(key)
	})

	It("opens the circuit breaker after repeated failures and closes it on success", func() {
		op.reconciler.Backoff = Backoff{Retry: 10 * time.Millisecond, Breaker: 50 * time.Millisecond, Max: 200 * time.Millisecond}
		op.writes.setFail(func(verb string, obj client.Object) error {
			if _, ok := obj.(*corev1.ConfigMap); ok && verb == "create" {
				return errors.New("injected failure")
			}
			return nil
		})
		key := create(sampleCluster(ns, "breaker", 3))
		Eventually(condition(key, ackov1alpha1.ConditionCircuitBreakerOpen), timeout, poll).Should(
			HaveField("Status", metav1.ConditionTrue))
		c := fetch(key)
		Expect(c.Status.Phase).To(Equal(ackov1alpha1.PhaseError))
		Expect(c.Status.CircuitBreaker.ConsecutiveFailures).To(BeNumerically(">=", 5))
		Expect(condOf(c, ackov1alpha1.ConditionReconcileFailed).Message).To(ContainSubstring("injected failure"))
		op.writes.setFail(nil)
		waitRunning(key)
		c = fetch(key)
		Expect(c.Status.CircuitBreaker).To(BeNil())
		Expect(condOf(c, ackov1alpha1.ConditionCircuitBreakerOpen)).To(BeNil())
		Expect(condOf(c, ackov1alpha1.ConditionReconcileFailed)).To(BeNil())
	})

	It("never adopts a child it does not own, and reports the conflict", func() {
		foreign := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
			Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "busybox"}}},
				},
			},
		}
		Expect(k8s.Create(context.Background(), foreign)).To(Succeed())
		key := create(sampleCluster(ns, "taken", 1))
		Eventually(condition(key, ackov1alpha1.ConditionReconcileFailed), timeout, poll).Should(And(
			HaveField("Reason", ackov1alpha1.ReasonChildConflict), HaveField("Message", ContainSubstring("StatefulSet taken"))))
		Expect(phaseOf(key)()).To(Equal(ackov1alpha1.PhaseError))
		after := &appsv1.StatefulSet{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(foreign), after)).To(Succeed())
		Expect(after.OwnerReferences).To(BeEmpty())
		Expect(after.Spec.Template.Spec.Containers[0].Image).To(Equal("busybox"))
	})

	It("stops probing a deleted cluster", func() {
		key := create(sampleCluster(ns, "gone", 1))
		waitRunning(key)
		w.mu.Lock()
		Expect(w.probed).To(HaveKey(key))
		w.mu.Unlock()
		Expect(k8s.Delete(context.Background(), fetch(key))).To(Succeed())
		Eventually(func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			_, ok := w.probed[key]
			return ok
		}, timeout, poll).Should(BeFalse())
	})
})

func condOf(c *ackov1alpha1.AerospikeCluster, typ string) *metav1.Condition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == typ {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}
