package v1alpha1

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

var nameSeq int

// newCluster is a valid 3-pod cluster with the operations guide's namespace.
func newCluster() *ackov1alpha1.AerospikeCluster {
	nameSeq++
	return testcluster.New("default", fmt.Sprintf("wh-%d", nameSeq), 3)
}

// expectDenied expects the webhook's 422 Invalid answer listing exactly the given field errors, in order.
func expectDenied(err error, want ...string) {
	GinkgoHelper()
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	Expect(err.Error()).To(HavePrefix(`admission webhook "vaerospikecluster-v1alpha1.kb.io" denied the request: `))
	causes := err.(apierrors.APIStatus).Status().Details.Causes
	got := make([]string, 0, len(causes))
	for _, c := range causes {
		got = append(got, c.Field+": "+c.Message)
	}
	Expect(got).To(Equal(want))
	for _, w := range want {
		Expect(err.Error()).To(ContainSubstring(w))
	}
}

func expectNotStored(c *ackov1alpha1.AerospikeCluster) {
	GinkgoHelper()
	err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &ackov1alpha1.AerospikeCluster{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "want NotFound, got %v", err)
}

func expectStoredSpec(c *ackov1alpha1.AerospikeCluster, spec ackov1alpha1.AerospikeClusterSpec) {
	GinkgoHelper()
	stored := &ackov1alpha1.AerospikeCluster{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), stored)).To(Succeed())
	Expect(stored.Spec).To(Equal(spec))
}

const notAPod = "not a pod of this cluster: pod names follow "

var _ = Describe("AerospikeCluster webhook", func() {
	BeforeEach(func() { warnings.take() })

	It("accepts every sample without a warning", func() {
		samples, err := testcluster.Samples()
		Expect(err).NotTo(HaveOccurred())
		for _, s := range samples {
			obj := s.Cluster
			obj.Namespace = "default"
			Expect(k8s.Create(ctx, obj)).To(Succeed(), s.Path)
		}
		Expect(warnings.take()).To(BeEmpty())
	})

	It("refuses podList names that cannot be pods of the cluster, and stores nothing", func() {
		c := newCluster()
		c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationPodRestart, ID: "fix-pod",
			PodList: []string{c.Name + "-2", c.Name + "-3", "aerospike-3node-0"}}}
		hint := fmt.Sprintf("<cluster>-<ordinal> (%[1]s-0, %[1]s-1, %[1]s-2)", c.Name)
		expectDenied(k8s.Create(ctx, c),
			fmt.Sprintf(`spec.operations[0].podList[1]: Invalid value: "%s-3": %s%s`, c.Name, notAPod, hint),
			`spec.operations[0].podList[2]: Invalid value: "aerospike-3node-0": `+notAPod+hint)
		expectNotStored(c)
	})

	It("names the multi-rack pattern for a multi-rack cluster", func() {
		c := newCluster()
		c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1}, {ID: 2}}}
		c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "reload-rack-1",
			PodList: []string{c.Name + "-1-0", c.Name + "-0"}}}
		expectDenied(k8s.Create(ctx, c), fmt.Sprintf(
			`spec.operations[0].podList[1]: Invalid value: "%[1]s-0": %[2]s<cluster>-<rackID>-<ordinal> (%[1]s-1-0, %[1]s-1-1, %[1]s-2-0)`,
			c.Name, notAPod))
	})

	It("refuses aerospikeConfig that cannot render", func() {
		c := newCluster()
		c.Spec.AerospikeConfig.Value["security"] = map[string]any{}
		expectDenied(k8s.Create(ctx, c), "spec.aerospikeConfig.security: Forbidden: security (access control) is "+
			"Enterprise-only: Aerospike Community Edition does not support it")
		expectNotStored(c)
	})

	It("lists every violation of one request", func() {
		c := newCluster()
		c.Spec.Image = "aerospike/aerospike-server-enterprise:8.1.1.1"
		c.Spec.AerospikeConfig.Value["xdr"] = map[string]any{}
		c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "r",
			PodList: []string{"nope"}}}
		expectDenied(k8s.Create(ctx, c),
			`spec.image: Invalid value: "aerospike/aerospike-server-enterprise:8.1.1.1": Aerospike Enterprise images are `+
				`not supported: ACKO runs Aerospike Community Edition (CE) only; use a CE image such as aerospike:ce-8.1.1.1`,
			"spec.aerospikeConfig.xdr: Forbidden: XDR is Enterprise-only: Aerospike Community Edition does not support it",
			fmt.Sprintf(`spec.operations[0].podList[0]: Invalid value: "nope": %s<cluster>-<ordinal> (%[2]s-0, %[2]s-1, %[2]s-2)`,
				notAPod, c.Name))
	})

	It("shows warnings for risky but legal specs to the client", func() {
		c := newCluster()
		c.Spec.Size = 1
		c.Spec.RollingUpdateBatchSize = ptr.To[int32](2)
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Expect(warnings.take()).To(Equal([]string{
			"spec.rollingUpdateBatchSize: 2 is more than replication-factor − 1 allows: batches are capped at 1 pod(s) " +
				"(the smallest replication-factor is 2, counting no more copies than nodes), so that never two copies of a " +
				"partition are down at once",
			`namespace "test": replication-factor 2 is greater than the cluster size 1: Aerospike keeps only 1 copies ` +
				"until the cluster grows",
		}))
	})

	Describe("sidecars, checked on the raw request", func() {
		sidecarCluster := func(sidecar map[string]any) *unstructured.Unstructured {
			c := newCluster()
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(ackov1alpha1.GroupVersion.String())
			u.SetKind("AerospikeCluster")
			u.SetName(c.Name)
			u.SetNamespace(c.Namespace)
			u.Object["spec"] = map[string]any{
				"size": int64(3), "image": c.Spec.Image, "aerospikeConfig": c.Spec.AerospikeConfig.Value,
				"podSpec": map[string]any{"sidecars": []any{sidecar}},
			}
			return u
		}

		It("refuses a field a container does not have", func() {
			u := sidecarCluster(map[string]any{"name": "exporter", "image": "exporter:1", "imagePullPolice": "Always"})
			expectDenied(k8s.Create(ctx, u), `spec.podSpec.sidecars[0]: Invalid value: "imagePullPolice": unknown field: `+
				"a sidecar is a Kubernetes container (see kubectl explain pod.spec.containers)")
		})

		It("refuses a sidecar the operator could not decode, so it never reaches the operator's watch", func() {
			u := sidecarCluster(map[string]any{"name": "exporter", "image": "exporter:1", "ports": "9145"})
			err := k8s.Create(ctx, u)
			Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "want BadRequest, got %v", err)
			Expect(err.Error()).To(ContainSubstring("cannot unmarshal"))
			expectNotStored(&ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: "default"}})
		})

		It("accepts a valid sidecar", func() {
			Expect(k8s.Create(ctx, sidecarCluster(map[string]any{"name": "exporter", "image": "exporter:1"}))).To(Succeed())
		})
	})

	Describe("updates", func() {
		var c *ackov1alpha1.AerospikeCluster

		BeforeEach(func() {
			c = newCluster()
			c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{
				{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("1Gi")}}}
			Expect(k8s.Create(ctx, c)).To(Succeed())
		})

		It("refuses a volume claim template change, and keeps the stored spec", func() {
			stored := c.Spec.DeepCopy()
			c.Spec.Storage.Volumes[0].VolumeMode = corev1.PersistentVolumeBlock
			expectDenied(k8s.Update(ctx, c), `spec.storage.volumes: Forbidden: storage volumes cannot change on an `+
				`existing cluster (volume "data" volumeMode Filesystem -> Block): create a new cluster and migrate the data`)
			expectStoredSpec(c, *stored)
		})

		It("lets a volume grow only where its StorageClass allows expansion, and never shrink", func() {
			class := func(name string, allow bool) {
				sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/disk",
					AllowVolumeExpansion: &allow}
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, sc))).To(Succeed())
			}
			class("fixed", false)
			class("growing", true)
			c = newCluster()
			c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{
				{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("1Gi"), StorageClassName: ptr.To("fixed")}}}
			Expect(k8s.Create(ctx, c)).To(Succeed())
			bigger := c.DeepCopy()
			bigger.Spec.Storage.Volumes[0].Size = resource.MustParse("2Gi")
			expectDenied(k8s.Update(ctx, bigger), `spec.storage.volumes[data].size: Forbidden: volume "data" cannot grow: `+
				`StorageClass "fixed" does not allow volume expansion (allowVolumeExpansion); create a new cluster and migrate the data`)

			c = newCluster()
			c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{
				{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("1Gi"), StorageClassName: ptr.To("growing")}}}
			Expect(k8s.Create(ctx, c)).To(Succeed())
			bigger = c.DeepCopy()
			bigger.Spec.Storage.Volumes[0].Size = resource.MustParse("2Gi")
			Expect(k8s.Update(ctx, bigger)).To(Succeed())
			smaller := bigger.DeepCopy()
			smaller.Spec.Storage.Volumes[0].Size = resource.MustParse("1Gi")
			expectDenied(k8s.Update(ctx, smaller), `spec.storage.volumes: Forbidden: storage volumes cannot change on an `+
				`existing cluster (volume "data" size 2Gi -> 1Gi: a volume cannot shrink): create a new cluster and migrate the data`)
		})

		It("refuses switching from the single-rack to the multi-rack layout", func() {
			c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1}}}
			expectDenied(k8s.Update(ctx, c), "spec.rackConfig: Forbidden: cannot switch between the single-rack and the "+
				"multi-rack layout: every pod would change its name; create a new cluster and migrate the data")
		})

		It("refuses the config-truth issue's patches, each at its path with its rule", func() {
			patch := func(mutate func(cfg map[string]any)) error {
				u := c.DeepCopy()
				mutate(u.Spec.AerospikeConfig.Value)
				return k8s.Update(ctx, u)
			}
			expectDenied(patch(func(cfg map[string]any) { cfg["service"] = map[string]any{"proto-fd-max": "lots"} }),
				`spec.aerospikeConfig.service.proto-fd-max: Invalid value: "lots": must be an integer from 0 to 2147483647`)
			expectDenied(patch(func(cfg map[string]any) { cfg["service"] = map[string]any{"no-such-param": 1} }),
				"spec.aerospikeConfig.service.no-such-param: Forbidden: unknown parameter: Aerospike 8.1.1 does not have "+
					"it and refuses to start with it")
			expectDenied(patch(func(cfg map[string]any) {
				cfg["namespaces"].([]any)[0].(map[string]any)["bogus"] = 3
			}), "spec.aerospikeConfig.namespaces[0].bogus: Forbidden: unknown parameter: Aerospike 8.1.1 does not have "+
				"it and refuses to start with it")
			expectDenied(patch(func(cfg map[string]any) {
				for _, name := range []string{"b", "c"} {
					cfg["namespaces"] = append(cfg["namespaces"].([]any),
						map[string]any{"name": name, "storage-engine": map[string]any{"type": "memory"}})
				}
			}), "spec.aerospikeConfig.namespaces[2]: Forbidden: Aerospike Community Edition allows at most 2 namespaces "+
				"(it refuses to start with more)")
		})

		It("accepts a valid change", func() {
			c.Spec.Size = 4
			c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "reload",
				PodList: []string{c.Name + "-3"}}}
			Expect(k8s.Update(ctx, c)).To(Succeed())
			Expect(warnings.take()).To(BeEmpty())
		})

		It("warns that an operation id that already ran will not run again", func() {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "reload"}}
			Expect(k8s.Update(ctx, c)).To(Succeed())
			c.Status.OperationStatus = &ackov1alpha1.OperationStatus{
				ID: "reload", Kind: ackov1alpha1.OperationWarmRestart, Phase: ackov1alpha1.OperationCompleted}
			Expect(k8s.Status().Update(ctx, c)).To(Succeed())
			warnings.take()

			c.Spec.Operations[0].Kind = ackov1alpha1.OperationPodRestart
			Expect(k8s.Update(ctx, c)).To(Succeed())
			Expect(warnings.take()).To(Equal([]string{
				`spec.operations[0].id: operation "reload" already ran and will not run again: use a new id`}))
		})
	})
})
