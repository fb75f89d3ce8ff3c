package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/workload"
)

// The real tier's rolls (issue 39), on one 3-node cluster of real asd 8.1.2.0 nodes to spend its
// formation once: a dynamic change applied live, a static change rolled in place, an image change rolled
// with a pause in the middle (node ids kept across the pods' replacement), a PodRestart of every pod,
// each under the official client's workload with nothing lost; and last, the negative control that
// proves the workload's counting can fail: two of the three asd killed at once at replication-factor 2
// lose about a third of the keys, as the real server lost in the data-plane fixtures.
var _ = Describe("Real nodes roll", Label("real"), Ordered, func() {
	const ns, name = "real-roll", "realroll"
	pods := []string{name + "-0", name + "-1", name + "-2"}

	BeforeAll(func() {
		Expect(opts.RealNodes).To(BeTrue(), "the real tier needs ACKO_BACKEND=real (make test-real)")
		began := time.Now()
		createCluster(ns, name, 3, realPlacement)
		awaitRealCluster(ns, name, 3)
		reportTime("real roll: 3 nodes Running", time.Since(began))
		for _, p := range pods {
			awaitExec(ns, p)
		}
		reportRSS(ns, pods, "formed")
	})

	It("applies a dynamic change live: same pods, no asd restarted, the value read back from every node", func() {
		w := withWorkload(ns, name)
		before := realUptimes(ns, name)
		elapsed := changeInPlace(ns, name, pods, `{"spec":{"aerospikeConfig":{"service":{"migrate-threads":2}}}}`, "live change")
		for p, up := range realUptimes(ns, name) {
			Expect(up).To(BeNumerically(">=", before[p]+elapsed-1), "asd of %s not restarted", p)
		}
		for _, p := range pods {
			Expect(serviceConfig(ns, p)).To(HaveKeyWithValue("migrate-threads", "2"), p)
		}
		Expect(eventMessages(ns, name, "ConfigApplied")).To(And(HaveLen(3), HaveEach(ContainSubstring("migrate-threads=2"))))
		w.expectNothingLost()
	})

	It("rolls a static change in place, one asd at a time, nothing lost", func() {
		w := withWorkload(ns, name)
		elapsed := changeInPlace(ns, name, pods, `{"spec":{"aerospikeConfig":{"service":{"log-local-time":true}}}}`,
			"static change rolled in place")
		for p, up := range realUptimes(ns, name) {
			Expect(up).To(BeNumerically("<=", elapsed+1), "asd of %s restarted", p)
		}
		for _, p := range pods {
			Expect(serviceConfig(ns, p)).To(HaveKeyWithValue("log-local-time", "true"), p)
			Expect(serviceConfig(ns, p)).To(HaveKeyWithValue("migrate-threads", "2"), "%s keeps the live change in its file", p)
		}
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			pods[0]: "ConfigChanged", pods[1]: "ConfigChanged", pods[2]: "ConfigChanged"}))
		Expect(eventMessages(ns, name, "PodRestartedInPlace")).To(HaveLen(3))
		w.expectNothingLost()
		reportRSS(ns, pods, "static roll")
	})

	It("rolls an image change paused in the middle and resumed, each pod replaced keeping its node id, nothing lost", func() {
		ids, err := nodeIDs(ns, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).To(HaveLen(3))
		w := withWorkload(ns, name)
		uids, start := podUIDs(ns, name), time.Now()
		_, err = mergePatch(ns, name, `{"spec":{"image":"aerospike:ce-8.1.2.0"}}`)
		Expect(err).NotTo(HaveOccurred())

		By("pausing once the first pod is replaced")
		Eventually(func() int { return restartedPods(ns, name, uids) }).WithTimeout(3 * time.Minute).
			WithPolling(250 * time.Millisecond).Should(Equal(1))
		_, err = mergePatch(ns, name, `{"spec":{"paused":true}}`)
		Expect(err).NotTo(HaveOccurred())
		kubectl("wait", "--for=condition=Paused", "asc/"+name, "-n", ns, "--timeout=30s")
		held := podUIDs(ns, name)
		Consistently(func() map[string]string { return podUIDs(ns, name) }).
			WithTimeout(10*time.Second).WithPolling(time.Second).Should(Equal(held), "no pod replaced while paused")
		Expect(restartedPods(ns, name, uids)).To(Equal(1), "paused in the middle of the roll")

		By("resuming: the roll goes on from where it stopped")
		_, err = mergePatch(ns, name, `{"spec":{"paused":false}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return restartedPods(ns, name, uids) }).WithTimeout(4 * time.Minute).Should(Equal(3))
		waitRunningObserved(ns, name)
		awaitRealCluster(ns, name, 3)
		reportTime("real: image change rolled over 3 pods with a 10 s pause", time.Since(start))
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			pods[0]: "ImageChanged", pods[1]: "ImageChanged", pods[2]: "ImageChanged"}))
		Expect(eventMessages(ns, name, "Resumed")).To(HaveLen(1))
		Eventually(nodeIDs).WithArguments(ns, name).Should(Equal(ids), "node ids kept across the pods' replacement")
		w.expectNothingLost()
		reportRSS(ns, pods, "image roll")
	})

	It("restarts every pod by a PodRestart, nothing lost", func() {
		w := withWorkload(ns, name)
		uids, start := podUIDs(ns, name), time.Now()
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"PodRestart","id":"real-podrestart"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(operationPhase(ns, name)).WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).
			Should(Equal("real-podrestart Completed"))
		reportTime("real: PodRestart of 3 pods", time.Since(start))
		Expect(restartedPods(ns, name, uids)).To(Equal(3))
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			pods[0]: "ManualRestart", pods[1]: "ManualRestart", pods[2]: "ManualRestart"}))
		awaitRealCluster(ns, name, 3)
		w.expectNothingLost()
	})

	// The real tier has one Kubernetes node (localcluster.RealNode): each drain evicts what the budget
	// allows, the evicted pod waits Pending while the node is cordoned, and the drain gives up after 20 s
	// and uncordons, again and again, while the operator's own evictions ask the same budget.
	It("rolls an image change while a loop drains the node, one asd down at a time, nothing lost", func() {
		awaitRealCluster(ns, name, 3)
		w := withWorkload(ns, name)
		uids, start := podUIDs(ns, name), time.Now()
		drain := startDrainLoopWithin("app.kubernetes.io/instance="+name, []string{localcluster.RealNode}, 20*time.Second)
		stopped := false
		DeferCleanup(func() {
			if !stopped {
				_, _ = fmt.Fprintf(GinkgoWriter, "the drain loop:\n%s", drain.stop())
			}
		})
		_, err := mergePatch(ns, name, `{"spec":{"image":"aerospike:ce-8.1.1.1"}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return restartedPods(ns, name, uids) }).WithTimeout(6 * time.Minute).Should(Equal(3))
		Eventually(func() string { return mustField(ns, "asc/"+name, "{.status.phase}") }).
			WithTimeout(6 * time.Minute).WithPolling(time.Second).Should(Equal("Running"))
		out := drain.stop()
		stopped = true
		_, _ = fmt.Fprintf(GinkgoWriter, "the drain loop:\n%s", out)
		waitRunningObserved(ns, name)
		awaitRealCluster(ns, name, 3)
		reportTime("real: image change rolled over 3 pods during a drain loop", time.Since(start))
		Expect(out).To(ContainSubstring("evicting pod "+ns+"/"), "the drains evicted pods")
		for _, p := range pods {
			Expect(mustField(ns, "pod/"+p, `{.spec.containers[?(@.name=="aerospike-server")].image}`)).To(Equal("aerospike:ce-8.1.1.1"), p)
		}
		w.expectNothingLost()
	})

	// The negative control (fixtures aerospike-ce-8.1.2.0/dataplane, step 4): the partitions whose two
	// copies were both on the two killed nodes are gone (a memory namespace restarts empty).
	It("loses about a third of the keys when two of three asd are killed at once (the negative control)", func() {
		awaitRealCluster(ns, name, 3)
		w := withWorkloadConfig(ns, name, workload.Config{Keys: 3000, Rate: 1000})
		By("killing asd in " + pods[1] + " and " + pods[2] + " at once")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, p := range pods[1:] {
			wg.Go(func() { _, errs[i] = execIn(ns, p, "sh", "-c", "kill -KILL $(pidof asd)") })
		}
		wg.Wait()
		Expect(errs).To(HaveEach(Succeed()))
		w.expectAThirdLost("real negative control")
	})
})

// changeInPlace patches the cluster, waits as a user would (kubectl wait for Ready), and checks that every
// pod runs the new config and none was replaced; it returns the seconds it took.
func changeInPlace(namespace, name string, pods []string, patch, what string) int {
	GinkgoHelper()
	uids, start := podUIDs(namespace, name), time.Now()
	_, err := mergePatch(namespace, name, patch)
	Expect(err).NotTo(HaveOccurred())
	awaitReady(waitReadyInBackground(namespace, name))
	reportTime(fmt.Sprintf("real: %s on %d nodes, until kubectl wait returned", what, len(pods)), time.Since(start))
	expectPodsRunConfig(namespace, name, pods)
	Expect(podUIDs(namespace, name)).To(Equal(uids), "no pod replaced")
	return int(time.Since(start).Seconds())
}

// reportRSS records the resident memory of asd in each pod (ps in the pod's PID namespace), in MiB.
func reportRSS(namespace string, pods []string, when string) {
	GinkgoHelper()
	rss := map[string]string{}
	for _, p := range pods {
		out, err := execIn(namespace, p, "ps", "-o", "rss=", "-C", "asd")
		Expect(err).NotTo(HaveOccurred())
		kib, err := strconv.Atoi(strings.TrimSpace(out))
		Expect(err).NotTo(HaveOccurred(), "ps of %s: %q", p, out)
		rss[p] = fmt.Sprintf("%d MiB", kib/1024)
	}
	parts := make([]string, 0, len(rss))
	for _, p := range slices.Sorted(maps.Keys(rss)) {
		parts = append(parts, p+" "+rss[p])
	}
	reportFigure("real: asd RSS after "+when, strings.Join(parts, ", "))
}
