package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
	"github.com/acko-io/acko/test/workload"
)

// scaleCyclesEnv sets how many times the scale spec runs its sequence (`make soak` sets 10).
const scaleCyclesEnv = "ACKO_E2E_SCALE_CYCLES"

// scaleCycles reads scaleCyclesEnv; CI runs 2 cycles.
func scaleCycles() int {
	GinkgoHelper()
	v := os.Getenv(scaleCyclesEnv)
	if v == "" {
		return 2
	}
	n, err := strconv.Atoi(v)
	Expect(err).NotTo(HaveOccurred(), scaleCyclesEnv)
	Expect(n).To(BeNumerically(">", 0), scaleCyclesEnv)
	return n
}

// simNodesNamed lists the simulated nodes whose names (<namespace>/<pod>) start with prefix, as the
// simulator's /nodes shows them.
func simNodesNamed(prefix string) ([]aerosim.NodeState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := sim().Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []aerosim.NodeState
	for _, n := range all {
		if strings.HasPrefix(n.Name, prefix) {
			out = append(out, n)
		}
	}
	return out, nil
}

// formedAs describes how the simulated nodes and the operator's status see a cluster, in one line,
// so that a mismatch shows both sides: the nodes' pods, phases, sizes and keys (sorted), and the
// status' size, Ready pods, pod count and Ready condition.
func formedAs(namespace, name string) (string, error) {
	nodes, err := simNodesNamed(namespace + "/")
	if err != nil {
		return "", err
	}
	keys := map[string]bool{}
	var parts []string
	for _, n := range nodes {
		keys[n.ClusterKey] = true
		parts = append(parts, fmt.Sprintf("%s:%s:%d", strings.TrimPrefix(n.Name, namespace+"/"), n.Phase, n.ClusterSize))
	}
	slices.Sort(parts)
	asc, err := readCluster(namespace, name)
	if err != nil {
		return "", err
	}
	ready := "Unknown"
	if c := meta.FindStatusCondition(asc.Status.Conditions, ackov1alpha1.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	return fmt.Sprintf("nodes=[%s] keys=%d status size=%d ready=%d pods=%d Ready=%s observed=%v",
		strings.Join(parts, " "), len(keys), asc.Status.Size, asc.Status.ReadyPods, len(asc.Status.Pods), ready,
		asc.Status.ObservedGeneration == asc.Generation), nil
}

// readCluster reads an AerospikeCluster through kubectl.
func readCluster(namespace, name string) (*ackov1alpha1.AerospikeCluster, error) {
	out, err := kubectlErr("get", "asc", name, "-n", namespace, "-o", "json")
	if err != nil {
		return nil, err
	}
	asc := &ackov1alpha1.AerospikeCluster{}
	return asc, json.Unmarshal([]byte(out), asc)
}

// oneClusterOf is what formedAs says of a cluster of size pods that formed one Aerospike cluster and
// that the operator reports as such.
func oneClusterOf(name string, size int) string {
	parts := make([]string, 0, size)
	for i := range size {
		parts = append(parts, fmt.Sprintf("%s-%d:%s:%d", name, i, aerosim.PhaseMember, size))
	}
	slices.Sort(parts)
	return fmt.Sprintf("nodes=[%s] keys=1 status size=%d ready=%d pods=%d Ready=True observed=true",
		strings.Join(parts, " "), size, size, size)
}

// incarnation is what tells a restarted pod or asd apart: the pod's UID, the node's warm restarts
// and crashes, and its uptime (which only grows while asd runs on).
type incarnation struct {
	uid               string
	restarts, crashes int
	uptime            int64
}

func incarnations(namespace, name string) map[string]incarnation {
	GinkgoHelper()
	out := map[string]incarnation{}
	for pod, uid := range podUIDs(namespace, name) {
		n, err := simNode(namespace, pod)
		Expect(err).NotTo(HaveOccurred())
		out[pod] = incarnation{uid: uid, restarts: n.Restarts, crashes: n.Crashes, uptime: n.UptimeSeconds}
	}
	return out
}

// expectNoRestart checks that every pod of before that still exists is the same pod running the same
// asd, and that the simulator's history has no down of its node since the step began.
func expectNoRestart(namespace, name string, before map[string]incarnation, since time.Time) {
	GinkgoHelper()
	after := incarnations(namespace, name)
	stayed := map[string]bool{}
	for pod, was := range before {
		now, ok := after[pod]
		if !ok {
			continue
		}
		stayed[simclient.NodeName(namespace, pod)] = true
		Expect(now.uid).To(Equal(was.uid), "pod %s was recreated", pod)
		Expect([]int{now.restarts, now.crashes}).To(Equal([]int{was.restarts, was.crashes}), "asd of %s restarted", pod)
		Expect(now.uptime).To(BeNumerically(">=", was.uptime), "uptime of %s went back", pod)
	}
	h, err := sim().History(context.Background(), since)
	Expect(err).NotTo(HaveOccurred())
	for _, tr := range h.Transitions {
		Expect(stayed[tr.Node] && !tr.Up).To(BeFalse(), "a node that stayed went down: %+v", tr)
	}
}

// Issue 11: nodes find each other through one seed per pod, so every size of the sequence forms one
// Aerospike cluster, and a change of the seed list alone restarts nothing.
var _ = Describe("Scaling through the scale sequence", Label("scale-sequence"), func() {
	It("forms exactly one Aerospike cluster of the expected size after every step, restarting no pod that stays", func() {
		const ns, name = "e2e-scale", "scale"
		sequence := []int{1, 2, 3, 5, 3, 1, 3}
		applyYAML(clusterYAML(ns, name, sequence[0], ""))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		awaitOneCluster(ns, name, sequence[0])
		w := withWorkload(ns, name)

		start := time.Now()
		cycles := scaleCycles()
		for c := range cycles {
			for i, size := range sequence {
				if c == 0 && i == 0 {
					continue // created at that size
				}
				By(fmt.Sprintf("cycle %d: scaling to %d", c+1, size))
				before, since := incarnations(ns, name), time.Now()
				_, err := mergePatch(ns, name, fmt.Sprintf(`{"spec":{"size":%d}}`, size))
				Expect(err).NotTo(HaveOccurred())
				awaitOneCluster(ns, name, size)
				expectNoRestart(ns, name, before, since)
			}
		}
		reportFigure("scale sequence", fmt.Sprintf("%d cycles of %v in %s", cycles, sequence, time.Since(start)))
		w.expectNothingLost()
	})
})

// reportFigure records a measured figure in the report and the spec's output.
func reportFigure(what, figure string) {
	AddReportEntry(what, figure)
	_, _ = fmt.Fprintf(GinkgoWriter, "%s: %s\n", what, figure)
}

// awaitOneCluster waits until the nodes form one cluster of size and the status agrees, then checks
// that it holds for a moment (a node alone would show within the simulator's join delay).
func awaitOneCluster(namespace, name string, size int) {
	GinkgoHelper()
	want := oneClusterOf(name, size)
	Eventually(func() (string, error) { return formedAs(namespace, name) }).
		WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal(want))
	Consistently(func() (string, error) { return formedAs(namespace, name) }).
		WithTimeout(time.Second).WithPolling(250 * time.Millisecond).Should(Equal(want))
}

// condition reads one condition of an AerospikeCluster as "Status Reason: Message".
func condition(namespace, name, typ string) (string, error) {
	asc, err := readCluster(namespace, name)
	if err != nil {
		return "", err
	}
	c := meta.FindStatusCondition(asc.Status.Conditions, typ)
	if c == nil {
		return "", nil
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message), nil
}

// configHashes maps the simulated nodes whose names start with prefix to the config hash their asd loaded.
func configHashes(prefix string) (map[string]string, error) {
	nodes, err := simNodesNamed(prefix)
	out := map[string]string{}
	for _, n := range nodes {
		out[n.Name] = n.ConfigHash
	}
	return out, err
}

// Issue 11: a split brain is seen, held and healed. The lone node is split-0, the last of the roll
// (highest ordinal first), so the pending change's first restart would take a node of the largest
// group down: it must wait.
var _ = Describe("A split brain", Label("split-brain"), func() {
	It("is not Ready, names both groups in the ClusterSplit condition and event, holds a config change, and heals", func() {
		const ns, name = "e2e-split", "split"
		applyYAML(clusterYAML(ns, name, 3, ""))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		awaitOneCluster(ns, name, 3)
		w := withWorkloadConfig(ns, name, workload.Config{Keys: workloadKeys, Rate: workloadRate, SplitTolerant: true})
		before := incarnations(ns, name)
		hashes, err := configHashes(ns + "/")
		Expect(err).NotTo(HaveOccurred())

		By("cutting the mesh between split-0 and the others")
		w.run.MarkSplit()
		cutAt := time.Now()
		Expect(sim().CutMesh(context.Background(), []string{simclient.NodeName(ns, "split-0")},
			[]string{simclient.NodeName(ns, "split-1"), simclient.NodeName(ns, "split-2")})).To(Succeed())
		DeferCleanup(func() { _ = sim().HealMesh(context.Background()) })
		Eventually(func() (string, error) { return condition(ns, name, ackov1alpha1.ConditionReady) }).
			WithTimeout(time.Minute).Should(HavePrefix("False"))
		notReady := time.Since(cutAt)
		splitGroups := And(HavePrefix("True "+ackov1alpha1.ReasonSplitBrain), ContainSubstring("cluster_size 2: split-1"),
			ContainSubstring("split-2"), ContainSubstring("cluster_size 1: split-0"))
		Eventually(func() (string, error) { return condition(ns, name, ackov1alpha1.ConditionClusterSplit) }).
			WithTimeout(time.Minute).Should(splitGroups)
		detected := time.Since(cutAt)
		reportFigure("split brain", fmt.Sprintf("not Ready after %s, ClusterSplit after %s", notReady, detected))
		Expect(notReady).To(BeNumerically("<", aerospike.DefaultSplitGrace), "not Ready within the grace period")
		Expect(eventMessages(ns, name, ackov1alpha1.EventClusterSplit)).To(ContainElement(And(
			ContainSubstring("cluster_size 2: split-1"), ContainSubstring("cluster_size 1: split-0"))))

		By("changing the config: the roll holds while split")
		_, err = mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"namespaces":[{"name":"test",`+
			`"replication-factor":2,"partition-tree-sprigs":512,"storage-engine":{"type":"memory"}}]}}}`)
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() (map[string]string, error) { return configHashes(ns + "/") }).
			WithTimeout(3 * opts.ProjectionDelay).WithPolling(time.Second).Should(Equal(hashes))
		expectNoRestart(ns, name, before, cutAt)
		Expect(condition(ns, name, ackov1alpha1.ConditionReady)).To(HavePrefix("False"))

		By("healing the mesh: one cluster again, the change rolls, Ready")
		Expect(sim().HealMesh(context.Background())).To(Succeed())
		Eventually(func() (string, error) { return condition(ns, name, ackov1alpha1.ConditionClusterSplit) }).
			WithTimeout(time.Minute).Should(HavePrefix("False " + ackov1alpha1.ReasonOneCluster))
		waitRunningObserved(ns, name)
		awaitOneCluster(ns, name, 3)
		Expect(configHashes(ns+"/")).To(HaveEach(Not(Equal(hashes[simclient.NodeName(ns, "split-0")]))),
			"every node loaded the new config")
		Expect(eventMessages(ns, name, ackov1alpha1.EventClusterJoined)).NotTo(BeEmpty())
		w.expectNothingLost()
	})
})

// Issue 24: a pod recreated by kubectl delete joins as the same node: its node id comes from its rack
// and ordinal (its own file of the ConfigMap), not from the pod's network interface.
var _ = Describe("Node identity", Label("node-identity"), func() {
	It("keeps each pod's node id when the pod is recreated, and shows it in the status", func() {
		const ns, name = "e2e-identity", "ident"
		applyYAML(clusterYAML(ns, name, 3, ""))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		awaitOneCluster(ns, name, 3)
		want := map[string]string{name + "-0": "A00000", name + "-1": "A00001", name + "-2": "A00002"}
		Eventually(nodeIDs).WithArguments(ns, name).Should(Equal(want))

		uid := mustField(ns, "pod/"+name+"-1", "{.metadata.uid}")
		kubectl("delete", "pod", name+"-1", "-n", ns, "--wait", "--timeout=60s")
		awaitOneCluster(ns, name, 3)
		Expect(mustField(ns, "pod/"+name+"-1", "{.metadata.uid}")).NotTo(Equal(uid), "the pod was recreated")
		Eventually(nodeIDs).WithArguments(ns, name).Should(Equal(want))
	})
})

// nodeIDs maps each pod of the cluster to the node id its node answers to `node`, when
// status.pods[*].nodeID says the same (else to both).
func nodeIDs(namespace, name string) (map[string]string, error) {
	asc, err := readCluster(namespace, name)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for pod, p := range asc.Status.Pods {
		ip, err := field(namespace, "pod/"+pod, "{.status.podIP}")
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(ctx, net.JoinHostPort(ip, "3000"), "node")
		cancel()
		if err != nil {
			return nil, err
		}
		out[pod] = answers["node"]
		if p.NodeID != answers["node"] {
			out[pod] = fmt.Sprintf("node %s, status %s", answers["node"], p.NodeID)
		}
	}
	return out, nil
}
