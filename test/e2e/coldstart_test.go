package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/workload"
)

// A cold start that takes longer than the progress deadline (issue 26): a Community Edition asd reads
// its device back before it opens its ports (the simulator takes records / load-rate), and says how far
// only in its log. The operator reads that log: the status shows the progress, the readiness gate stays
// closed, and the deadline counts only time without progress, so the roll is not stuck.
var _ = Describe("Slow restarts", Label("storage"), func() {
	It("shows a cold start's progress from asd's log and rolls past the progress deadline while it advances", func() {
		const ns, name = "e2e-coldstart", "cold"
		applyYAML(clusterYAMLEngine(ns, name, 3, "type: device\n          devices: [/dev/xvdb]", `  progressDeadlineSeconds: 15
  podSpec:
    annotations:
      `+localcluster.AnnotationLoadRate+`: "50"
  storage:
    volumes:
      - name: data
        path: /dev/xvdb
        size: 1Gi
        volumeMode: Block
`))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, name)
		w := withWorkloadConfig(ns, name, workload.Config{Keys: 2000, Rate: 500})
		time.Sleep(10 * time.Second) // every key written: each node holds about 1300 records, 26 s to read back
		pods := []string{name + "-0", name + "-1", name + "-2"}

		By("a static config change restarts each node in place; each reads its device back for longer than the deadline")
		start := time.Now()
		_, err := mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"log-local-time":true}}}}`)
		Expect(err).NotTo(HaveOccurred())
		loading := map[string]string{}
		Eventually(func() int {
			for _, p := range pods {
				load, _ := field(ns, "asc/"+name, "{.status.pods."+p+".dataLoading.message}|{.status.pods."+p+".dataLoading.progressed}")
				msg, progressed, _ := strings.Cut(load, "|")
				if strings.HasPrefix(msg, "loading data: test ") && strings.Contains(msg, " of 100 % of its devices read") {
					expectGateClosedWhileLoading(ns, p, progressed)
					loading[p] = msg
				}
			}
			return len(loading)
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Equal(3))
		waitRunningObserved(ns, name)
		reportTime("roll in place of 3 nodes that each cold start for about 26 s (deadline 15 s)", time.Since(start))

		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			pods[0]: "ConfigChanged", pods[1]: "ConfigChanged", pods[2]: "ConfigChanged"}))
		Expect(eventMessages(ns, name, "RolloutStuck")).To(BeEmpty(), "a cold start that advances is never stuck")
		for _, p := range pods {
			Expect(mustField(ns, "asc/"+name, "{.status.pods."+p+".dataLoading}")).To(BeEmpty(), "cleared once %s answers", p)
		}
		Expect(kubectl("logs", pods[0], "-n", ns, "-c", "aerospike-server")).To(
			ContainSubstring("{test} loaded: objects "), "kubectl logs shows what the operator read")
		rep := w.expectNothingLost()
		reportFigure("device namespace rolled with cold starts longer than the deadline",
			fmt.Sprintf("lost %d of %d acknowledged keys", rep.Lost, rep.Acknowledged))
	})
})

// expectGateClosedWhileLoading checks that the pod's readiness gate was not opened while its asd loaded,
// given the load's last recorded progress. The operator opens the gate at the start of a reconcile and
// writes the status at its end, so a status read just before may still show a load that has ended: a
// gate found True passes only if it opened no earlier than that progress.
func expectGateClosedWhileLoading(ns, pod, progressed string) {
	GinkgoHelper()
	gate, _ := field(ns, "pod/"+pod,
		`{range .status.conditions[?(@.type=="acko.io/aerospike-ready")]}{.status} {.lastTransitionTime}{end}`)
	Expect(gateOpenWhileLoading(gate, progressed)).To(BeEmpty(), "the readiness gate of %s", pod)
}

// gateOpenWhileLoading says why a readiness gate ("<status> <lastTransitionTime>") was open while a load
// still progressed at progressed (RFC 3339), or "" when it was not.
func gateOpenWhileLoading(gate, progressed string) string {
	status, opened, _ := strings.Cut(gate, " ")
	if status != "True" {
		return ""
	}
	openedAt, err := time.Parse(time.RFC3339, opened)
	if err != nil {
		return fmt.Sprintf("gate %q: %v", gate, err)
	}
	progressedAt, err := time.Parse(time.RFC3339, progressed)
	if err != nil {
		return fmt.Sprintf("progressed %q: %v", progressed, err)
	}
	if openedAt.Before(progressedAt) {
		return fmt.Sprintf("opened at %s, while the load still progressed at %s", opened, progressed)
	}
	return ""
}
