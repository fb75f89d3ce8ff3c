package cluster

import (
	"context"
	"strconv"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

// Node maintenance (spec.nodeBlockList): the pods on blocked nodes are moved one at a time, each after
// the last one is back and the cluster stable; their local claims are given up with them; the pods on
// other nodes are not restarted; a node taken off the list before its pod's turn keeps its pod.
var _ = Describe("Node maintenance", func() {
	It("moves the pods off blocked nodes one at a time, with their local volumes, and rolls no other pod", func() {
		ctx := context.Background()
		suffix := strconv.Itoa(GinkgoParallelProcess()) + "-" + strconv.Itoa(int(GinkgoRandomSeed()%100000))
		hosts := map[string]string{"nb-0": "nb-a-" + suffix, "nb-1": "nb-b-" + suffix, "nb-2": "nb-c-" + suffix}
		spares := map[string]string{"nb-0": "nb-spare-a-" + suffix, "nb-1": "nb-spare-b-" + suffix, "nb-2": "nb-spare-c-" + suffix}
		for pod := range hosts {
			for _, n := range []string{hosts[pod], spares[pod]} {
				createNode(n, nil)
				setNodeReady(n, corev1.ConditionTrue)
			}
		}
		// The scheduler's part: a new pod goes to its host unless the template's affinity keeps it off it.
		var mu sync.Mutex
		blocked := map[string]bool{}
		ns, w := newNamespace(func(w *world) {
			w.placement = func(pod string) string {
				mu.Lock()
				defer mu.Unlock()
				if blocked[hosts[pod]] {
					return spares[pod]
				}
				return hosts[pod]
			}
		})
		startOperator(w, operations.Config{})
		c := sampleCluster(ns, "nb", 3)
		c.Spec.Storage = localAndNetworkStorage()
		key := create(c)
		waitRunning(key)
		claimUID := claimUIDIn(ns)
		claimsBefore := map[string]types.UID{}
		for _, n := range []string{"data-nb-0", "data-nb-1", "data-nb-2", "work-nb-0", "work-nb-1", "work-nb-2"} {
			claimsBefore[n] = claimUID(n)
		}
		before := traces(key, w)
		nodeOf := func(name string) string {
			pod := &corev1.Pod{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
				return ""
			}
			return pod.Spec.NodeName
		}
		nodeBlocked := func(name string) func() string {
			return func() string { return fetch(key).Status.Pods[name].NodeBlocked }
		}

		By("blocking the nodes of nb-0 and nb-2; nb-2 moves first, its successor held not Ready")
		w.set(func(w *world) { w.holdRecreated["nb-2"], w.holdRecreated["nb-0"] = true, true })
		mu.Lock()
		blocked[hosts["nb-0"]], blocked[hosts["nb-2"]] = true, true
		mu.Unlock()
		update(key, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.NodeBlockList = []string{hosts["nb-2"], hosts["nb-0"]}
		})
		Eventually(func() string { return nodeOf("nb-2") }, timeout, poll).Should(Equal(spares["nb-2"]))
		Expect(claimUID("data-nb-2")).NotTo(Or(BeEmpty(), Equal(claimsBefore["data-nb-2"])), "a new local claim")
		Expect(claimUID("work-nb-2")).To(Equal(claimsBefore["work-nb-2"]), "the network claim is kept")
		Eventually(func() []string { return eventMessages(key, ackov1alpha1.EventPodMovedOffNode) }, timeout, poll).Should(ConsistOf(And(
			HavePrefix("Moving pod nb-2 off node "+hosts["nb-2"]+" (spec.nodeBlockList): deleted its local claims data-nb-2"),
			ContainSubstring("evicted it"))))
		Expect(fetch(key).Status.Pods["nb-2"].VolumesGivenUp).NotTo(BeNil(), "its successor refills")
		Eventually(nodeBlocked("nb-0"), timeout, poll).Should(HavePrefix("waits to be moved off node " + hosts["nb-0"]))
		Consistently(func() string { return nodeOf("nb-0") }, "2s", poll).Should(Equal(hosts["nb-0"]),
			"one pod at a time: nb-0 waits while nb-2's successor is not Ready")
		pod := &corev1.Pod{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nb-2"}, pod)).To(Succeed())
		Expect(pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions).
			To(ContainElement(corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn,
				Values: []string{hosts["nb-0"], hosts["nb-2"]}}))

		By("nb-0's node leaves the list before its turn; nb-2's successor is Ready: nb-2's move finishes, nb-0 stays")
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.NodeBlockList = []string{hosts["nb-2"]} })
		w.set(func(w *world) { delete(w.holdReady, "nb-2") })
		waitRunning(key)
		Eventually(func() *ackov1alpha1.VolumesGivenUp { return fetch(key).Status.Pods["nb-2"].VolumesGivenUp }, timeout, poll).
			Should(BeNil(), "the refill is seen to end")
		Consistently(func() string { return nodeOf("nb-0") }, "2s", poll).Should(Equal(hosts["nb-0"]))
		Expect(restartsSince(before, key, w)).To(Equal(map[string]string{"nb-2": "recreated×1"}), "no other pod rolled")
		for _, n := range []string{"data-nb-0", "data-nb-1", "work-nb-0", "work-nb-1", "work-nb-2"} {
			Expect(claimUID(n)).To(Equal(claimsBefore[n]), "claim %s is kept", n)
		}
		for _, name := range []string{"nb-0", "nb-1", "nb-2"} {
			Expect(fetch(key).Status.Pods[name].NodeBlocked).To(BeEmpty(), "pod %s", name)
		}
		Expect(fetch(key).Status.Pods["nb-2"].LastRestartReason).To(Equal(ackov1alpha1.RestartReasonNodeBlocked))
	})
})
