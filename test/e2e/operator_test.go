package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// clusterYAML is an AerospikeCluster like the 3-node sample; extra is appended to its spec.
func clusterYAML(namespace, name string, size int, extra string) string {
	return clusterYAMLEngine(namespace, name, size, "type: memory", extra)
}

// clusterYAMLEngine is clusterYAML with another storage-engine (its YAML, indented as its keys).
func clusterYAMLEngine(namespace, name string, size int, engine, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: acko.io/v1alpha1
kind: AerospikeCluster
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  size: %[3]d
  image: aerospike:ce-8.1.1.1
  aerospikeConfig:
    namespaces:
      - name: test
        replication-factor: 2
        storage-engine:
          %[4]s
%[5]s`, namespace, name, size, engine, extra)
}

// createCluster creates a cluster in a namespace of its own, deleted when the spec (or container)
// ends, and waits until it runs.
func createCluster(namespace, name string, size int, extra string) {
	GinkgoHelper()
	applyYAML(clusterYAML(namespace, name, size, extra))
	DeferCleanup(kubectl, "delete", "namespace", namespace, "--wait=false")
	waitRunningObserved(namespace, name)
}

// applyYAML applies manifests through a file (kubectl's stdin is fine, but a file shows in logs).
func applyYAML(manifest string) {
	GinkgoHelper()
	kubectl("apply", "-f", writeManifest(manifest))
}

func mergePatch(namespace, name, patch string) (string, error) {
	return kubectlErr("patch", "asc", name, "-n", namespace, "--type", "merge", "-p", patch)
}

// podUIDs maps the cluster's pods to their UIDs.
func podUIDs(namespace, name string) map[string]string {
	GinkgoHelper()
	out := kubectl("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/instance="+name,
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}`)
	uids := map[string]string{}
	for _, line := range strings.Fields(out) {
		k, v, _ := strings.Cut(line, "=")
		uids[k] = v
	}
	return uids
}

// restartedPods counts the pods whose UID differs from before.
func restartedPods(namespace, name string, before map[string]string) int {
	n := 0
	for pod, uid := range podUIDs(namespace, name) {
		if before[pod] != "" && before[pod] != uid {
			n++
		}
	}
	return n
}

// waitRunningObserved waits for phase Running at the current generation.
func waitRunningObserved(namespace, name string) {
	GinkgoHelper()
	Eventually(func() (string, error) {
		return field(namespace, "asc/"+name, "{.status.phase} {.status.observedGeneration} {.metadata.generation}")
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(MatchRegexp(`^Running (\d+) (\d+)$`))
	Eventually(func() bool {
		out, _ := field(namespace, "asc/"+name, "{.status.observedGeneration} {.metadata.generation}")
		parts := strings.Fields(out)
		return len(parts) == 2 && parts[0] == parts[1]
	}).WithTimeout(5 * time.Minute).Should(BeTrue())
	kubectl("wait", "--for=condition=Ready", "asc/"+name, "-n", namespace, "--timeout=5m")
}

// lastRestartReasons maps pods to status.pods[].lastRestartReason.
func lastRestartReasons(namespace, name string) map[string]string {
	GinkgoHelper()
	var pods map[string]struct {
		LastRestartReason string `json:"lastRestartReason"`
	}
	Expect(json.Unmarshal([]byte(mustField(namespace, "asc/"+name, "{.status.pods}")), &pods)).To(Succeed())
	out := map[string]string{}
	for p, s := range pods {
		out[p] = s.LastRestartReason
	}
	return out
}

func promValue(query string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	samples, err := opts.PromQuery(ctx, query)
	if err != nil || len(samples) == 0 {
		return "", err
	}
	return fmt.Sprint(samples[0].Value[1]), nil
}

var _ = Describe("An AerospikeCluster managed end to end", Ordered, func() {
	const ns, name = "e2e-ops", "ops"
	pods := []string{"ops-0", "ops-1", "ops-2"}

	BeforeAll(func() {
		createCluster(ns, name, 3, "")
	})

	It("shows health, pause and operation columns in kubectl get asc", func() {
		out := kubectl("get", "asc", name, "-n", ns)
		Expect(out).To(MatchRegexp(`NAME\s+SIZE\s+READY\s+PHASE\s+PAUSED\s+OPERATION\s+OP-PHASE\s+AGE`))
		Expect(out).To(MatchRegexp(`ops\s+3\s+3\s+Running\s+`))
	})

	It("rolls all 3 pods one by one on a pod spec change, with reason PodSpecChanged", func() {
		w := withWorkload(ns, name)
		before := podUIDs(ns, name)
		_, err := mergePatch(ns, name, `{"spec":{"podSpec":{"annotations":{"e2e.acko.io/roll":"1"}}}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return restartedPods(ns, name, before) }).WithTimeout(5 * time.Minute).Should(Equal(3))
		waitRunningObserved(ns, name)
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			"ops-0": "PodSpecChanged", "ops-1": "PodSpecChanged", "ops-2": "PodSpecChanged"}))
		batches := eventMessages(ns, name, "RollingRestartStarted")
		Expect(batches).To(HaveLen(3))
		for _, b := range batches {
			Expect(strings.Count(b, "(PodSpecChanged")).To(Equal(1), "one pod per batch: %s", b)
		}
		w.expectNothingLost()
	})

	It("pauses: shows Paused, holds a config change, exports the paused duration, and applies it on resume", func() {
		_, err := mergePatch(ns, name, `{"spec":{"paused":true}}`)
		Expect(err).NotTo(HaveOccurred())
		kubectl("wait", "--for=condition=Paused", "asc/"+name, "-n", ns, "--timeout=30s")
		Expect(kubectl("get", "asc", name, "-n", ns)).To(MatchRegexp(`ops\s+3\s+\d+\s+Paused\s+true`))

		before := podUIDs(ns, name)
		_, err = mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"proto-fd-max":30000}}}}`)
		Expect(err).NotTo(HaveOccurred())
		kubectl("wait", "--for=condition=PendingChanges", "asc/"+name, "-n", ns, "--timeout=30s")
		Consistently(func() map[string]string { return podUIDs(ns, name) }).
			WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Equal(before))

		query := fmt.Sprintf(`acko_cluster_paused_duration_seconds{namespace=%q,name=%q}`, ns, name)
		Eventually(func() (string, error) { return promValue(query) }).WithTimeout(time.Minute).ShouldNot(BeEmpty())

		_, err = mergePatch(ns, name, `{"spec":{"paused":false}}`)
		Expect(err).NotTo(HaveOccurred())
		waitRunningObserved(ns, name)
		expectPodsRunConfig(ns, name, pods)
		for _, p := range pods {
			Expect(serviceConfig(ns, p)).To(HaveKeyWithValue("proto-fd-max", "30000"))
		}
		Expect(mustField(ns, "asc/"+name, `{.status.conditions[?(@.type=="PendingChanges")]}`)).To(BeEmpty())
		Eventually(func() (string, error) { return promValue(query) }).WithTimeout(time.Minute).Should(BeEmpty())

		By("pausing again and resuming by removing the field")
		_, err = mergePatch(ns, name, `{"spec":{"paused":true}}`)
		Expect(err).NotTo(HaveOccurred())
		kubectl("wait", "--for=condition=Paused", "asc/"+name, "-n", ns, "--timeout=30s")
		_, err = mergePatch(ns, name, `{"spec":{"paused":null}}`)
		Expect(err).NotTo(HaveOccurred())
		waitRunningObserved(ns, name)
		Expect(eventMessages(ns, name, "Resumed")).To(HaveLen(2))
	})

	It("warm-restarts every pod in place: same pods, asd restarted on each node, Completed", func() {
		for _, p := range pods {
			awaitExec(ns, p)
		}
		w := withWorkload(ns, name)
		uids := podUIDs(ns, name)
		before := restarts(ns, pods)
		start := time.Now()
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"config-reload-v2"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
			WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal("Completed"))
		elapsed := time.Since(start)
		AddReportEntry("3-pod WarmRestart", elapsed.String())
		_, _ = fmt.Fprintf(GinkgoWriter, "3-pod WarmRestart took %s (simulator restart downtime %s each)\n",
			elapsed, opts.RestartDowntime)

		Expect(podUIDs(ns, name)).To(Equal(uids), "a warm restart keeps every pod")
		after := restarts(ns, pods)
		for _, p := range pods {
			Expect(after[p]).To(Equal(before[p]+1), "exactly one restart of %s", p)
		}
		Expect(mustField(ns, "asc/"+name, "{.status.operationStatus.completedPods}")).To(Equal(`["ops-0","ops-1","ops-2"]`))
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			"ops-0": "WarmRestart", "ops-1": "WarmRestart", "ops-2": "WarmRestart"}))
		Expect(eventMessages(ns, name, "PodWarmRestarted")).To(HaveLen(3))
		ops := eventMessages(ns, name, "Operation")
		Expect(ops[0]).To(ContainSubstring("Started WarmRestart operation config-reload-v2 on 3 pods"))
		Expect(ops[len(ops)-1]).To(ContainSubstring("Operation config-reload-v2 Completed: 3 pods completed, 0 failed"))
		w.expectNothingLost()
	})

	It("cold-restarts only the pod in podList", func() {
		w := withWorkload(ns, name)
		uids := podUIDs(ns, name)
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"PodRestart","id":"fix-pod-2","podList":["ops-2"]}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
			WithTimeout(5 * time.Minute).Should(Equal("Completed"))
		after := podUIDs(ns, name)
		Expect(after["ops-2"]).NotTo(Equal(uids["ops-2"]))
		Expect(after["ops-0"]).To(Equal(uids["ops-0"]))
		Expect(after["ops-1"]).To(Equal(uids["ops-1"]))
		Expect(lastRestartReasons(ns, name)["ops-2"]).To(Equal("ManualRestart"))
		Expect(eventMessages(ns, name, "PodColdRestarted")).To(HaveLen(1))
		w.expectNothingLost()
	})

	It("rejects bad operations with the guide's exact messages and leaves the object unchanged", func() {
		before := mustField(ns, "asc/"+name, "{.spec}")
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"a"},{"kind":"PodRestart","id":"b"}]}}`)
		Expect(err).To(MatchError(ContainSubstring("only one operation allowed")))
		_, err = mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"abcdefghijklmnopqrstu"}]}}`)
		Expect(err).To(MatchError(ContainSubstring("id must be between 1 and 20 characters")))
		Expect(mustField(ns, "asc/"+name, "{.spec}")).To(Equal(before))

		By("holding an operation InProgress: the node of ops-1 stops answering")
		node := simclient.NodeName(ns, "ops-1")
		_, err = sim().SetFault(context.Background(), node, aerosim.FaultHang)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _, _ = sim().SetFault(context.Background(), node, aerosim.FaultNone) })
		_, err = mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"held","podList":["ops-1"]}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
			Should(Equal("InProgress"))
		held := mustField(ns, "asc/"+name, "{.spec}")
		for _, patch := range []string{
			`{"spec":{"operations":[{"kind":"WarmRestart","id":"other"}]}}`,
			`{"spec":{"operations":null}}`,
		} {
			_, err = mergePatch(ns, name, patch)
			Expect(err).To(MatchError(ContainSubstring("cannot modify operations while InProgress")), patch)
		}
		Expect(mustField(ns, "asc/"+name, "{.spec}")).To(Equal(held))
		_, err = sim().SetFault(context.Background(), node, aerosim.FaultNone)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
			WithTimeout(5 * time.Minute).Should(Equal("Completed"))
	})
})

var _ = Describe("A WarmRestart of a pod whose PID 1 is not tini", func() {
	It("fails that pod with a message that says why and suggests PodRestart", func() {
		const ns, name = "e2e-plain", "plain"
		createCluster(ns, name, 1, fmt.Sprintf(`  podSpec:
    nodeSelector:
      %[1]s: %[2]s
    tolerations:
      - key: %[1]s
        operator: Equal
        value: %[2]s
        effect: NoSchedule
`, localcluster.LabelTestInit, localcluster.TestInitPlain))
		awaitExec(ns, "plain-0")
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"not-tini"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
			WithTimeout(2 * time.Minute).Should(Equal("Error"))
		Expect(mustField(ns, "asc/"+name, "{.status.operationStatus.failedPods}")).To(Equal(`["plain-0"]`))
		msg := mustField(ns, "asc/"+name, "{.status.operationStatus.message}")
		Expect(msg).To(And(ContainSubstring("not tini"), ContainSubstring("PodRestart")))
		n, err := simNode(ns, "plain-0")
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Restarts).To(BeZero(), "no signal was sent")
	})
})
