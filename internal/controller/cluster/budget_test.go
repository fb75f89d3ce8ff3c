package cluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

var _ = Describe("spec.disruptionBudget", func() {
	var (
		ns string
		w  *world
	)

	BeforeEach(func() {
		ns, w = newNamespace()
		startOperator(w, operations.Config{})
	})

	image := func(tag string) func(*ackov1alpha1.AerospikeCluster) {
		return func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = tag }
	}

	It("caps the budget below the factor's allowance, or removes it, and the operator's restarts keep the rule", func() {
		c := sampleCluster(ns, "budget", 3)
		c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = int64(3)
		c.Spec.RollingUpdateBatchSize = ptr.To[int32](2)
		key := create(c)
		waitRunning(key)
		Eventually(budgetOf(key), timeout, poll).Should(Equal("2"), "replication-factor 3: two may go")

		By("a cap of 1: the budget and the operator's batches take one pod at a time")
		update(key, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{MaxUnavailable: ptr.To[int32](1)}
		})
		Eventually(budgetOf(key), timeout, poll).Should(Equal("1"))
		Expect(rolled(key, ackov1alpha1.RestartReasonImageChanged, image("aerospike:ce-8.1.2.0"))).To(Equal([]int{1, 1, 1}))
		Expect(budgetOf(key)()).To(Equal("1"))

		By("no budget: it is removed, and the operator's restarts still take at most replication-factor − 1")
		update(key, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.DisruptionBudget = &ackov1alpha1.DisruptionBudgetSpec{Disabled: true}
		})
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(context.Background(), key, &policyv1.PodDisruptionBudget{}))
		}, timeout, poll).Should(BeTrue())
		Expect(rolled(key, ackov1alpha1.RestartReasonImageChanged, image("aerospike:ce-8.1.1.1"))).To(Equal([]int{2, 1}))
		Expect(apierrors.IsNotFound(k8s.Get(context.Background(), key, &policyv1.PodDisruptionBudget{}))).To(BeTrue())

		By("the budget comes back when asked")
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.DisruptionBudget = nil })
		Eventually(budgetOf(key), timeout, poll).Should(Equal("2"))
	})
})
