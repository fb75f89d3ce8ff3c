package cluster

import (
	"context"
	"errors"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/resources"
)

// gateOf is a pod's readiness gate as "Status/Reason" ("" while unset).
func gateOf(namespace, pod string) func() string {
	return func() string {
		p := &corev1.Pod{}
		if k8s.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: pod}, p) != nil {
			return ""
		}
		if g := resources.GateCondition(p); g != nil {
			return string(g.Status) + "/" + g.Reason
		}
		return ""
	}
}

// budgetOf is the cluster's PodDisruptionBudget's maxUnavailable ("" while it does not exist).
func budgetOf(key types.NamespacedName) func() string {
	return func() string {
		pdb := &policyv1.PodDisruptionBudget{}
		if k8s.Get(context.Background(), key, pdb) != nil || pdb.Spec.MaxUnavailable == nil {
			return ""
		}
		return pdb.Spec.MaxUnavailable.String()
	}
}

const gateReady = "True/" + aerospike.ReasonNodeReady

var _ = Describe("Readiness gates and the budget follow the readings whatever ends a reconcile early", func() {
	var (
		ns string
		w  *world
		op *operator
	)

	BeforeEach(func() {
		ns, w = newNamespace()
		op = startOperator(w, operations.Config{})
	})

	// crashAndComeBack: the asd of pod crashes (its node stops answering) and comes back empty, joins and
	// migrates. Its gate is False while it is down, True once it is a member again (it serves while it
	// migrates, and so do the others); the budget allows no disruption from the crash until migrations end.
	crashAndComeBack := func(key types.NamespacedName, pod string) {
		GinkgoHelper()
		Eventually(budgetOf(key), timeout, poll).Should(Equal("1"))
		w.set(func(w *world) { w.down[pod] = true })
		Eventually(gateOf(ns, pod), timeout, poll).Should(Equal("False/" + aerospike.ReasonNotAnswering))
		Eventually(budgetOf(key), timeout, poll).Should(Equal("0"))
		uid := podUIDs(key)[pod]
		w.set(func(w *world) {
			delete(w.down, pod)
			w.started[uid] = time.Now()
			w.migrating = true
		})
		Eventually(gateOf(ns, pod), timeout, poll).Should(Equal(gateReady), "rejoined: it serves while it migrates")
		Consistently(budgetOf(key), time.Second, poll).Should(Equal("0"), "no drain while the cluster migrates")
		for name := range podUIDs(key) {
			Expect(gateOf(ns, name)()).To(Equal(gateReady), "every member serves while partitions migrate: %s", name)
		}
		w.set(func(w *world) { w.migrating = false })
		Eventually(budgetOf(key), timeout, poll).Should(Equal("1"), "back once the cluster is stable")
	}

	It("while paused, changing nothing else", func() {
		key := create(sampleCluster(ns, "asleep", 3))
		waitRunning(key)
		setPausedSpec(key, true)
		waitPaused(key)
		waitWritesSettled(op)
		mark := op.writes.count()
		uids := podUIDs(key)
		crashAndComeBack(key, "asleep-1")
		for _, wr := range op.writes.list()[mark:] {
			Expect(wr).To(Or(HavePrefix("patch/status *v1.Pod "), HavePrefix("update *v1.PodDisruptionBudget ")),
				"while paused only the gates and the budget follow the readings")
		}
		Expect(podUIDs(key)).To(Equal(uids))
		Expect(phaseOf(key)()).To(Equal(ackov1alpha1.PhasePaused))
	})

	It("while the circuit breaker backs off", func() {
		op.reconciler.Backoff = Backoff{Retry: 10 * time.Millisecond, Breaker: 10 * time.Minute, Max: 10 * time.Minute}
		key := create(sampleCluster(ns, "backoff", 3))
		waitRunning(key)
		failEvery[*appsv1.StatefulSet](op, "update")
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })
		Eventually(condition(key, ackov1alpha1.ConditionCircuitBreakerOpen), timeout, poll).Should(
			HaveField("Status", metav1.ConditionTrue))
		crashAndComeBack(key, "backoff-2")
		Expect(condition(key, ackov1alpha1.ConditionCircuitBreakerOpen)()).To(HaveField("Status", metav1.ConditionTrue),
			"still backing off: the gates and the budget did not wait for it")
	})

	It("while the spec cannot be applied", func() {
		key := create(sampleCluster(ns, "refused", 3))
		waitRunning(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike/aerospike-server-enterprise:8.1.2.0" })
		Eventually(condition(key, ackov1alpha1.ConditionStalled), timeout, poll).Should(
			HaveField("Reason", ackov1alpha1.ReasonInvalidSpec))
		crashAndComeBack(key, "refused-0")
	})
})

var _ = Describe("A failed reconcile", func() {
	It("never says Ready for a generation whose Service could not be applied", func() {
		ns, w := newNamespace()
		op := startOperator(w, operations.Config{})
		op.reconciler.Backoff = Backoff{Retry: 50 * time.Millisecond, Breaker: 100 * time.Millisecond, Max: 200 * time.Millisecond}
		key := create(sampleCluster(ns, "unapplied", 3))
		waitRunning(key)
		failEvery[*corev1.Service](op, "create")
		Expect(k8s.Delete(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unapplied"}})).
			To(Succeed())
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.RollingUpdateBatchSize = ptr.To[int32](2) })
		generation := fetch(key).Generation
		Eventually(condition(key, ackov1alpha1.ConditionReconcileFailed), timeout, poll).Should(
			HaveField("ObservedGeneration", generation))
		notApplied := And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", ackov1alpha1.ReasonReconcileError),
			HaveField("ObservedGeneration", generation))
		Eventually(condition(key, ackov1alpha1.ConditionReady), timeout, poll).Should(notApplied)
		Consistently(condition(key, ackov1alpha1.ConditionReady), time.Second, poll).Should(notApplied,
			"kubectl wait --for=condition=Ready must not pass on a spec that was not applied")
		op.writes.setFail(nil)
		waitRunning(key)
		Expect(condition(key, ackov1alpha1.ConditionReady)()).To(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("ObservedGeneration", generation)))
		Expect(strings.Join(op.writes.list(), "\n")).To(ContainSubstring("create *v1.Service unapplied"))
	})
})

// failEvery makes every write of kind T with the verb fail before it reaches the API server.
func failEvery[T client.Object](op *operator, verb string) {
	op.writes.setFail(func(v string, obj client.Object) error {
		if _, ok := obj.(T); ok && v == verb {
			return errors.New("injected failure")
		}
		return nil
	})
}
