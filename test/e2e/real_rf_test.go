package e2e

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/workload"
)

// Issue 39, the replication-factor change on real asd 8.1.2.0 nodes, under the official client's
// workload: the change is reported done only once cluster-stable answers on every node, and a node taken
// down between the set-configs and the recluster (its asd killed, or its pod evicted) never leaves a
// stuck cluster behind a Running status, nor loses a record.
var _ = Describe("Real nodes: a replication-factor change", Label("real"), func() {
	BeforeEach(func() {
		Expect(opts.RealNodes).To(BeTrue(), "the real tier needs real nodes (make test-real)")
	})

	It("goes 2 → 3 → 2 and is reported done only once every node is stable, nothing lost", func() {
		const ns, name = "real-rf", "realrf"
		pods := realRFCluster(ns, name)
		w := withWorkloadConfig(ns, name, realRFLoad)
		for _, rf := range []int{3, 2} {
			start := time.Now()
			stop := make(chan struct{})
			violations := sampleRunningWhileUnstable(ns, name, stop)
			_, err := mergePatch(ns, name, rfPatch(rf))
			Expect(err).NotTo(HaveOccurred())
			waitRunningObserved(ns, name)
			close(stop)
			Expect(<-violations).To(BeEmpty(), "the status said Running while a node was not stable")
			expectRealFactor(ns, name, pods, rf)
			reportTime(fmt.Sprintf("real: replication-factor %d → %d, from the change to Running", 5-rf, rf), time.Since(start))
		}
		reportRealRSS(ns, pods)
		w.expectNothingLost()
	})

	// The node killed comes back one of two ways: its container restarted on its own copy of the config
	// (the old factor: the exchange sticks, and the operator ends it by restarting that node), or its
	// pod, seen broken, replaced with the ConfigMap's file (the new factor: it joins). Either way the
	// change ends at the new factor everywhere, the nodes holding data never restarted, nothing lost.
	It("takes a replication-factor change with a node killed between the set-configs and the recluster, nothing lost", func() {
		const ns, name = "real-rf-kill", "realrfkill"
		run := factorChangeWithANodeDown(ns, name, "killing the asd of",
			func(pod string) error { return cluster.KillReal(ns, pod) })
		pods, victim := run.pods, run.victim
		conflicts := eventMessages(ns, name, "ReplicationFactorConflict")
		for _, m := range conflicts {
			Expect(m).To(ContainSubstring(victim), "a stuck exchange is ended by restarting the node killed only")
		}
		reportFigure("real: replication-factor 2 → 3 with "+victim+" killed: ReplicationFactorConflict events",
			fmt.Sprint(len(conflicts)))
		expectRealFactor(ns, name, pods, 3)
		after := realUptimes(ns, name)
		for _, p := range pods {
			if p != victim {
				Expect(after[p]).To(BeNumerically(">=", run.uptimes[p]), "%s holds data: never restarted", p)
			}
		}
		reportTime("real: replication-factor 2 → 3 with a node killed, from the change to Running", time.Since(run.start))
		reportRealRSS(ns, pods)
		run.load.expectNothingLost()
	})

	It("takes a replication-factor change with a pod evicted between the set-configs and the recluster, nothing lost", func() {
		const ns, name = "real-rf-drain", "realrfdrain"
		run := factorChangeWithANodeDown(ns, name, "evicting", func(pod string) error { return evict(ns, pod, false) })
		pods, victim := run.pods, run.victim
		awaitRealCluster(ns, name, len(pods))
		expectRealFactor(ns, name, pods, 3)
		// A pod evicted is created again with its file from the ConfigMap, which holds the new factor
		// already (the change waits for it): it may come back in agreement, with no exchange stuck.
		reportFigure("real: replication-factor 2 → 3 with "+victim+" evicted: ReplicationFactorConflict events",
			fmt.Sprint(len(eventMessages(ns, name, "ReplicationFactorConflict"))))
		reportTime("real: replication-factor 2 → 3 with a pod evicted, from the change to Running", time.Since(run.start))
		reportRealRSS(ns, pods)
		run.load.expectNothingLost()
	})
})

// downChangeRun is a replication-factor change 2 → 3 under the workload with one node taken down in
// the middle of it.
type downChangeRun struct {
	pods    []string
	victim  string         // the node taken down
	load    *workloadRun   // the workload, still running
	uptimes map[string]int // every asd's uptime before the change
	start   time.Time      // when the change was asked for
}

// factorChangeWithANodeDown creates a cluster of three real nodes under the workload, changes its factor
// 2 → 3, takes down (with down; how says how, for the spec's steps) the node the change reaches last once
// every other node runs the new factor, and waits for Running, the status never saying Running while a
// node was not stable.
func factorChangeWithANodeDown(ns, name, how string, down func(pod string) error) downChangeRun {
	GinkgoHelper()
	run := downChangeRun{pods: realRFCluster(ns, name)}
	run.load = withWorkloadConfig(ns, name, realRFLoad)
	run.uptimes = realUptimes(ns, name)
	run.start = time.Now()
	stop := make(chan struct{})
	violations := sampleRunningWhileUnstable(ns, name, stop)
	_, err := mergePatch(ns, name, rfPatch(3))
	Expect(err).NotTo(HaveOccurred())

	By(how + " the node the change reaches last, once every other node runs the new factor")
	run.victim, err = downBeforeTheFactor(ns, name, run.pods, 3, down)
	Expect(err).NotTo(HaveOccurred())
	waitRunningObserved(ns, name)
	close(stop)
	Expect(<-violations).To(BeEmpty(), "the status said Running while a node was not stable")
	return run
}

// realRFLoad is the workload of the replication-factor specs: the 10 000 keys of the measurement
// (all but about 350 of the 4096 partitions hold some), each written once within withWorkload's minute.
var realRFLoad = workload.Config{Keys: 10000, Rate: 1000}

// realRFCluster creates a cluster of three real nodes at replication-factor 2 and names its pods.
func realRFCluster(ns, name string) []string {
	GinkgoHelper()
	began := time.Now()
	createCluster(ns, name, 3, realPlacement)
	awaitRealCluster(ns, name, 3)
	reportTime("real: 3 nodes Running", time.Since(began))
	return []string{name + "-0", name + "-1", name + "-2"}
}

// downBeforeTheFactor watches the nodes' running factor (get-config) while the operator sets it node by
// node, and as soon as every node but one runs rf, takes that one down (down) before the change reaches
// it: the moment between the set-configs and the recluster. It names that pod, or says why none.
// The nodes answer at their pods' IPs, simulated or real.
func downBeforeTheFactor(ns, name string, pods []string, rf int, down func(pod string) error) (string, error) {
	ips, err := realPodIPs(ns, name)
	if err != nil {
		return "", err
	}
	const cmd = "get-config:context=namespace;id=test"
	want := fmt.Sprint(rf)
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var behind []string
		for _, p := range pods {
			answer, err := realInfo(ips[p], cmd)
			if err != nil || aerospike.ParseKV(answer)["replication-factor"] != want {
				behind = append(behind, p)
			}
		}
		switch len(behind) {
		case 0:
			return "", errors.New("every node took the new factor before the fault: the operator was quicker than the watch")
		case 1:
			_, _ = fmt.Fprintf(GinkgoWriter, "taking %s down before the new factor reaches it\n", behind[0])
			return behind[0], down(behind[0])
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "", errors.New("the operator set the new factor on no node but one in 3 minutes")
}

// expectRealFactor asserts that every node runs rf, has it in effect and answers cluster-stable for all
// of them, and that the change was reported done only once stable (the ConfigApplied event).
func expectRealFactor(ns, name string, pods []string, rf int) {
	GinkgoHelper()
	ips, err := realPodIPs(ns, name)
	Expect(err).NotTo(HaveOccurred())
	cmd := aerospike.ClusterStableCommand(len(pods), false)
	for _, p := range pods {
		answer, err := realInfo(ips[p], "namespace/test")
		Expect(err).NotTo(HaveOccurred())
		Expect(aerospike.ParseKV(answer)).To(And(HaveKeyWithValue("replication-factor", fmt.Sprint(rf)),
			HaveKeyWithValue("effective_replication_factor", fmt.Sprint(rf))), p)
		answer, err = realInfo(ips[p], cmd)
		Expect(err).NotTo(HaveOccurred())
		_, stableErr := aerospike.ParseClusterStable(answer)
		Expect(stableErr).NotTo(HaveOccurred(), "%s: Running before the cluster is stable", p)
	}
	// The change may have run on fewer nodes than the cluster's (a node down when it began, replaced
	// since with the ConfigMap's factor): each node's own answers above are what must hold.
	Expect(eventMessages(ns, name, "ConfigApplied")).To(ContainElement(And(
		ContainSubstring(fmt.Sprintf("replication-factor test=%d on ", rf)),
		ContainSubstring("stable (migrations done) after"))))
}

// sampleRunningWhileUnstable samples the cluster's phase and its real nodes until stop is closed, and
// reports the samples in which the status said Running for the current generation while a node did
// not answer cluster-stable for a cluster of them all (a stuck exchange, migrations left).
func sampleRunningWhileUnstable(ns, name string, stop <-chan struct{}) <-chan []string {
	return sampleUntil(stop, 500*time.Millisecond, func() (string, bool) {
		status, err := field(ns, "asc/"+name, "{.status.phase} {.status.observedGeneration} {.metadata.generation} {.spec.size}")
		f := strings.Fields(status)
		if err != nil || len(f) != 4 || f[0] != "Running" || f[1] != f[2] {
			return "", false
		}
		size, _ := strconv.Atoi(f[3])
		why := unstableNodes(ns, name, size)
		return fmt.Sprintf("%s at %s: %s", status, time.Now().Format(time.RFC3339Nano), strings.Join(why, "; ")), len(why) > 0
	})
}

// unstableNodes says which of the cluster's real nodes do not answer cluster-stable for a cluster of
// size with its migrations done (none when all do).
func unstableNodes(ns, name string, size int) []string {
	ips, err := realPodIPs(ns, name)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	if len(ips) != size {
		out = append(out, fmt.Sprintf("%d pods with an IP, want %d", len(ips), size))
	}
	cmd := aerospike.ClusterStableCommand(size, false)
	for pod, ip := range ips {
		answer, err := realInfo(ip, cmd)
		if _, stableErr := aerospike.ParseClusterStable(answer); err != nil || stableErr != nil {
			out = append(out, fmt.Sprintf("%s answered %q (%v)", pod, answer, err))
		}
	}
	slices.Sort(out)
	return out
}

// reportRealRSS records asd's resident memory on each node.
func reportRealRSS(ns string, pods []string) {
	GinkgoHelper()
	parts := make([]string, 0, len(pods))
	for _, p := range pods {
		n, err := cluster.RealNode(ns, p)
		Expect(err).NotTo(HaveOccurred())
		rss, err := n.RSS()
		Expect(err).NotTo(HaveOccurred())
		parts = append(parts, fmt.Sprintf("%s %d MiB", p, rss>>20))
	}
	slices.Sort(parts)
	reportFigure("real: asd RSS in "+ns, strings.Join(parts, ", "))
}
