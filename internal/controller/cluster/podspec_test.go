package cluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/testcluster"
)

var _ = Describe("Pod controls (podSpec and the racks' placement)", func() {
	var (
		ns  string
		w   *world
		ctx = context.Background()
	)

	BeforeEach(func() {
		ns, w = newNamespace()
		startOperator(w, operations.Config{})
	})

	pod := func(name string) *corev1.Pod {
		p := &corev1.Pod{}
		ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
		return p
	}
	container := func(p *corev1.Pod, name string) corev1.Container {
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			if c.Name == name {
				return c
			}
		}
		Fail("pod " + p.Name + " has no container " + name)
		return corev1.Container{}
	}

	// The sample's pods need what a platform would have: its PriorityClass (the API server's Priority
	// admission refuses a pod whose class does not exist), the Secret and the ConfigMap its volumes read.
	platform := func() {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "aerospike-critical"}, Value: 1000000}
		if err := k8s.Create(ctx, pc); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aerospike-podspec-certs"},
			StringData: map[string]string{"ca.pem": "-"}})).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "log-shipper"},
			Data: map[string]string{"shipper.conf": "-"}})).To(Succeed())
	}

	It("gives the podspec sample's controls to every pod, and rolls them one at a time when one changes", func() {
		platform()
		c, err := testcluster.SampleNamed("acko_v1alpha1_aerospikecluster_podspec.yaml")
		Expect(err).NotTo(HaveOccurred())
		c.Namespace = ns
		// What the ServiceAccount admission plugin (off in envtest) does to every pod: without it the API
		// server refuses the sample's projected serviceAccountToken volume.
		c.Spec.PodSpec.ServiceAccountName = "default"
		key := create(c)
		waitRunning(key)
		names := []string{"aerospike-podspec-1-0", "aerospike-podspec-1-1", "aerospike-podspec-2-0", "aerospike-podspec-2-1"}
		Expect(podUIDs(key)).To(HaveLen(4))

		By("the cluster's controls reach every pod")
		for _, name := range names {
			p := pod(name)
			Expect(p.Spec.PriorityClassName).To(Equal("aerospike-critical"), name)
			Expect(p.Spec.Priority).To(Equal(ptr.To[int32](1000000)), "the API server resolved the class: %s", name)
			Expect(p.Spec.TerminationGracePeriodSeconds).To(Equal(ptr.To[int64](120)), name)
			Expect(p.Labels).To(HaveKeyWithValue("team", "storage"), name)
			Expect(p.Annotations).To(HaveKeyWithValue("example.com/owner", "storage-team"), name)
			Expect(p.Spec.NodeSelector).To(HaveKeyWithValue("kubernetes.io/os", "linux"), name)
			Expect(p.Spec.Tolerations).To(ContainElement(HaveField("Value", "aerospike")), name)
			Expect(p.Spec.TopologySpreadConstraints).To(ConsistOf(And(
				HaveField("TopologyKey", "kubernetes.io/hostname"),
				HaveField("LabelSelector.MatchLabels", HaveKeyWithValue(ackov1alpha1.LabelInstance, "aerospike-podspec")))), name)
			Expect(p.Spec.DNSPolicy).To(Equal(corev1.DNSClusterFirst), name)
			Expect(p.Spec.DNSConfig.Options).To(ConsistOf(corev1.PodDNSConfigOption{Name: "ndots", Value: ptr.To("2")}), name)
			for _, ours := range []string{ackov1alpha1.AerospikeContainerName, resources.ConfigInitContainer} {
				Expect(container(p, ours).SecurityContext).To(Equal(&corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}), "%s %s", name, ours)
			}
			Expect(p.Spec.InitContainers[len(p.Spec.InitContainers)-1].Name).To(Equal("fetch-certs"), "the user's init containers run after ours")
			Expect(container(p, "log-shipper").VolumeMounts).To(HaveLen(3), name)
			Expect(p.Spec.Volumes).To(ContainElements(
				HaveField("Secret.SecretName", "aerospike-podspec-certs"),
				HaveField("ConfigMap.Name", "log-shipper"),
				HaveField("EmptyDir.SizeLimit.String()", "64Mi"),
				HaveField("Projected.Sources", ConsistOf(HaveField("ServiceAccountToken.Audience", "log-store"))),
			), name)
		}

		By("each rack's placement is merged over the cluster's")
		for _, name := range names[:2] {
			p := pod(name)
			Expect(p.Spec.NodeSelector).To(Equal(map[string]string{"kubernetes.io/os": "linux", corev1.LabelTopologyZone: "zone-a"}), name)
			// (The API server's DefaultTolerationSeconds admission adds not-ready and unreachable.)
			Expect(p.Spec.Tolerations).NotTo(ContainElement(HaveField("Value", "aerospike-nvme")), name)
		}
		for _, name := range names[2:] {
			p := pod(name)
			Expect(p.Spec.NodeSelector).To(Equal(map[string]string{
				"kubernetes.io/os": "linux", "disktype": "nvme", corev1.LabelTopologyZone: "zone-b"}), name)
			Expect(p.Spec.Tolerations).To(ContainElements(HaveField("Value", "aerospike"), HaveField("Value", "aerospike-nvme")), name)
			Expect(p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms).To(
				ConsistOf(HaveField("MatchExpressions", ConsistOf(HaveField("Key", "node.kubernetes.io/instance-type")))), name)
		}

		By("the Services carry the service labels and annotations")
		for _, svc := range []string{"aerospike-podspec", "aerospike-podspec-headless"} {
			s := &corev1.Service{}
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: svc}, s)).To(Succeed())
			Expect(s.Labels).To(HaveKeyWithValue("team", "storage"), svc)
			Expect(s.Annotations).To(HaveKeyWithValue("example.com/owner", "storage-team"), svc)
		}

		By("a service label changes the Services in place and restarts nothing")
		before := podUIDs(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.PodSpec.ServiceLabels["tier"] = "db" })
		Eventually(func() map[string]string {
			s := &corev1.Service{}
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "aerospike-podspec"}, s)).To(Succeed())
			return s.Labels
		}, timeout, poll).Should(HaveKeyWithValue("tier", "db"))
		waitRunning(key)
		Expect(podUIDs(key)).To(Equal(before))
		Expect(eventMessages(key, ackov1alpha1.EventRollingRestartStarted)).To(BeEmpty())

		By("a pod control rolls every pod, one at a time at replication factor 2, as PodSpecChanged")
		Expect(rolled(key, ackov1alpha1.RestartReasonPodSpecChanged, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.PodSpec.TerminationGracePeriodSeconds = ptr.To[int64](300)
			c.Spec.PodSpec.HostNetwork = true
		})).To(Equal([]int{1, 1, 1, 1}))
		status := fetch(key).Status
		for _, name := range names {
			p := pod(name)
			Expect(p.Spec.TerminationGracePeriodSeconds).To(Equal(ptr.To[int64](300)), name)
			Expect(p.Spec.HostNetwork).To(BeTrue(), name)
			Expect(status.Pods[name].LastRestartReason).To(Equal(ackov1alpha1.RestartReasonPodSpecChanged), name)
		}
	})
})
