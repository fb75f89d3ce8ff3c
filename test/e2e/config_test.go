package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// Issues 13 and 14 on the local cluster: a config the server would refuse never gets in, a dynamic
// change is applied live, a static one restarts asd in place, an image change recreates the pods,
// `kubectl wait --for=condition=Ready` waits for the last pod, and a broken image is undone by
// reverting the spec.
var _ = Describe("Config changes and a way forward", Ordered, func() {
	const ns, name = "e2e-config", "cfg"
	pods := []string{"cfg-0", "cfg-1", "cfg-2"}

	BeforeAll(func() {
		createCluster(ns, name, 3, "")
		for _, p := range pods {
			awaitExec(ns, p)
		}
	})

	It("refuses what the server would refuse, naming the path and the rule, and changes nothing", func() {
		spec, uids := mustField(ns, "asc/"+name, "{.spec}"), podUIDs(ns, name)
		memory := `"storage-engine":{"type":"memory"}`
		for patch, want := range map[string]string{
			`{"service":{"proto-fd-max":"lots"}}`:                                                                  `spec.aerospikeConfig.service.proto-fd-max: Invalid value: "lots": must be an integer from 0 to 2147483647`,
			`{"service":{"no-such-param":1}}`:                                                                      `spec.aerospikeConfig.service.no-such-param: Forbidden: unknown parameter`,
			`{"namespaces":[{"name":"test","replication-factor":2,` + memory + `,"bogus":3}]}`:                     `spec.aerospikeConfig.namespaces[0].bogus: Forbidden: unknown parameter`,
			`{"namespaces":[{"name":"a",` + memory + `},{"name":"b",` + memory + `},{"name":"c",` + memory + `}]}`: `spec.aerospikeConfig.namespaces[2]: Forbidden: Aerospike Community Edition allows at most 2 namespaces`,
		} {
			_, err := mergePatch(ns, name, `{"spec":{"aerospikeConfig":`+patch+`}}`)
			Expect(err).To(HaveOccurred(), patch)
			_, _ = fmt.Fprintf(GinkgoWriter, "refused %s: %v\n", patch, err)
			Expect(err.Error()).To(ContainSubstring(want), patch)
		}
		Expect(mustField(ns, "asc/"+name, "{.spec}")).To(Equal(spec))
		Expect(podUIDs(ns, name)).To(Equal(uids))
	})

	It("applies a change of service.proto-fd-max to every node live: no pod deleted, no asd restarted", func() {
		w := withWorkload(ns, name)
		uids, before, start := podUIDs(ns, name), nodeStates(ns, pods), time.Now()
		_, err := mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"proto-fd-max":20000}}}}`)
		Expect(err).NotTo(HaveOccurred())
		awaitReady(waitReadyInBackground(ns, name))
		reportTime("live change of 3 nodes, until kubectl wait returned", time.Since(start))
		expectPodsRunConfig(ns, name, pods)

		Expect(podUIDs(ns, name)).To(Equal(uids), "no pod deleted")
		elapsed := time.Since(start)
		for _, p := range pods {
			n, err := simNode(ns, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(n.Restarts).To(Equal(before[p].Restarts), "asd of %s not restarted", p)
			Expect(n.UptimeSeconds).To(BeNumerically(">=", before[p].UptimeSeconds+int64(elapsed.Seconds())-1),
				"the uptime of %s kept growing", p)
			Expect(n.ConfigDiffers).To(BeTrue(), "%s runs values set live", p)
			Expect(serviceConfig(ns, p)).To(HaveKeyWithValue("proto-fd-max", "20000"))
		}
		Expect(downs(ns, start)).To(BeEmpty(), "no node went down")
		Expect(eventMessages(ns, name, "ConfigApplied")).To(HaveEach(ContainSubstring("proto-fd-max=20000")))
		Expect(eventMessages(ns, name, "ConfigApplied")).To(HaveLen(3))
		w.expectNothingLost()
	})

	It("restarts each pod in place, one at a time, for a static parameter", func() {
		w := withWorkload(ns, name)
		uids, before, start := podUIDs(ns, name), nodeStates(ns, pods), time.Now()
		_, err := mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"log-local-time":true}}}}`)
		Expect(err).NotTo(HaveOccurred())
		awaitReady(waitReadyInBackground(ns, name))
		reportTime("restart in place of 3 nodes, until kubectl wait returned", time.Since(start))
		hash := expectPodsRunConfig(ns, name, pods)

		Expect(podUIDs(ns, name)).To(Equal(uids), "same pods")
		elapsed := time.Since(start)
		for _, p := range pods {
			n, err := simNode(ns, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(n.Restarts).To(Equal(before[p].Restarts+1), "asd of %s restarted once", p)
			Expect(n.UptimeSeconds).To(BeNumerically("<=", int64(elapsed.Seconds())+1), "the uptime of %s was reset", p)
			Expect(n.ConfigHash).To(Equal(hash), "%s loaded the new file", p)
			Expect(n.ConfigDiffers).To(BeFalse())
			Expect(serviceConfig(ns, p)).To(HaveKeyWithValue("log-local-time", "true"))
		}
		down := downs(ns, start)
		Expect(down).To(HaveLen(3))
		for i := 1; i < len(down); i++ {
			Expect(down[i].from).To(BeTemporally(">=", down[i-1].to), "one node down at a time: %v", down)
		}
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			"cfg-0": "ConfigChanged", "cfg-1": "ConfigChanged", "cfg-2": "ConfigChanged"}))
		Expect(eventMessages(ns, name, "PodRestartedInPlace")).To(HaveLen(3))
		Expect(eventMessages(ns, name, "ConfigApplyFailed")).To(BeEmpty(), "a static change is not tried live first")
		w.expectNothingLost()
	})

	It("stops a proto-fd-max above the pods' open-file limit before any restart, naming the limit", func() {
		uids, before := podUIDs(ns, name), nodeStates(ns, pods)
		limit := fmt.Sprint(aerosim.DefaultOpenFileLimit) // the simulated node's, as /proc/1/limits reports it
		_, err := mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"proto-fd-max":2000000}}}}`)
		Expect(err).NotTo(HaveOccurred())
		stalled := `{.status.conditions[?(@.type=="Stalled")]}`
		Eventually(func() (string, error) { return field(ns, "asc/"+name, stalled) }).
			WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring(`"reason":"RolloutStuck"`))
		message := mustField(ns, "asc/"+name, `{.status.conditions[?(@.type=="Stalled")].message}`)
		Expect(message).To(ContainSubstring("open-file limit of " + limit))
		Expect(message).To(ContainSubstring("can't set proto-fd-max 2000000 > system limit " + limit))
		Expect(eventMessages(ns, name, "RolloutStuck")).To(ContainElement(ContainSubstring("open-file limit of " + limit)))
		Consistently(func() ([]aerosim.NodeState, error) { return simNodes(ns, pods) }).
			WithTimeout(3 * time.Second).WithPolling(time.Second).Should(HaveEach(HaveField("Phase", aerosim.PhaseMember)))
		for _, p := range pods {
			n, err := simNode(ns, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(n.Restarts).To(Equal(before[p].Restarts), "asd of %s not restarted", p)
			Expect(serviceConfig(ns, p)).To(HaveKeyWithValue("proto-fd-max", "20000"), "nothing set live on %s", p)
		}
		Expect(podUIDs(ns, name)).To(Equal(uids), "no pod deleted")

		By("setting it back: the cluster is Running again with nothing restarted")
		_, err = mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"proto-fd-max":20000}}}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.phase}") }).
			WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("Running"))
		Expect(podUIDs(ns, name)).To(Equal(uids), "no pod deleted")
	})

	It("still recreates the pods on an image change", func() {
		w := withWorkload(ns, name)
		uids := podUIDs(ns, name)
		_, err := mergePatch(ns, name, `{"spec":{"image":"aerospike:ce-8.1.2.0"}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return restartedPods(ns, name, uids) }).WithTimeout(3 * time.Minute).Should(Equal(3))
		waitRunningObserved(ns, name)
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			"cfg-0": "ImageChanged", "cfg-1": "ImageChanged", "cfg-2": "ImageChanged"}))
		w.expectNothingLost()
	})

	It("stops a roll on a broken image with RolloutStuck, and heals when the image is reverted", func() {
		w := withWorkload(ns, name)
		uids := podUIDs(ns, name)
		_, err := mergePatch(ns, name, `{"spec":{"image":"aerospike:ce-8.1.2.0-broken","progressDeadlineSeconds":10}}`)
		Expect(err).NotTo(HaveOccurred())
		stuck, message := awaitRolloutStuck(ns, name, "broken image", time.Now())
		Expect(message).To(ContainSubstring("ImagePullBackOff"))
		Expect(mustField(ns, "asc/"+name, `{.status.conditions[?(@.type=="Reconciling")].status}`)).To(Equal("False"))
		Expect(mustField(ns, "asc/"+name, "{.status.phase}")).To(Equal("Error"))
		// (The proto-fd-max spec before this one stalled the same cluster: its event is there too.)
		Expect(eventMessages(ns, name, "RolloutStuck")).To(ContainElement(And(ContainSubstring(stuck), ContainSubstring("ImagePullBackOff"))))
		Consistently(func() int { return restartedPods(ns, name, uids) }).
			WithTimeout(3*time.Second).WithPolling(time.Second).Should(Equal(1), "exactly one pod restarted")
		Expect(podUIDs(ns, name)[stuck]).NotTo(Equal(uids[stuck]), "the pod named is the one restarted")

		By("reverting the image: the broken pod is replaced at once")
		broken := podUIDs(ns, name)
		_, err = mergePatch(ns, name, `{"spec":{"image":"aerospike:ce-8.1.2.0"}}`)
		Expect(err).NotTo(HaveOccurred())
		awaitRunningAgain(ns, name, pods, "broken image reverted")
		expectOnlyRecreated(ns, name, stuck, uids, broken)
		Expect(eventMessages(ns, name, "PodReplaced")).To(ConsistOf(ContainSubstring(stuck)))
		w.expectNothingLost()
	})
})

// expectOnlyRecreated checks that the pod stuck has an instance other than its one in broken, and that
// every other pod still has its instance of before.
func expectOnlyRecreated(namespace, name, stuck string, before, broken map[string]string) {
	GinkgoHelper()
	after := podUIDs(namespace, name)
	for pod, uid := range before {
		if pod == stuck {
			Expect(after[pod]).NotTo(Equal(broken[pod]), "%s was recreated", pod)
		} else {
			Expect(after[pod]).To(Equal(uid), "%s was never restarted", pod)
		}
	}
}

// awaitRolloutStuck waits for a roll started at start to stop with RolloutStuck and returns the pod the
// Stalled message names and the message.
func awaitRolloutStuck(namespace, name, what string, start time.Time) (pod, message string) {
	GinkgoHelper()
	stalled := `{.status.conditions[?(@.type=="Stalled")]}`
	Eventually(func() (string, error) { return field(namespace, "asc/"+name, stalled) }).
		WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring(`"reason":"RolloutStuck"`))
	reportTime(what+": RolloutStuck after", time.Since(start))
	message = mustField(namespace, "asc/"+name, `{.status.conditions[?(@.type=="Stalled")].message}`)
	_, _ = fmt.Fprintf(GinkgoWriter, "Stalled: %s\n", message)
	stuck := regexp.MustCompile(`pod (` + regexp.QuoteMeta(name) + `-\d+) did not come back`).FindStringSubmatch(message)
	Expect(stuck).To(HaveLen(2), message)
	return stuck[1], message
}

// awaitRunningAgain waits, from now, for the cluster to be Running at its generation with every node a
// member of one cluster.
func awaitRunningAgain(namespace, name string, pods []string, what string) {
	GinkgoHelper()
	start := time.Now()
	Eventually(func() (string, error) {
		return field(namespace, "asc/"+name, "{.status.phase} {.status.observedGeneration} {.metadata.generation}")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(MatchRegexp(`^Running (\d+) (\d+)$`))
	Eventually(func() ([]aerosim.NodeState, error) { return simNodes(namespace, pods) }).WithTimeout(time.Minute - time.Since(start)).
		Should(HaveEach(And(HaveField("Phase", aerosim.PhaseMember), HaveField("ClusterSize", len(pods)))))
	reportTime(what+": Running with every node back after", time.Since(start))
}

// reportTime records how long something took, in the report and in the spec's output.
func reportTime(what string, d time.Duration) {
	AddReportEntry(what, d.String())
	_, _ = fmt.Fprintf(GinkgoWriter, "%s: %s\n", what, d)
}

// waitReadyInBackground starts `kubectl wait --for=condition=Ready` on the cluster now, as a user
// would right after a change, and delivers its outcome.
func waitReadyInBackground(namespace, name string) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		_, err := kubectlErr("wait", "--for=condition=Ready", "asc/"+name, "-n", namespace, "--timeout=3m")
		done <- err
	}()
	return done
}

// awaitReady waits for the outcome of waitReadyInBackground: kubectl wait succeeded.
func awaitReady(done <-chan error) {
	GinkgoHelper()
	var err error
	Eventually(done).WithTimeout(3 * time.Minute).Should(Receive(&err))
	Expect(err).NotTo(HaveOccurred())
}

// expectPodsRunConfig checks that every pod records the config of its StatefulSet's template, and
// returns that config's identity.
func expectPodsRunConfig(namespace, name string, pods []string) string {
	GinkgoHelper()
	hash := mustField(namespace, "statefulset/"+name, `{.spec.template.metadata.annotations.acko\.io/config-hash}`)
	Expect(hash).NotTo(BeEmpty())
	for _, p := range pods {
		Expect(mustField(namespace, "pod/"+p, `{.metadata.annotations.acko\.io/config-hash}`)).To(Equal(hash), p)
		Expect(mustField(namespace, "asc/"+name, fmt.Sprintf("{.status.pods.%s.configHash}", p))).To(Equal(hash), p)
	}
	return hash
}

func nodeStates(namespace string, pods []string) map[string]aerosim.NodeState {
	GinkgoHelper()
	nodes, err := simNodes(namespace, pods)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]aerosim.NodeState{}
	for i, p := range pods {
		out[p] = nodes[i]
	}
	return out
}

// downtime is a span in which a node was down.
type downtime struct {
	node     string
	from, to time.Time
}

// downs lists the spans in which nodes of the namespace were down since start, by when they began.
func downs(namespace string, since time.Time) []downtime {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := sim().History(ctx, since)
	Expect(err).NotTo(HaveOccurred())
	var out []downtime
	open := map[string]int{}
	for _, t := range h.Transitions {
		if !strings.HasPrefix(t.Node, simclient.NodeName(namespace, "")) {
			continue
		}
		i, isDown := open[t.Node]
		switch {
		case !t.Up && !isDown:
			open[t.Node] = len(out)
			out = append(out, downtime{node: t.Node, from: t.At})
		case t.Up && isDown:
			out[i].to = t.At
			delete(open, t.Node)
		}
	}
	Expect(open).To(BeEmpty(), "every node is up again")
	slices.SortFunc(out, func(a, b downtime) int { return a.from.Compare(b.from) })
	return out
}

// rfChangeAlone is the start of the webhook's answer to a replication-factor change that comes with other
// changes: each node takes the factor live, all of them before the cluster rebalances, and a pod restarted
// meanwhile with the new factor would not rejoin the others (as a real 8.1.2.0 does not).
const rfChangeAlone = `change the replication-factor of namespace "test" (2 to 3) alone`

// rfPatch sets the sample namespace's replication-factor.
func rfPatch(rf int) string {
	return fmt.Sprintf(`{"spec":{"aerospikeConfig":{"namespaces":[{"name":"test","replication-factor":%d,`+
		`"storage-engine":{"type":"memory"}}]}}}`, rf)
}

// budgetSample is the PodDisruptionBudget's maxUnavailable and the smallest replication-factor in effect
// on the cluster's nodes at one moment.
type budgetSample struct {
	at                     time.Time
	maxUnavailable, factor int
}

// sampleBudget samples the budget and the factors in effect until stop is closed. The pods' addresses are
// read once: the spec checks that no pod is replaced, and one kubectl call a sample keeps the samples dense
// enough to see a change that takes a second.
func sampleBudget(ns, name string, pods []string, stop <-chan struct{}) <-chan []budgetSample {
	ips := make([]string, len(pods))
	for i, p := range pods {
		ips[i] = mustField(ns, "pod/"+p, "{.status.podIP}")
	}
	return sampleUntil(stop, 50*time.Millisecond, func() (budgetSample, bool) {
		budget, err := field(ns, "pdb/"+name, "{.spec.maxUnavailable}")
		maxUnavailable, convErr := strconv.Atoi(budget)
		if err != nil || convErr != nil {
			return budgetSample{}, false
		}
		factor := 8
		for _, ip := range ips {
			kv, infoErr := nodeInfo(ip, "namespace/test")
			rf, convErr := strconv.Atoi(kv["effective_replication_factor"])
			if infoErr != nil || convErr != nil {
				factor = 0 // a node that does not say counts as no copy: the budget must allow none
				continue
			}
			factor = min(factor, rf)
		}
		return budgetSample{at: time.Now(), maxUnavailable: maxUnavailable, factor: factor}, true
	})
}

// Issue 23 and issue 22 point 3: a replication-factor change reaches a running cluster live. The operator
// sets it on every node, has the cluster recluster once and checks it in effect everywhere; no pod and no
// asd restarts (a node restarted with another factor would not rejoin the others), the budget lets a
// second node go only once every node keeps three copies, and nothing is lost, there and back.
var _ = Describe("A replication-factor change", Label("replication-factor"), func() {
	It("goes to every node live with one recluster: no restart, the budget follows the factor in effect, nothing lost", func() {
		const ns, name = "e2e-rf", "rf"
		pods := []string{"rf-0", "rf-1", "rf-2"}
		createCluster(ns, name, 3, "")
		allUp(ns+"/", 3)
		w := withWorkload(ns, name)
		uids, before := podUIDs(ns, name), nodeStates(ns, pods)

		By("with another change in the same update: refused")
		_, err := mergePatch(ns, name, `{"spec":{"rollingUpdateBatchSize":2,"aerospikeConfig":{"namespaces":[{"name":"test",`+
			`"replication-factor":3,"storage-engine":{"type":"memory"}}]}}}`)
		Expect(err).To(MatchError(ContainSubstring(rfChangeAlone)))

		for _, step := range []struct{ from, to, budget int }{{2, 3, 2}, {3, 2, 1}} {
			By(fmt.Sprintf("replication-factor %d → %d", step.from, step.to))
			stop := make(chan struct{})
			samples := sampleBudget(ns, name, pods, stop)
			start := time.Now()
			_, err := mergePatch(ns, name, rfPatch(step.to))
			Expect(err).NotTo(HaveOccurred())
			awaitRunningAgain(ns, name, pods, fmt.Sprintf("replication-factor %d → %d", step.from, step.to))
			running := time.Now()
			Eventually(func() (string, error) { return field(ns, "pdb/"+name, "{.spec.maxUnavailable}") }).
				Should(Equal(strconv.Itoa(step.budget)), "the budget at the new factor")
			close(stop)
			seen := <-samples
			during := slices.IndexFunc(seen, func(s budgetSample) bool { return !s.at.Before(running) })
			if during < 0 {
				during = len(seen)
			}
			_, _ = fmt.Fprintf(GinkgoWriter, "%d samples of the budget, %d before Running again\n", len(seen), during)
			Expect(during).To(BeNumerically(">", 0), "samples of the budget between the change and Running again")
			for _, s := range seen {
				Expect(s.maxUnavailable).To(BeNumerically("<=", max(0, s.factor-1)),
					"%s after the change: the budget lets %d nodes go while a node keeps %d copies",
					s.at.Sub(start).Round(time.Millisecond), s.maxUnavailable, s.factor)
			}
			for _, p := range pods {
				kv, err := nodeInfo(mustField(ns, "pod/"+p, "{.status.podIP}"), "namespace/test")
				Expect(err).NotTo(HaveOccurred())
				Expect(kv).To(And(HaveKeyWithValue("replication-factor", strconv.Itoa(step.to)),
					HaveKeyWithValue("effective_replication_factor", strconv.Itoa(step.to))), p)
			}
			Expect(podUIDs(ns, name)).To(Equal(uids), "no pod deleted")
			for p, n := range nodeStates(ns, pods) {
				Expect(n.Restarts).To(Equal(before[p].Restarts), "%s: asd never restarted", p)
			}
			Expect(eventMessages(ns, name, "ConfigApplied")).To(ContainElement(ContainSubstring(
				fmt.Sprintf("replication-factor test=%d on 3 nodes; reclustered by", step.to))))
			reportTime(fmt.Sprintf("replication-factor %d → %d, from the change to Running again", step.from, step.to),
				time.Since(start))
		}
		w.expectNothingLost()
	})
})

// Issue 22 point 8 and issue 23: service.enforce-best-practices true on hosts that fail asd's checks (the
// simulator's hosts fail them, like the reference host) is a config the webhook accepts, with a warning,
// and asd refuses at start. The roll restarts the first pod in place into a crash loop and stops there,
// with the reason and what to do; a revert replaces that pod (its own copy of the config holds the refused
// file, so restarting it would not help) and the cluster runs again, losing nothing.
var _ = Describe("A config asd refuses at start", Label("refused-at-start"), func() {
	It("stops the roll at the first pod with the reason, and a revert replaces that pod", func() {
		const ns, name = "e2e-refused", "refused"
		pods := []string{"refused-0", "refused-1", "refused-2"}
		createCluster(ns, name, 3, "  progressDeadlineSeconds: 10\n")
		allUp(ns+"/", 3)
		w := withWorkload(ns, name)
		uids, before, start := podUIDs(ns, name), nodeStates(ns, pods), time.Now()
		_, err := mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"enforce-best-practices":true}}}}`)
		Expect(err).NotTo(HaveOccurred())
		stuck, message := awaitRolloutStuck(ns, name, "enforce-best-practices on failing hosts", start)
		Expect(message).To(ContainSubstring("CRITICAL (config): " + conffile.BestPracticesFailed))
		Expect(message).To(ContainSubstring("service.enforce-best-practices is true: set it to false, or prepare the hosts"))
		Expect(eventMessages(ns, name, "RolloutStuck")).To(ConsistOf(ContainSubstring(conffile.BestPracticesFailed)))
		n, err := simNode(ns, stuck)
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Phase).To(Equal(aerosim.PhaseFailed))
		Expect(n.Error).To(Equal("CRITICAL (config): " + conffile.BestPracticesFailed))
		others := slices.DeleteFunc(slices.Clone(pods), func(p string) bool { return p == stuck })
		Consistently(func() error {
			for _, p := range others {
				n, err := simNode(ns, p)
				if err != nil {
					return err
				}
				if n.Phase != aerosim.PhaseMember || n.Restarts != before[p].Restarts {
					return fmt.Errorf("%s: %s after %d restarts (%d before)", p, n.Phase, n.Restarts, before[p].Restarts)
				}
			}
			return nil
		}).WithTimeout(3*time.Second).WithPolling(time.Second).Should(Succeed(), "no other node taken down")
		Expect(podUIDs(ns, name)).To(Equal(uids), "restarted in place: no pod deleted")

		By("reverting the spec: the broken pod is replaced at once")
		_, err = mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"enforce-best-practices":null}}}}`)
		Expect(err).NotTo(HaveOccurred())
		awaitRunningAgain(ns, name, pods, "enforce-best-practices reverted")
		after := podUIDs(ns, name)
		for _, p := range others {
			Expect(after[p]).To(Equal(uids[p]), "%s was never replaced", p)
		}
		Expect(after[stuck]).NotTo(Equal(uids[stuck]), "the broken pod was replaced")
		Expect(eventMessages(ns, name, "PodReplaced")).To(ConsistOf(ContainSubstring(stuck)))
		for _, d := range downs(ns, start) {
			Expect(d.node).To(Equal(simclient.NodeName(ns, stuck)), "only the broken pod's node went down")
		}
		w.expectNothingLost()
		reportTime("refused at start, from the change to Running again", time.Since(start))
	})
})
