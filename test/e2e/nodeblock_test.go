package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// blockNodeTaint keeps every other spec's pods off this spec's nodes.
const blockNodeTaint = "e2e-node-block"

// Node maintenance (spec.nodeBlockList, issue 42): two of the three nodes that hold the pods' local
// volumes are blocked under the workload. The operator moves their pods off them one at a time, under
// the safety rule: each pod's local claim is given up, it comes back on a free node with a new, empty
// claim, and the next moves only once migrations have refilled it. The pod on the node not blocked is
// not restarted; at no moment are two pods down; the official client loses nothing.
var _ = Describe("Node maintenance", Label("storage"), func() {
	It("moves the pods off blocked nodes one at a time with their local volumes, and loses nothing", func() {
		const ns, name = "e2e-nodeblock", "nb"
		nodes := ownKwokNodes("kwok-block", blockNodeTaint, 5) // three for the pods, two for the pods that move
		// The two spare nodes are cordoned until the cluster runs: the pods start on the first three.
		kubectl("cordon", nodes[3], nodes[4])
		applyYAML(clusterYAMLEngine(ns, name, 3, deviceEngine, onOwnNodes(blockNodeTaint, name, "")))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, name)
		kubectl("uncordon", nodes[3], nodes[4])
		pods := []string{name + "-0", name + "-1", name + "-2"}
		nodeOf := map[string]string{}
		for _, p := range pods {
			nodeOf[p] = mustField(ns, "pod/"+p, "{.spec.nodeName}")
		}
		uids, claims := podUIDs(ns, name), claimUIDs(ns, pods)
		moved, kept := []string{name + "-0", name + "-2"}, name+"-1"
		w := withWorkload(ns, name)

		By("blocking the nodes of " + strings.Join(moved, " and ") + ": at most one pod down at any moment")
		stop := make(chan struct{})
		downs := sampleUntil(stop, 250*time.Millisecond, func() (string, bool) {
			ready, err := field(ns, "asc/"+name, "{.status.readyPods}")
			n, convErr := strconv.Atoi(strings.TrimSpace(ready))
			return time.Now().Format(time.StampMilli) + " readyPods=" + ready, err == nil && convErr == nil && n < len(pods)-1
		})
		start := time.Now()
		Expect(mergePatch(ns, name, fmt.Sprintf(`{"spec":{"nodeBlockList":[%q,%q]}}`, nodeOf[moved[0]], nodeOf[moved[1]]))).
			Error().NotTo(HaveOccurred())
		for _, p := range moved {
			Eventually(func() string { return claimUIDs(ns, []string{p})[p] }).WithTimeout(5*time.Minute).
				WithPolling(time.Second).ShouldNot(Or(BeEmpty(), Equal(claims[p])), "pod %s gets a new claim", p)
		}
		waitRunningObserved(ns, name)
		Eventually(func() (string, error) {
			return field(ns, "asc/"+name, "{.status.pods.*.volumesGivenUp}")
		}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(BeEmpty(), "the refills are seen to end")
		close(stop)
		reportTime("two nodes blocked to the cluster Running again with their pods elsewhere", time.Since(start))
		Expect(<-downs).To(BeEmpty(), "never two pods down at once")

		for _, p := range moved {
			Expect(mustField(ns, "pod/"+p, "{.spec.nodeName}")).To(And(HavePrefix("kwok-block-"),
				Not(Equal(nodeOf[moved[0]])), Not(Equal(nodeOf[moved[1]]))), "pod %s moved off the blocked nodes", p)
		}
		now := podUIDs(ns, name)
		Expect(now[kept]).To(Equal(uids[kept]), "the pod on a node not blocked is not restarted")
		Expect(claimUIDs(ns, []string{kept})[kept]).To(Equal(claims[kept]))
		events := eventMessages(ns, name, "PodMovedOffNode")
		Expect(events).To(HaveLen(2))
		for _, p := range moved {
			Expect(strings.Join(events, "\n")).To(ContainSubstring("Moving pod " + p + " off node " + nodeOf[p] +
				" (spec.nodeBlockList): deleted its local claims data-" + p))
		}
		w.expectNothingLost()
	})
})
