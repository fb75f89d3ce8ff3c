package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// lostNodeTaint keeps every other spec's pods off the nodes this spec stops for good.
const lostNodeTaint = "e2e-lost-node"

// A Kubernetes node that holds a pod's local volume stops for good (issue 26): its kubelet stops (kwok
// no longer manages it, so the node controller marks it not Ready) and the pod's asd with it. The
// operator names the node in the NodeLost condition, and once it has been lost for
// nodeLostAfterSeconds, with the other nodes holding every copy, deletes the claim and the pod; the pod
// comes back on another node with a new, empty claim, refilled by migrations. The official client counts
// what is lost. The cluster runs on kwok nodes of its own (tainted, deleted afterwards): a node whose
// kwok stopped managing it does not come back whole.
// ownKwokNodes creates n kwok nodes (prefix-0 ...) of a spec's own, labelled and tainted with taint, deleted
// when the spec ends.
func ownKwokNodes(prefix, taint string, n int) []string {
	GinkgoHelper()
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s-%d", prefix, i)
		applyYAML(fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  labels:
    kubernetes.io/hostname: %[1]s
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    %[2]s: tini
    %[3]s: "true"
  annotations:
    kwok.x-k8s.io/node: fake
spec:
  taints:
  - {key: %[3]s, value: "true", effect: NoSchedule}
`, nodes[i], localcluster.LabelKwok, taint))
		DeferCleanup(kubectl, "delete", "node", nodes[i], "--wait=false")
	}
	return nodes
}

// deviceEngine is a storage-engine on the Block volume onOwnNodes gives each pod.
const deviceEngine = "type: device\n          devices: [/dev/xvdb]"

// onOwnNodes is the spec part that places the cluster's pods on the nodes of ownKwokNodes (taint), one a
// node, each with a Block volume of the kwok class, listed as local (localVolumes, with extra's keys).
func onOwnNodes(taint, name, extra string) string {
	return `  podSpec:
    nodeSelector: {` + taint + `: "true"}
    tolerations:
      - {key: ` + taint + `, operator: Exists, effect: NoSchedule}
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app.kubernetes.io/instance: ` + name + `}}
            topologyKey: kubernetes.io/hostname
  storage:
    volumes:
      - name: data
        path: /dev/xvdb
        size: 1Gi
        volumeMode: Block
    localVolumes:
      storageClasses: [kwok-volume]
` + extra
}

var _ = Describe("Local volumes on a lost node", Label("storage"), func() {
	It("gives up a lost node's local claim and its pod, and loses nothing", func() {
		const ns, name = "e2e-lostnode", "lost"
		ownKwokNodes("kwok-lost", lostNodeTaint, 4) // three for the pods, one for the pod that comes back
		applyYAML(clusterYAMLEngine(ns, name, 3, deviceEngine, onOwnNodes(lostNodeTaint, name, "      nodeLostAfterSeconds: 5\n")))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, name)
		w := withWorkload(ns, name)
		victim := name + "-1"
		node := mustField(ns, "pod/"+victim, "{.spec.nodeName}")
		Expect(node).To(HavePrefix("kwok-lost-"))
		claim := claimUIDs(ns, []string{victim})[victim]

		By("the node's kubelet stops, and the pod's asd with it")
		start := time.Now()
		loseNode(ns, victim, node)
		expectNodeLost(ns, name, "pod "+victim+": its local volumes are on node "+node+", not Ready since")

		By("given up: the claim is deleted, the pod waits Terminating for its node (asd may run there, cut off)")
		expectNodeLost(ns, name, "pod "+victim+" is Terminating until the kubelet of node "+node)

		By("the node is tainted out-of-service: the pod goes at once and comes back on another node with a new claim")
		kubectl("taint", "nodes", node, "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
		Eventually(func() string { return claimUIDs(ns, []string{victim})[victim] }).WithTimeout(3 * time.Minute).
			WithPolling(time.Second).ShouldNot(Or(BeEmpty(), Equal(claim)))
		waitRunningObserved(ns, name)
		reportTime("node lost (kubelet stopped) to the cluster Running again with the pod elsewhere", time.Since(start))
		Expect(mustField(ns, "pod/"+victim, "{.spec.nodeName}")).To(And(HavePrefix("kwok-lost-"), Not(Equal(node))))
		Expect(eventMessages(ns, name, "LocalVolumesDeleted")).To(ConsistOf(
			MatchRegexp(`^Node ` + node + ` not Ready since .*: deleted claims data-` + victim + ` and pod ` + victim + `; `)))
		Expect(strings.Join(eventMessages(ns, name, "NodeLost"), "\n")).To(ContainSubstring(node))
		Expect(mustField(ns, "asc/"+name, `{.status.conditions[?(@.type=="NodeLost")].status}`)).To(BeEmpty(),
			"no stale NodeLost condition")
		w.expectNothingLost()
	})
})

// loseNode stops the kubelet of the pod's Kubernetes node (kwok no longer manages it, so the node
// controller marks it not Ready) and hangs the pod's asd with it.
func loseNode(ns, pod, node string) { setNodeLost(ns, pod, node, true) }

// nodeBack is loseNode undone: the kubelet manages the node again and the pod's asd answers.
func nodeBack(ns, pod, node string) { setNodeLost(ns, pod, node, false) }

func setNodeLost(ns, pod, node string, lost bool) {
	GinkgoHelper()
	label, fault := localcluster.LabelKwok+"=tini", aerosim.FaultNone
	if lost {
		label, fault = localcluster.LabelKwok+"-", aerosim.FaultHang
	}
	kubectl("label", "node", node, label, "--overwrite")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sim().SetFault(ctx, simclient.NodeName(ns, pod), fault)
	Expect(err).NotTo(HaveOccurred())
}

// printLostNodesOnFailure prints, when the spec fails, what holds a give-up: the cluster's conditions
// and pods' status, its events, the pods and the Kubernetes nodes (registered before the namespace's
// deletion runs, so it runs first).
func printLostNodesOnFailure(ns, name string) {
	DeferCleanup(func() {
		if !CurrentSpecReport().Failed() {
			return
		}
		for _, args := range [][]string{
			{"get", "asc/" + name, "-n", ns, "-o", "jsonpath={.status.conditions}{\"\\n\"}{.status.pods}"},
			{"get", "events", "-n", ns, "--sort-by=.lastTimestamp"},
			{"get", "pods,pvc", "-n", ns, "-o", "wide"},
			{"get", "nodes", "-o", "wide"},
		} {
			out, err := kubectlErr(args...)
			_, _ = fmt.Fprintf(GinkgoWriter, "%s\n%v\n", out, err)
		}
	})
}

// expectNodeLost waits until the cluster's NodeLost condition says want.
func expectNodeLost(ns, name, want string) {
	GinkgoHelper()
	Eventually(func() (string, error) {
		return field(ns, "asc/"+name, `{.status.conditions[?(@.type=="NodeLost")].message}`)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(ContainSubstring(want))
}

// Issue 38, sequences 2 and 3 under the workload: two lost nodes at replication-factor 3 are both given
// up; a node lost while another refills after its give-up is kept, saying why, until it comes back.
var _ = Describe("Local volumes on lost nodes", Label("storage"), func() {
	It("gives up two lost nodes at replication-factor 3, and loses nothing", func() {
		const ns, name, taint = "e2e-losttwo", "losttwo", "e2e-lost-two"
		ownKwokNodes("kwok-losttwo", taint, 7) // five for the pods, two for the pods that come back
		applyYAML(strings.Replace(clusterYAMLEngine(ns, name, 5, deviceEngine,
			onOwnNodes(taint, name, "      nodeLostAfterSeconds: 5\n")), "replication-factor: 2", "replication-factor: 3", 1))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		printLostNodesOnFailure(ns, name)
		waitRunningObserved(ns, name)
		w := withWorkload(ns, name)
		victims := []string{name + "-3", name + "-4"}
		nodes, claims := map[string]string{}, claimUIDs(ns, victims)

		By("the nodes of two pods stop")
		start := time.Now()
		for _, v := range victims {
			nodes[v] = mustField(ns, "pod/"+v, "{.spec.nodeName}")
			loseNode(ns, v, nodes[v])
		}

		// The out-of-service taint comes once the give-up waits for it, as NodeLost advises: put on at once,
		// it evicts the pods, and the test bed's volumes (not pinned to a node, unlike real local volumes)
		// let their successors run elsewhere on the old claims before the give-up.
		By("both given up together; once their pods wait Terminating, the nodes are tainted out of service")
		for _, v := range victims {
			expectNodeLost(ns, name, "pod "+v+" is Terminating until the kubelet of node "+nodes[v])
		}
		for _, v := range victims {
			kubectl("taint", "nodes", nodes[v], "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
		}
		for _, v := range victims {
			Eventually(func() string { return claimUIDs(ns, []string{v})[v] }).WithTimeout(3 * time.Minute).
				WithPolling(time.Second).ShouldNot(Or(BeEmpty(), Equal(claims[v])))
		}
		waitRunningObserved(ns, name)
		reportTime("two nodes lost at replication-factor 3 to the cluster Running again", time.Since(start))
		for _, v := range victims {
			Expect(mustField(ns, "pod/"+v, "{.spec.nodeName}")).NotTo(Equal(nodes[v]))
		}
		Expect(strings.Join(eventMessages(ns, name, "LocalVolumesDeleted"), "\n")).To(
			And(ContainSubstring("data-"+victims[0]), ContainSubstring("data-"+victims[1])))
		w.expectNothingLost()
	})

	It("keeps a lost node's claim while another node refills after its give-up, and loses nothing", func() {
		const ns, name, taint = "e2e-lostrefill", "lostrefill", "e2e-lost-refill"
		// One node a pod and no spare: the first pod given up waits, Pending, until a node is added, so
		// its refill lasts as long as the spec needs.
		ownKwokNodes("kwok-lostrefill", taint, 4)
		applyYAML(clusterYAMLEngine(ns, name, 4, deviceEngine, onOwnNodes(taint, name, "      nodeLostAfterSeconds: 5\n")))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		printLostNodesOnFailure(ns, name)
		waitRunningObserved(ns, name)
		w := withWorkload(ns, name)
		first, second := name+"-1", name+"-3"
		firstNode, secondNode := mustField(ns, "pod/"+first, "{.spec.nodeName}"), mustField(ns, "pod/"+second, "{.spec.nodeName}")
		secondClaim := claimUIDs(ns, []string{second})[second]

		By("the first node stops; given up, then out of service: its pod waits for a node to refill on")
		loseNode(ns, first, firstNode)
		expectNodeLost(ns, name, "pod "+first+" is Terminating until the kubelet of node "+firstNode)
		kubectl("taint", "nodes", firstNode, "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
		Eventually(func() []string { return eventMessages(ns, name, "LocalVolumesDeleted") }).WithTimeout(3 * time.Minute).
			WithPolling(time.Second).Should(ContainElement(ContainSubstring("data-" + first)))

		By("the second node stops while the first refills: its claim is kept, and NodeLost says why")
		loseNode(ns, second, secondNode)
		expectNodeLost(ns, name, "the volumes are kept: "+first+" refill after their volumes were given up")
		expectNodeLost(ns, name, "kubectl annotate pod "+second+" acko.io/accept-data-loss=true")
		Consistently(func() string { return claimUIDs(ns, []string{second})[second] }).WithTimeout(15 * time.Second).
			WithPolling(time.Second).Should(Equal(secondClaim))

		By("the second node comes back with its data, then a node for the first: the refill ends")
		start := time.Now()
		nodeBack(ns, second, secondNode)
		ownKwokNodes("kwok-lostrefill-spare", taint, 1)
		waitRunningObserved(ns, name)
		reportTime("a kept node back and a new node for the refill to the cluster Running", time.Since(start))
		Expect(claimUIDs(ns, []string{second})[second]).To(Equal(secondClaim))
		Expect(mustField(ns, "asc/"+name, "{.status.pods."+first+".volumesGivenUp}")).To(BeEmpty(), "the refill record ended")
		Expect(mustField(ns, "asc/"+name, `{.status.conditions[?(@.type=="NodeLost")].status}`)).To(BeEmpty())
		w.expectNothingLost()
	})
})
