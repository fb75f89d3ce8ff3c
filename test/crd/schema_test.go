package crd

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

var nameSeq int

func newCluster() *ackov1alpha1.AerospikeCluster {
	nameSeq++
	return testcluster.New("default", fmt.Sprintf("schema-%d", nameSeq), 3)
}

// expectInvalid creates the object and expects an Invalid error whose message contains want.
func expectInvalid(obj *ackov1alpha1.AerospikeCluster, want string) {
	err := k8s.Create(ctx, obj)
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	Expect(err.Error()).To(ContainSubstring(want))
}

var _ = Describe("AerospikeCluster schema", func() {
	It("accepts every sample", func() {
		samples, err := testcluster.Samples()
		Expect(err).NotTo(HaveOccurred())
		for _, s := range samples {
			obj := s.Cluster
			obj.Namespace = "default"
			Expect(k8s.Create(ctx, obj)).To(Succeed(), s.Path)
			Expect(obj.Spec.RollingUpdateBatchSize).To(Equal(ptr.To[int32](1)), "defaulted batch size")
		}
	})

	DescribeTable("static rules",
		func(mutate func(*ackov1alpha1.AerospikeCluster), want string) {
			obj := newCluster()
			mutate(obj)
			expectInvalid(obj, want)
		},
		Entry("size 0", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 0 },
			"spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"),
		Entry("size 9 (CE allows 8)", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 9 },
			"spec.size: Invalid value: 9: spec.size in body should be less than or equal to 8"),
		Entry("empty image", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "" },
			"spec.image: Invalid value: \"\": spec.image in body should be at least 1 chars long"),
		Entry("batch size 0", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.RollingUpdateBatchSize = ptr.To[int32](0) },
			"spec.rollingUpdateBatchSize: Invalid value: 0: spec.rollingUpdateBatchSize in body should be greater than or equal to 1"),
		Entry("unknown operation kind", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: "ColdBoot", ID: "x"}}
		}, `spec.operations[0].kind: Unsupported value: "ColdBoot": supported values: "WarmRestart", "PodRestart"`),
		Entry("duplicate rack ids", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1}, {ID: 1}}}
		}, `spec.rackConfig.racks[1]: Duplicate value: {"id":1}`),
		Entry("rack id 0", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 0}}}
		}, "spec.rackConfig.racks[0].id: Invalid value: 0: spec.rackConfig.racks[0].id in body should be greater than or equal to 1"),
	)

	DescribeTable("externalAccess: a field of another type is refused",
		func(access ackov1alpha1.ExternalAccess, want string) {
			obj := newCluster()
			obj.Spec.ExternalAccess = &access
			expectInvalid(obj, want)
		},
		Entry("nodeAddress with LoadBalancer", ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalLoadBalancer,
			NodeAddress: "ExternalIP"}, "nodeAddress applies to the NodePort and HostPort types"),
		Entry("hostPort with NodePort", ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalNodePort,
			HostPort: ptr.To[int32](4000)}, "hostPort applies to the HostPort type"),
		Entry("loadBalancerClass with NodePort", ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalNodePort,
			LoadBalancerClass: ptr.To("x")}, "loadBalancerClass applies to the LoadBalancer type"),
		Entry("serviceAnnotations with HostPort", ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalHostPort,
			ServiceAnnotations: map[string]string{"a": "b"}}, "serviceAnnotations apply to the NodePort and LoadBalancer types"),
		Entry("an unknown type", ackov1alpha1.ExternalAccess{Type: "Ingress"}, `spec.externalAccess.type: Unsupported value: "Ingress"`),
	)

	It("externalAccess: a LoadBalancer's class cannot change, as a Service's cannot", func() {
		obj := newCluster()
		obj.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalLoadBalancer, LoadBalancerClass: ptr.To("a")}
		Expect(k8s.Create(ctx, obj)).To(Succeed())
		Expect(obj.Spec.ExternalAccess.AdvertiseAs).To(Equal(ackov1alpha1.AdvertiseAlternate), "defaulted")
		obj.Spec.ExternalAccess.LoadBalancerClass = ptr.To("b")
		err := k8s.Update(ctx, obj)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("loadBalancerClass cannot change while the type stays LoadBalancer"))
		obj.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalNodePort}
		Expect(k8s.Update(ctx, obj)).To(Succeed(), "switching to NodePort drops the class")
	})

	Describe("the operations guide's rules, with its exact messages", func() {
		It("rejects more than one operation", func() {
			obj := newCluster()
			obj.Spec.Operations = []ackov1alpha1.OperationSpec{
				{Kind: ackov1alpha1.OperationWarmRestart, ID: "a"},
				{Kind: ackov1alpha1.OperationPodRestart, ID: "b"},
			}
			expectInvalid(obj, "spec.operations: Invalid value: only one operation allowed")
		})

		DescribeTable("rejects an id outside 1-20 characters",
			func(id string) {
				obj := newCluster()
				obj.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: id}}
				expectInvalid(obj, fmt.Sprintf("spec.operations[0].id: Invalid value: %q: id must be between 1 and 20 characters", id))
			},
			Entry("empty", ""),
			Entry("21 characters", strings.Repeat("x", 21)),
		)

		It("accepts ids of 1 and 20 characters", func() {
			for _, id := range []string{"x", strings.Repeat("y", 20)} {
				obj := newCluster()
				obj.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: id}}
				Expect(k8s.Create(ctx, obj)).To(Succeed())
			}
		})

		Context("while an operation is InProgress", func() {
			var obj *ackov1alpha1.AerospikeCluster

			BeforeEach(func() {
				obj = newCluster()
				obj.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "reload-1"}}
				Expect(k8s.Create(ctx, obj)).To(Succeed())
				obj.Status.OperationStatus = &ackov1alpha1.OperationStatus{
					ID: "reload-1", Kind: ackov1alpha1.OperationWarmRestart, Phase: ackov1alpha1.OperationInProgress,
				}
				Expect(k8s.Status().Update(ctx, obj)).To(Succeed())
			})

			DescribeTable("rejects any change to spec.operations",
				func(mutate func(*ackov1alpha1.AerospikeCluster)) {
					mutate(obj)
					err := k8s.Update(ctx, obj)
					Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
					Expect(err.Error()).To(ContainSubstring(
						"spec.operations: Invalid value: cannot modify operations while InProgress"))
					stored := &ackov1alpha1.AerospikeCluster{}
					Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
					Expect(stored.Spec.Operations).To(Equal([]ackov1alpha1.OperationSpec{
						{Kind: ackov1alpha1.OperationWarmRestart, ID: "reload-1"}}))
				},
				Entry("a new id", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Operations[0].ID = "reload-2" }),
				Entry("a podList", func(c *ackov1alpha1.AerospikeCluster) {
					c.Spec.Operations[0].PodList = []string{c.Name + "-0"}
				}),
				Entry("removal", func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Operations = nil }),
			)

			It("still accepts status writes and other spec changes", func() {
				obj.Status.OperationStatus.CompletedPods = []string{obj.Name + "-0"}
				Expect(k8s.Status().Update(ctx, obj)).To(Succeed())
				obj.Spec.Size = 4
				Expect(k8s.Update(ctx, obj)).To(Succeed())
			})

			It("accepts changes once the operation ended", func() {
				obj.Status.OperationStatus.Phase = ackov1alpha1.OperationCompleted
				Expect(k8s.Status().Update(ctx, obj)).To(Succeed())
				obj.Spec.Operations = nil
				Expect(k8s.Update(ctx, obj)).To(Succeed())
			})
		})
	})
})
