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
		kubectl("label", "node", node, localcluster.LabelKwok+"-")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := sim().SetFault(ctx, simclient.NodeName(ns, victim), aerosim.FaultHang)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) {
			return field(ns, "asc/"+name, `{.status.conditions[?(@.type=="NodeLost")].message}`)
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(
			ContainSubstring("pod " + victim + ": its local volumes are on node " + node + ", not Ready since"))

		By("given up: the claim is deleted, the pod waits Terminating for its node (asd may run there, cut off)")
		Eventually(func() (string, error) {
			return field(ns, "asc/"+name, `{.status.conditions[?(@.type=="NodeLost")].message}`)
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(
			ContainSubstring("pod " + victim + " is Terminating until the kubelet of node " + node))

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
