package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	ackowebhook "github.com/acko-io/acko/internal/webhook"
	webhookv1alpha1 "github.com/acko-io/acko/internal/webhook/v1alpha1"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// The pins below hold a restarted node's answers at "joining", then "migrating": the e2e simulator rejoins
// within 0.6 s and migrates for 2 s (localcluster.E2EOptions), while the prober reads a steady cluster every
// 10 s and a real asd joins in about 2 s and migrates for 19-52 s. The node's data is really gone and
// really migrates back (the data plane ignores pins); the pins only make the operator see each phase.
var (
	pinJoining   = aerosim.Pin{ClusterSize: ptr.To(0), ClusterKey: ptr.To("0")}
	pinMigrating = aerosim.Pin{MigratePartitionsRemaining: ptr.To[int64](100)}
)

// pinNode makes a pod's node answer the pinned values until the next pinNode (aerosim.Pin{} ends it);
// the spec's end clears it.
func pinNode(namespace, pod string, p aerosim.Pin) {
	GinkgoHelper()
	node := simclient.NodeName(namespace, pod)
	_, err := sim().SetPin(context.Background(), node, p)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _, _ = sim().SetPin(context.Background(), node, aerosim.Pin{}) })
}

// restartEmpty restarts a pod's asd as a crash would (tini restarts it; its memory data is gone) and pins
// what it answers.
func restartEmpty(namespace, pod string, p aerosim.Pin) {
	GinkgoHelper()
	_, err := sim().WarmRestart(context.Background(), simclient.NodeName(namespace, pod))
	Expect(err).NotTo(HaveOccurred())
	pinNode(namespace, pod, p)
}

// gate is a pod's acko.io/aerospike-ready condition as "Status/Reason".
func gate(namespace, pod string) func() (string, error) {
	return func() (string, error) {
		jp := fmt.Sprintf(`{.status.conditions[?(@.type==%q)].status}/{.status.conditions[?(@.type==%q)].reason}`,
			ackov1alpha1.PodConditionAerospikeReady, ackov1alpha1.PodConditionAerospikeReady)
		return field(namespace, "pod/"+pod, jp)
	}
}

// evictionVerdict says whether the PodDisruptionBudget lets an eviction of the pod through now (a dry
// run: nothing is evicted): "allowed", "refused", or the error.
func evictionVerdict(namespace, pod string) func() string {
	return func() string {
		err := evict(namespace, pod, true)
		switch {
		case err == nil:
			return "allowed"
		case strings.Contains(err.Error(), "would violate the pod's disruption budget"):
			return "refused"
		}
		return err.Error()
	}
}

// readingTimeout covers the prober's 10 s interval for a steady cluster and the writes after it.
const readingTimeout = 30 * time.Second

// expectGuardsFollowRestart restarts the node of <name>-1 empty while the reconciles end early, and checks
// that its readiness gate goes False while it joins, and that the budget refuses an eviction of <name>-0
// until its migrations ended (issue 22, point 4).
func expectGuardsFollowRestart(namespace, name string) {
	GinkgoHelper()
	restarted, other := name+"-1", name+"-0"
	Eventually(evictionVerdict(namespace, other)).Should(Equal("allowed"), "one disruption allowed before the restart")
	restartEmpty(namespace, restarted, pinJoining)
	start := time.Now()
	Eventually(gate(namespace, restarted)).WithTimeout(readingTimeout).WithPolling(500 * time.Millisecond).
		Should(Equal("False/" + aerospike.ReasonNotAMember))
	reportTime("restarted node's gate False after", time.Since(start))
	Expect(evictionVerdict(namespace, other)()).To(Equal("refused"), "while %s joins", restarted)

	By("rejoined, migrating: it serves, and the budget still allows no disruption")
	pinNode(namespace, restarted, pinMigrating)
	Eventually(gate(namespace, restarted)).WithTimeout(readingTimeout).WithPolling(500 * time.Millisecond).
		Should(Equal("True/" + aerospike.ReasonNodeReady))
	Expect(evictionVerdict(namespace, other)()).To(Equal("refused"), "while %s migrates", restarted)

	By("migrations ended: one disruption allowed again")
	pinNode(namespace, restarted, aerosim.Pin{})
	Eventually(evictionVerdict(namespace, other)).WithTimeout(readingTimeout).WithPolling(time.Second).Should(Equal("allowed"))
}

// expectGuardsWhile applies a patch after which every reconcile ends early (held checks that they do, now
// and again after the restart), restarts a node empty (expectGuardsFollowRestart), undoes the patch, and
// checks that no pod was touched and nothing lost.
func expectGuardsWhile(namespace, name, patch, undo string, held func()) {
	GinkgoHelper()
	w := withWorkload(namespace, name)
	uids := podUIDs(namespace, name)
	_, err := mergePatch(namespace, name, patch)
	Expect(err).NotTo(HaveOccurred())
	held()
	expectGuardsFollowRestart(namespace, name)
	held() // the gates and the budget did not wait for the reconciles to go on
	_, err = mergePatch(namespace, name, undo)
	Expect(err).NotTo(HaveOccurred())
	waitRunningObserved(namespace, name)
	Expect(podUIDs(namespace, name)).To(Equal(uids), "no pod touched")
	w.expectNothingLost()
}

// bypassWebhook makes the validating webhooks skip a namespace until the spec ends, as if they were off:
// the reconciler then meets a spec only it refuses.
func bypassWebhook(namespace string) {
	GinkgoHelper()
	selector := func(value string) string {
		var ops []string
		for i := range webhookv1alpha1.ValidatingWebhooks() {
			ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/webhooks/%d/namespaceSelector","value":%s}`, i, value))
		}
		return "[" + strings.Join(ops, ",") + "]"
	}
	hook := "validatingwebhookconfiguration/" + ackowebhook.ConfigurationName
	kubectl("patch", hook, "--type=json", "-p", selector(
		`{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["`+namespace+`"]}]}`))
	DeferCleanup(kubectl, "patch", hook, "--type=json", "-p", selector(`{}`))
}

// awaitLine runs `kubectl get object -w` with a JSONPath, closes listed once the first line (the object
// as it is) came, and returns once a line equals want.
func awaitLine(ctx context.Context, namespace, object, jsonpath, want string, listed chan<- struct{}) error {
	cmd := exec.CommandContext(ctx, opts.KubectlPath(), "--kubeconfig="+opts.KubeconfigPath(), "get", object,
		"-n", namespace, "-w", "-o", "jsonpath="+jsonpath+`{"\n"}`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	for first := true; lines.Scan(); first = false {
		if first {
			close(listed)
		}
		if strings.TrimSpace(lines.Text()) == want {
			return nil
		}
	}
	return fmt.Errorf("kubectl get -w %s ended before %q (%v)", object, want, ctx.Err())
}

// Issue 22, points 1, 4, 5, 7 and 9, under the workload, on one 3-node cluster at replication-factor 2 (the
// scale-down last). Each spec has its own label.
var _ = Describe("The holes of issue 22", Ordered, Label("issue-22"), func() {
	const ns, name = "e2e-holes", "holes"
	prefix := ns + "/" + name + "-"

	BeforeAll(func() {
		createCluster(ns, name, 3, "")
		allUp(prefix, 3)
	})

	It("while paused, a node that restarts empty is not Ready and no drain passes until its migrations end",
		Label("hole-paused-restart"), func() {
			expectGuardsWhile(ns, name, `{"spec":{"paused":true}}`, `{"spec":{"paused":false}}`, func() {
				eventuallyPhase(ns, name).Should(Equal(string(ackov1alpha1.PhasePaused)))
			})
		})

	It("while the spec cannot be applied, a node that restarts empty is not Ready and no drain passes until its migrations end",
		Label("hole-invalid-restart"), func() {
			image := mustField(ns, "asc/"+name, "{.spec.image}")
			bypassWebhook(ns)
			// Community Edition only: the webhook would refuse it, the reconciler stops before any child.
			expectGuardsWhile(ns, name, `{"spec":{"image":"aerospike/aerospike-server-enterprise:8.1.2.0"}}`,
				`{"spec":{"image":"`+image+`"}}`, func() {
					Eventually(func() (string, error) { return condition(ns, name, ackov1alpha1.ConditionStalled) }).
						Should(HavePrefix("True " + ackov1alpha1.ReasonInvalidSpec))
				})
		})

	It("a sidecar whose readiness probe never passes stops the roll with RolloutStuck, and a revert heals it",
		Label("hole-never-ready-sidecar"), func() {
			const deadline = 10 * time.Second
			w := withWorkload(ns, name)
			uids := podUIDs(ns, name)
			start := time.Now()
			_, err := mergePatch(ns, name, fmt.Sprintf(`{"spec":{"progressDeadlineSeconds":%d,"podSpec":{"sidecars":[`+
				`{"name":"probe","image":"busybox:1.37","readinessProbe":{"exec":{"command":["false"]}}}]}}}`,
				int(deadline.Seconds())))
			Expect(err).NotTo(HaveOccurred())
			stalled := `{.status.conditions[?(@.type=="Stalled")]}`
			Eventually(func() (string, error) { return field(ns, "asc/"+name, stalled) }).
				WithTimeout(deadline + time.Minute).WithPolling(time.Second).Should(ContainSubstring(`"reason":"RolloutStuck"`))
			reportTime("never-ready sidecar: RolloutStuck after", time.Since(start))
			message := mustField(ns, "asc/"+name, `{.status.conditions[?(@.type=="Stalled")].message}`)
			_, _ = fmt.Fprintf(GinkgoWriter, "Stalled: %s\n", message)
			stuck := regexp.MustCompile(`pod (` + name + `-\d) did not come back`).FindStringSubmatch(message)
			Expect(stuck).To(HaveLen(2), message)
			Expect(message).To(ContainSubstring("containers not ready: probe"))
			Expect(gate(ns, stuck[1])()).To(Equal("True/"+aerospike.ReasonNodeReady), "its node serves")
			Consistently(func() int { return restartedPods(ns, name, uids) }).
				WithTimeout(3*time.Second).WithPolling(time.Second).Should(Equal(1), "no further pod touched")

			By("reverting the change: the stuck pod is recreated, the cluster Running")
			broken := podUIDs(ns, name)
			start = time.Now()
			_, err = mergePatch(ns, name, `{"spec":{"progressDeadlineSeconds":null,"podSpec":{"sidecars":null}}}`)
			Expect(err).NotTo(HaveOccurred())
			waitRunningObserved(ns, name)
			allUp(prefix, 3)
			reportTime("never-ready sidecar reverted: Running after", time.Since(start))
			expectOnlyRecreated(ns, name, stuck[1], uids, broken)
			w.expectNothingLost()
		})

	It("a PodRestart whose eviction a second PodDisruptionBudget refuses waits and says why, and goes on once that budget is deleted",
		Label("hole-second-budget"), func() {
			const second, target = "second-budget", name + "-0"
			w := withWorkload(ns, name)
			uids := podUIDs(ns, name)
			applyYAML(fmt.Sprintf(`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: %s, namespace: %s}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app.kubernetes.io/instance: %s}}
`, second, ns, name))
			DeferCleanup(kubectlErr, "delete", "pdb", second, "-n", ns, "--ignore-not-found")
			_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"PodRestart","id":"two-budgets","podList":["`+target+`"]}]}}`)
			Expect(err).NotTo(HaveOccurred())
			// The API server answers 500 for a pod under two budgets: the operation waits (a refusal is no
			// reconcile failure) and says why, with the pod timeout as its deadline.
			Eventually(func() (string, error) { return condition(ns, name, ackov1alpha1.ConditionReconciling) }).
				WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("more than one PodDisruptionBudget"))
			Expect(podUIDs(ns, name)).To(Equal(uids), "no pod evicted while refused")

			By("deleting the second budget: the operation goes on and completes")
			start := time.Now()
			kubectl("delete", "pdb", second, "-n", ns)
			Eventually(operationPhase(ns, name)).WithTimeout(5 * time.Minute).WithPolling(time.Second).
				Should(Equal("two-budgets Completed"))
			reportTime("second budget deleted: operation Completed after", time.Since(start))
			Expect(restartedPods(ns, name, uids)).To(Equal(1), "only %s restarted", target)
			Expect(podUIDs(ns, name)[target]).NotTo(Equal(uids[target]))
			waitRunningObserved(ns, name)
			w.expectNothingLost()
		})

	It("an operation decided on a steady reading restarts its node only after a node that restarted empty a moment before has migrated",
		Label("hole-fresh-reading"), func() {
			target, restarted := name+"-0", name+"-1"
			w := withWorkload(ns, name)
			before, err := simNode(ns, target)
			Expect(err).NotTo(HaveOccurred())
			start := time.Now()

			By("restarting a node empty, and within a second asking for a WarmRestart of another")
			// The prober reads a steady cluster every 10 s: its last reading says stable. Acting on it would
			// take down the only other copy of the partitions the restarted node lost.
			restartEmpty(ns, restarted, pinMigrating)
			_, err = mergePatch(ns, name, fmt.Sprintf(`{"spec":{"operations":[{"kind":"WarmRestart","id":"fresh",`+
				`"podList":[%q]}]}}`, target))
			Expect(err).NotTo(HaveOccurred())
			held := fmt.Sprintf(`restart of %s held by check \w+: %s: migrate_partitions_remaining=%d`, target, restarted,
				*pinMigrating.MigratePartitionsRemaining)
			Eventually(func() (string, error) { return condition(ns, name, ackov1alpha1.ConditionReconciling) }).
				WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(MatchRegexp(held))
			Consistently(func() (int, error) {
				n, err := simNode(ns, target)
				return n.Restarts, err
			}).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(Equal(before.Restarts),
				"%s held while %s migrates", target, restarted)

			By("its migrations end: the operation restarts its node")
			ended := time.Now()
			pinNode(ns, restarted, aerosim.Pin{})
			Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
				WithTimeout(time.Minute).Should(Equal(string(ackov1alpha1.OperationCompleted)))
			h := clusterHistory(start)
			node := simclient.NodeName(ns, target)
			Expect(wentDown(h, node, "", start, ended)).To(BeEmpty(), "%s down before the migrations of %s ended", target, restarted)
			Expect(wentDown(h, node, "", ended, time.Now())).NotTo(BeEmpty(), "%s restarted by the operation", target)
			waitRunningObserved(ns, name)
			w.expectNothingLost()
		})

	It("a scale-down whose operator restarts while another node restarts empty removes the node only after migrations end",
		Label("hole-scale-down-restart"), func(ctx SpecContext) {
			leaving, restarted := name+"-2", name+"-1"
			w := withWorkload(ns, name)
			start := time.Now()
			killed := leader()
			DeferCleanup(func(ctx SpecContext) {
				if !opts.IsRunning(localcluster.ManagerName(killed)) {
					Expect(cluster.StartManager(ctx, killed)).To(Succeed())
				}
			})

			By("killing the operator as soon as it has recorded the leaving pod, before the replicas are lowered")
			// A race with the operator, which lowers them a moment later (CI once lost it within a second):
			// lost, the size goes back to 3 and the kill is tried again.
			for attempt := 1; ; attempt++ {
				if killed = leader(); killedBeforeLowered(ctx, ns, name, leaving, killed) {
					break
				}
				Expect(attempt).To(BeNumerically("<", 3),
					"the operator lowered the replicas before it was killed, three times: the kill came too late to test the gap")
				Expect(cluster.StartManager(ctx, killed)).To(Succeed())
				_, err := mergePatch(ns, name, `{"spec":{"size":3}}`)
				Expect(err).NotTo(HaveOccurred())
				waitRunningObserved(ns, name)
				start = time.Now()
			}

			By("restarting another node empty while the operator is away, then the operator")
			restartEmpty(ns, restarted, pinMigrating)
			Expect(cluster.StartManager(ctx, killed)).To(Succeed())
			held := fmt.Sprintf(`Scale down of \S+ held by check ClusterStable: %s: migrate_partitions_remaining=%d`,
				restarted, *pinMigrating.MigratePartitionsRemaining)
			Eventually(func() (string, error) { return condition(ns, name, ackov1alpha1.ConditionReconciling) }).
				WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(MatchRegexp(held))
			reconciling, err := condition(ns, name, ackov1alpha1.ConditionReconciling)
			Expect(err).NotTo(HaveOccurred())
			_, _ = fmt.Fprintf(GinkgoWriter, "held: %s\n", reconciling)
			Consistently(func() (string, error) { return field(ns, "statefulset/"+name, "{.spec.replicas}") }).
				WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(Equal("3"), "held while %s migrates", restarted)

			By("its migrations end: the leaving node goes")
			ended := time.Now()
			pinNode(ns, restarted, aerosim.Pin{})
			waitRunningObserved(ns, name)
			allUp(prefix, 2)
			Expect(removedAt(clusterHistory(start), simclient.NodeName(ns, leaving))).To(BeTemporally(">=", ended),
				"%s removed only after the migrations of %s ended", leaving, restarted)
			w.expectNothingLost()
		})
})

// killedBeforeLowered asks for size 2, kills the operator as soon as it has recorded the leaving pod,
// and says whether it was killed before it lowered the StatefulSet's replicas.
func killedBeforeLowered(ctx context.Context, ns, name, leaving string, manager int) bool {
	GinkgoHelper()
	watchCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	recorded, listed := make(chan error, 1), make(chan struct{})
	go func() {
		recorded <- awaitLine(watchCtx, ns, "asc/"+name, fmt.Sprintf("{.status.pods.%s.update.method}", leaving),
			string(ackov1alpha1.UpdateRemove), listed)
	}()
	Eventually(listed).WithTimeout(30 * time.Second).Should(BeClosed())
	_, err := mergePatch(ns, name, `{"spec":{"size":2}}`)
	Expect(err).NotTo(HaveOccurred())
	Expect(<-recorded).To(Succeed())
	Expect(opts.KillProcess(localcluster.ManagerName(manager))).To(Succeed())
	return mustField(ns, "statefulset/"+name, "{.spec.replicas}") == "3"
}

// removedAt is when a node was removed (its pod gone), zero if it was not.
func removedAt(h aerosim.History, node string) time.Time {
	for _, tr := range h.Transitions {
		if tr.Node == node && tr.Reason == aerosim.ReasonRemoved {
			return tr.At
		}
	}
	return time.Time{}
}
