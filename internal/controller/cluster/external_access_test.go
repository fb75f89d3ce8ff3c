package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

// createNode creates a Kubernetes node with these addresses (type → address), removed after the test.
func createNode(name string, addresses map[corev1.NodeAddressType]string) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8s.Create(ctx, node)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, node))).To(Succeed()) })
	setNodeAddresses(name, addresses)
}

func setNodeAddresses(name string, addresses map[corev1.NodeAddressType]string) {
	node := &corev1.Node{}
	Expect(k8s.Get(context.Background(), types.NamespacedName{Name: name}, node)).To(Succeed())
	node.Status.Addresses = nil
	for typ, addr := range addresses {
		node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: typ, Address: addr})
	}
	Expect(k8s.Status().Update(context.Background(), node)).To(Succeed())
}

// podFiles are the keys and files of a ConfigMap that are pods' own (not the template or running-*).
func podFiles(ns, name string) func() map[string]string {
	return func() map[string]string {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm); err != nil {
			return nil
		}
		out := map[string]string{}
		for k, v := range cm.Data {
			if k != "aerospike.conf" && !strings.HasPrefix(k, "running-") {
				out[k] = v
			}
		}
		return out
	}
}

func podService(ns, name string) *corev1.Service {
	svc := &corev1.Service{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
		return nil
	}
	return svc
}

var _ = Describe("External access", func() {
	It("gives each pod a NodePort Service and starts it only once its node's address is known, and a "+
		"scale-down deletes the Service", func() {
		suffix := strconv.Itoa(GinkgoParallelProcess()) + "-" + strconv.Itoa(int(GinkgoRandomSeed()%100000))
		nodeA, nodeB := "ext-a-"+suffix, "ext-b-"+suffix
		createNode(nodeA, map[corev1.NodeAddressType]string{corev1.NodeInternalIP: "10.0.0.1", corev1.NodeExternalIP: "203.0.113.1"})
		createNode(nodeB, map[corev1.NodeAddressType]string{corev1.NodeInternalIP: "10.0.0.2"})
		ns, w := newNamespace(func(w *world) {
			w.nodeOf = func(pod string) string {
				if strings.HasSuffix(pod, "-0") {
					return nodeA
				}
				return nodeB
			}
		})
		startOperator(w, operations.Config{})
		c := sampleCluster(ns, "ext", 2)
		c.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalNodePort, NodeAddress: corev1.NodeExternalIP}
		key := create(c)

		By("each pod has its own NodePort Service, owned by the cluster")
		var ports [2]int32
		for i := range ports {
			name := fmt.Sprintf("ext-%d", i)
			Eventually(func() int32 {
				if svc := podService(ns, name); svc != nil {
					return nodePort(svc)
				}
				return 0
			}, timeout, poll).ShouldNot(BeZero())
			svc := podService(ns, name)
			ports[i] = nodePort(svc)
			Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
			Expect(svc.Spec.ExternalTrafficPolicy).To(Equal(corev1.ServiceExternalTrafficPolicyLocal))
			Expect(svc.Spec.Selector).To(HaveKeyWithValue("statefulset.kubernetes.io/pod-name", name))
			Expect(svc.OwnerReferences).To(ContainElement(HaveField("Name", "ext")))
		}

		By("the pod on a node with an ExternalIP gets its file; the other waits, and the status says for what")
		Eventually(podFiles(ns, "ext-config"), timeout, poll).Should(HaveKeyWithValue("ext-0_"+nodeA+".conf", And(
			ContainSubstring("\t\talternate-access-address 203.0.113.1\n"),
			ContainSubstring(fmt.Sprintf("\t\talternate-access-port %d\n", ports[0])),
			ContainSubstring("\tnode-id A00000\n"))))
		Expect(podFiles(ns, "ext-config")()).To(HaveLen(1), "no file for a pod whose address is not known")
		Eventually(func() string { return fetch(key).Status.Pods["ext-1"].AwaitingAddress }, timeout, poll).Should(
			Equal("an ExternalIP of its node " + nodeB))
		Expect(fetch(key).Status.Pods["ext-0"].ExternalAddress).To(Equal(fmt.Sprintf("203.0.113.1:%d", ports[0])))
		Expect(condition(key, ackov1alpha1.ConditionReconciling)()).To(And(
			HaveField("Reason", ackov1alpha1.ReasonAwaitingAddress),
			HaveField("Message", ContainSubstring("Pod ext-1 waits for an ExternalIP of its node "+nodeB))))
		Expect(fetch(key).Status.Phase).NotTo(Equal(ackov1alpha1.PhaseRunning))

		By("once the node has one, the pod gets its file and the cluster runs")
		setNodeAddresses(nodeB, map[corev1.NodeAddressType]string{corev1.NodeInternalIP: "10.0.0.2", corev1.NodeExternalIP: "203.0.113.2"})
		waitRunning(key)
		Expect(podFiles(ns, "ext-config")()).To(HaveKeyWithValue("ext-1_"+nodeB+".conf",
			ContainSubstring("\t\talternate-access-address 203.0.113.2\n")))
		Expect(fetch(key).Status.Pods["ext-1"]).To(And(
			HaveField("ExternalAddress", fmt.Sprintf("203.0.113.2:%d", ports[1])), HaveField("AwaitingAddress", "")))

		By("a scale-down deletes the leaving pod's Service once the pod is gone, and its file")
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 1 })
		Eventually(func() bool {
			err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "ext-1"}, &corev1.Service{})
			return apierrors.IsNotFound(err)
		}, timeout, poll).Should(BeTrue(), "the Service of a pod that is gone")
		waitRunning(key)
		Expect(podFiles(ns, "ext-config")()).To(HaveLen(1))
		Expect(podService(ns, "ext-0")).NotTo(BeNil())
		Expect(nodePort(podService(ns, "ext-0"))).To(Equal(ports[0]), "the node port, which the pod advertises, is kept")
	})

	It("advertises a LoadBalancer's ingress once it has one, and keeps the Services of pods that still advertise "+
		"them when external access is turned off", func() {
		ns, w := newNamespace()
		startOperator(w, operations.Config{})
		c := sampleCluster(ns, "lb", 1)
		c.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalLoadBalancer,
			AdvertiseAs: ackov1alpha1.AdvertiseAccess, LoadBalancerClass: ptr.To("example.com/lb"),
			ServiceAnnotations: map[string]string{"example.com/internal": "true"}}
		key := create(c)
		Eventually(func() *corev1.Service { return podService(ns, "lb-0") }, timeout, poll).ShouldNot(BeNil())
		svc := podService(ns, "lb-0")
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
		Expect(svc.Spec.LoadBalancerClass).To(Equal(ptr.To("example.com/lb")))
		Expect(svc.Annotations).To(HaveKeyWithValue("example.com/internal", "true"))
		Eventually(func() string { return fetch(key).Status.Pods["lb-0"].AwaitingAddress }, timeout, poll).Should(
			Equal("the load balancer's ingress of Service lb-0"))
		Expect(podFiles(ns, "lb-config")()).To(BeEmpty())

		By("the load balancer controller gives the Service an ingress")
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb-0.example.com"}}
		Expect(k8s.Status().Update(context.Background(), svc)).To(Succeed())
		waitRunning(key)
		Expect(podFiles(ns, "lb-config")()).To(HaveKeyWithValue("lb-0.conf", And(
			ContainSubstring("\t\taccess-address lb-0.example.com\n"), ContainSubstring("\t\taccess-port 3000\n"))))
		Expect(fetch(key).Status.Pods["lb-0"].ExternalAddress).To(Equal("lb-0.example.com:3000"))

		By("turned off, the pod is rolled, and its Service goes once the pod runs without it")
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.ExternalAccess = nil })
		waitRunning(key)
		Eventually(func() *corev1.Service { return podService(ns, "lb-0") }, timeout, poll).Should(BeNil())
		Expect(podFiles(ns, "lb-config")()).To(HaveKeyWithValue("lb-0.conf", Not(ContainSubstring("access-address"))))
		Expect(fetch(key).Status.Pods["lb-0"].ExternalAddress).To(BeEmpty())
	})
})
