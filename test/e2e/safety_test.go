package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// sprigsPatch changes a static namespace parameter of the test clusters: asd must restart to load it,
// so the operator restarts every node in place, one at a time at replication-factor 2.
func sprigsPatch(sprigs int) string {
	return fmt.Sprintf(`{"spec":{"aerospikeConfig":{"namespaces":[{"name":"test","replication-factor":2,`+
		`"partition-tree-sprigs":%d,"storage-engine":{"type":"memory"}}]}}}`, sprigs)
}

// startRoll changes the partition-tree-sprigs of a cluster and returns the config each simulated node
// of the namespace ran before, and when the change was made.
func startRoll(namespace, name string, sprigs int) (map[string]string, time.Time) {
	GinkgoHelper()
	before, err := configHashes(namespace + "/")
	Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	_, err = mergePatch(namespace, name, sprigsPatch(sprigs))
	Expect(err).NotTo(HaveOccurred())
	return before, start
}

// evict posts an Eviction for a pod, as kubectl drain does; a dry run checks the PodDisruptionBudget as
// a real eviction would, and evicts nothing.
func evict(namespace, pod string, dryRun bool) error {
	GinkgoHelper()
	options := ""
	if dryRun {
		options = `,"deleteOptions":{"dryRun":["All"]}`
	}
	path := filepath.Join(GinkgoT().TempDir(), "eviction.json")
	Expect(os.WriteFile(path, fmt.Appendf(nil, `{"apiVersion":"policy/v1","kind":"Eviction",`+
		`"metadata":{"name":%q,"namespace":%q}%s}`, pod, namespace, options), 0o600)).To(Succeed())
	_, err := kubectlErr("create", "--raw", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/eviction", namespace, pod), "-f", path)
	return err
}

// drainLoop drains the kwok zone nodes one after another (only the pods its selector picks), and
// uncordons each after its drain, as a platform team's node upgrade would; it runs until stopped.
type drainLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
}

func startDrainLoop(selector string, nodes []string) *drainLoop {
	return startDrainLoopWithin(selector, nodes, 2*time.Minute)
}

// startDrainLoopWithin is startDrainLoop with each drain given up after timeout.
func startDrainLoopWithin(selector string, nodes []string, timeout time.Duration) *drainLoop {
	ctx, cancel := context.WithCancel(context.Background())
	d := &drainLoop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(d.done)
		for i := 0; ctx.Err() == nil; i++ {
			node := nodes[i%len(nodes)]
			d.run(ctx, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--pod-selector="+selector,
				"--timeout="+timeout.String())
			d.run(context.Background(), "uncordon", node) // even when stopped: leave no node cordoned
		}
	}()
	return d
}

func (d *drainLoop) run(ctx context.Context, args ...string) {
	cmd := exec.CommandContext(ctx, opts.KubectlPath(), append([]string{"--kubeconfig=" + opts.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _ = fmt.Fprintf(&d.out, "%s $ kubectl %s\n%s", time.Now().Format(time.StampMilli), strings.Join(args, " "), out)
	if err != nil {
		_, _ = fmt.Fprintf(&d.out, "(%v)\n", err)
	}
}

// stop ends the loop (a drain under way is killed; its node is uncordoned) and returns what kubectl said.
func (d *drainLoop) stop() string {
	d.cancel()
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.String()
}

// downs replays the simulator's history of one cluster's nodes (by name prefix; all of them up at the
// start) and returns the most nodes that were down at once, and when.
func mostDown(h aerosim.History, prefix string) (int, string) {
	down := map[string]bool{}
	most, when := 0, ""
	for _, tr := range h.Transitions {
		if !strings.HasPrefix(tr.Node, prefix) {
			continue
		}
		down[tr.Node] = !tr.Up
		n := 0
		var names []string
		for node, d := range down {
			if d {
				n++
				names = append(names, node)
			}
		}
		if n > most {
			slices.Sort(names)
			most, when = n, fmt.Sprintf("%s: %s", tr.At.Format(time.StampMilli), strings.Join(names, ", "))
		}
	}
	return most, when
}

// restartOrder lists the nodes by prefix in the order their asd first restarted in place (the roll's
// restarts; a drained pod's node is removed instead).
func restartOrder(h aerosim.History, prefix string) []string {
	var order []string
	for _, tr := range h.Transitions {
		name := strings.TrimPrefix(tr.Node, prefix)
		if strings.HasPrefix(tr.Node, prefix) && tr.Reason == aerosim.ReasonRestarting && !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	return order
}

// rackRuns counts the runs of one rack in a restart order of pods named <rack>-<ordinal>: rack by
// rack is one run per rack.
func rackRuns(order []string) int {
	runs, last := 0, ""
	for _, pod := range order {
		if rack, _, _ := strings.Cut(pod, "-"); rack != last {
			runs, last = runs+1, rack
		}
	}
	return runs
}

// awaitConfig waits until every node whose name starts with prefix is a member that loaded a config
// other than the one it had in before, and says how long that took from start.
func awaitConfig(prefix string, size int, before map[string]string, start time.Time) time.Duration {
	GinkgoHelper()
	Eventually(func() ([]string, error) {
		var fresh []string
		nodes, err := simNodesNamed(prefix)
		for _, n := range nodes {
			if n.ConfigHash != before[n.Name] && n.Phase == aerosim.PhaseMember {
				fresh = append(fresh, n.Name)
			}
		}
		return fresh, err
	}).WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).Should(HaveLen(size))
	return time.Since(start)
}

// wentDown lists the nodes (by prefix, other than except) that went from up to down within [from, to].
func wentDown(h aerosim.History, prefix, except string, from, to time.Time) []string {
	up := map[string]bool{}
	var out []string
	for _, tr := range h.Transitions {
		if !strings.HasPrefix(tr.Node, prefix) || tr.Node == except {
			continue
		}
		wasUp, seen := up[tr.Node]
		if (wasUp || !seen) && !tr.Up && !tr.At.Before(from) && !tr.At.After(to) {
			out = append(out, fmt.Sprintf("%s %s (%s)", tr.At.Format(time.StampMilli), tr.Node, tr.Reason))
		}
		up[tr.Node] = tr.Up
	}
	return out
}

// cameUp is when a node was next up at or after from (zero if not yet).
func cameUp(h aerosim.History, node string, from time.Time) time.Time {
	for _, tr := range h.Transitions {
		if tr.Node == node && tr.Up && !tr.At.Before(from) {
			return tr.At
		}
	}
	return time.Time{}
}

// allUp waits until every node whose name starts with prefix is a member of one cluster of size
// with no migrations.
func allUp(prefix string, size int) {
	GinkgoHelper()
	Eventually(func() ([]aerosim.NodeState, error) { return simNodesNamed(prefix) }).WithTimeout(2 * time.Minute).Should(And(HaveLen(size), HaveEach(And(HaveField("Phase", aerosim.PhaseMember),
		HaveField("ClusterSize", size), HaveField("MigratePartitionsRemaining", BeZero())))))
}

// zoneNodes lists the kwok nodes that have a zone.
func zoneNodes() []string {
	GinkgoHelper()
	return strings.Fields(kubectl("get", "nodes", "-l", "topology.kubernetes.io/zone", "-o",
		`jsonpath={range .items[*]}{.metadata.name}{" "}{end}`))
}

// Issue 12: never two copies down. Two clusters at replication-factor 2 with rollingUpdateBatchSize 3
// (capped to 1 by the safety rule): racks (2 racks × 3 pods, zones a and b) and single (4 pods).
var _ = Describe("Restarts that never take two copies down", Ordered, Label("never-two-down"), func() {
	const ns, racks, single = "e2e-safety", "safe-racks", "safe-single"
	racksPrefix, singlePrefix := ns+"/"+racks+"-", ns+"/"+single+"-"

	BeforeAll(func() {
		applyYAML(clusterYAML(ns, racks, 6, `  rollingUpdateBatchSize: 3
  rackConfig:
    racks:
      - id: 1
        zone: zone-a
      - id: 2
        zone: zone-b
`))
		applyYAML(clusterYAML(ns, single, 4, "  rollingUpdateBatchSize: 3\n"))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, racks)
		waitRunningObserved(ns, single)
		allUp(racksPrefix, 6)
		allUp(singlePrefix, 4)
	})

	It("refuses a second eviction until the first evicted node is back with its migrations finished", func() {
		w := withWorkload(ns, single)
		before := podUIDs(ns, single)
		// The budget may still be settling from the creation (maxUnavailable 0 while migrations run).
		Eventually(func() error { return evict(ns, single+"-0", false) }).Should(Succeed())
		refusals := 0
		Eventually(func() string {
			err := evict(ns, single+"-1", true)
			switch {
			case err == nil:
				return "allowed"
			case strings.Contains(err.Error(), "would violate the pod's disruption budget"):
				refusals++
				return "refused"
			}
			return err.Error()
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Equal("allowed"))
		Expect(refusals).To(BeNumerically(">", 0), "the second eviction was refused while the first node was away")
		Expect(simNodesNamed(singlePrefix)).To(And(HaveLen(4), HaveEach(And(HaveField("Phase", aerosim.PhaseMember),
			HaveField("ClusterSize", 4), HaveField("MigratePartitionsRemaining", BeZero())))),
			"the evicted node is back and migrations have finished")
		Expect(podUIDs(ns, single)[single+"-0"]).NotTo(Equal(before[single+"-0"]))
		waitRunningObserved(ns, single)
		w.expectNothingLost()
	})

	It("rolls the two-rack cluster rack by rack, one node at a time", func() {
		w := withWorkload(ns, racks)
		before, start := startRoll(ns, racks, 512)
		took := awaitConfig(racksPrefix, 6, before, start)
		waitRunningObserved(ns, racks)
		h := clusterHistory(start)
		most, when := mostDown(h, racksPrefix)
		Expect(most).To(Equal(1), when)
		order := restartOrder(h, racksPrefix)
		Expect(order).To(HaveLen(6))
		Expect(rackRuns(order)).To(Equal(2), "rack by rack: %v", order)
		reportFigure("6-pod roll without a drain", fmt.Sprintf("%s (in place %v)", took, order))
		w.expectNothingLost()
	})

	It("rolls both clusters while a loop drains the nodes, never two nodes of one cluster down at once", func() {
		wRacks, wSingle := withWorkload(ns, racks), withWorkload(ns, single)
		before, err := configHashes(ns + "/")
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		drain := startDrainLoop(fmt.Sprintf("app.kubernetes.io/instance in (%s,%s)", racks, single), zoneNodes())
		stopped := false
		DeferCleanup(func() {
			if !stopped {
				_, _ = fmt.Fprintf(GinkgoWriter, "the drain loop:\n%s", drain.stop())
			}
		})
		for _, name := range []string{racks, single} {
			_, err = mergePatch(ns, name, sprigsPatch(1024))
			Expect(err).NotTo(HaveOccurred())
		}
		took := awaitConfig(racksPrefix, 6, before, start)
		awaitConfig(singlePrefix, 4, before, start)
		waitRunningObserved(ns, racks)
		waitRunningObserved(ns, single)
		out := drain.stop()
		stopped = true
		_, _ = fmt.Fprintf(GinkgoWriter, "the drain loop:\n%s", out)
		h := clusterHistory(start)
		for _, prefix := range []string{racksPrefix, singlePrefix} {
			most, when := mostDown(h, prefix)
			Expect(most).To(Equal(1), "%s: %s", prefix, when)
		}
		order := restartOrder(h, racksPrefix)
		Expect(rackRuns(order)).To(BeNumerically("<=", 2), "rack by rack: %v", order)
		Expect(out).To(ContainSubstring("evicting pod "+ns+"/"), "the drains evicted pods")
		Expect(out).To(ContainSubstring("would violate the pod's disruption budget"), "the budget refused evictions")
		reportFigure("6-pod roll during a drain loop", fmt.Sprintf("%s (in place %v; the rest drained)", took, order))
		wRacks.expectNothingLost()
		wSingle.expectNothingLost()
	})

	It("holds a roll while a node hangs, names the node, and goes on when it answers", func() {
		w := withWorkload(ns, single)
		before, start := startRoll(ns, single, 2048)
		Eventually(func() []string { return restartOrder(clusterHistory(start), singlePrefix) }).
			WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())

		By("hanging the node the roll takes last, once the first restarted node is back")
		allUp(singlePrefix, 4)
		hungPod := single + "-0" // highest ordinal first
		hung := simclient.NodeName(ns, hungPod)
		Expect(restartOrder(clusterHistory(start), singlePrefix)).NotTo(ContainElement("0"))
		_, err := sim().SetFault(context.Background(), hung, aerosim.FaultHang)
		Expect(err).NotTo(HaveOccurred())
		hungAt := time.Now()
		DeferCleanup(func() { _, _ = sim().SetFault(context.Background(), hung, aerosim.FaultNone) })
		Eventually(func() (string, error) { return condition(ns, single, ackov1alpha1.ConditionReconciling) }).
			Should(Or(ContainSubstring("not answering: "+hungPod), ContainSubstring(hungPod+": does not answer"),
				ContainSubstring("pods not Ready: "+hungPod)))
		namedAt := time.Now()
		reconciling, err := condition(ns, single, ackov1alpha1.ConditionReconciling)
		Expect(err).NotTo(HaveOccurred())
		_, _ = fmt.Fprintf(GinkgoWriter, "named %s after %s: %s\n", hungPod, namedAt.Sub(hungAt), reconciling)
		Consistently(func() []string { return wentDown(clusterHistory(namedAt), singlePrefix, hung, namedAt, time.Now()) }).
			WithTimeout(5*time.Second).WithPolling(time.Second).Should(BeEmpty(), "the roll holds")

		By("letting it answer again: the roll goes on")
		_, err = sim().SetFault(context.Background(), hung, aerosim.FaultNone)
		Expect(err).NotTo(HaveOccurred())
		awaitConfig(singlePrefix, 4, before, start)
		waitRunningObserved(ns, single)
		h := clusterHistory(start)
		back := cameUp(h, hung, hungAt)
		Expect(back).NotTo(BeZero())
		// The operator may act on a reading taken just before the hang (readings count for 5 s); once
		// it has named the node, nothing else goes down until the node answers.
		Expect(wentDown(h, singlePrefix, hung, namedAt, back)).To(BeEmpty(), "no node went down while %s hung", hungPod)
		// The others go in order; the hung pod, not Ready for a moment once it answers again, may go as
		// soon as it answers (outdated pods that are not Ready go first: they are down already).
		order := restartOrder(h, singlePrefix)
		Expect(order).To(ConsistOf("3", "2", "1", "0"))
		Expect(slices.DeleteFunc(slices.Clone(order), func(o string) bool { return o == "0" })).To(Equal([]string{"3", "2", "1"}))
		w.expectNothingLost()
	})
})

// clusterHistory is the simulator's history since a moment.
func clusterHistory(since time.Time) aerosim.History {
	GinkgoHelper()
	h, err := sim().History(context.Background(), since)
	Expect(err).NotTo(HaveOccurred())
	return h
}

// notReadyWatch polls the Ready condition of a cluster's pods, as `kubectl get pods` shows it, and
// keeps the most pods that were not Ready at once.
type notReadyWatch struct {
	cancel  context.CancelFunc
	done    chan struct{}
	most    int
	when    string
	samples int
}

func watchNotReady(namespace, name string) *notReadyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	wt := &notReadyWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(wt.done)
		for ctx.Err() == nil {
			out, err := kubectlErr("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/instance="+name, "-o",
				`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{" "}{end}`)
			if err == nil {
				var notReady []string
				for _, f := range strings.Fields(out) {
					if pod, status, _ := strings.Cut(f, "="); status != "True" {
						notReady = append(notReady, pod)
					}
				}
				wt.samples++
				if len(notReady) > wt.most {
					wt.most, wt.when = len(notReady), time.Now().Format(time.StampMilli)+": "+strings.Join(notReady, ", ")
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(400 * time.Millisecond):
			}
		}
	}()
	return wt
}

// stop ends the polling and returns the most pods not Ready at once, when and which, and the number of
// samples taken.
func (wt *notReadyWatch) stop() (int, string, int) {
	wt.cancel()
	<-wt.done
	return wt.most, wt.when, wt.samples
}

// Issue 22: readiness says whether this node can serve. A member of the cluster stays Ready while
// partitions migrate (the PodDisruptionBudget, at maxUnavailable 0 meanwhile, keeps drains off), so during
// a roll, a scale step and an operation no more pods are NotReady at any moment than the safety rule
// takes down: 1 at replication-factor 2. (Before, every pod was NotReady while the cluster migrated after
// each restart: the client Service had no endpoint at all.)
var _ = Describe("Pods that serve while partitions migrate", Ordered, Label("ready-while-migrating"), func() {
	const ns, name = "e2e-ready", "avail"
	prefix := ns + "/" + name + "-"

	BeforeAll(func() {
		applyYAML(clusterYAML(ns, name, 4, ""))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, name)
		allUp(prefix, 4)
	})

	// notReadyDuring runs act and returns the most pods not Ready at once meanwhile, with when and which.
	notReadyDuring := func(what string, act func()) (int, string) {
		GinkgoHelper()
		watch := watchNotReady(ns, name)
		act()
		most, when, samples := watch.stop()
		reportFigure("most pods not Ready at once during "+what, fmt.Sprintf("%d (%s; %d samples)", most, when, samples))
		return most, when
	}

	It("a roll restarts one node at a time and leaves the others Ready while they migrate", func() {
		most, when := notReadyDuring("a 4-pod roll", func() {
			before, start := startRoll(ns, name, 512)
			awaitConfig(prefix, 4, before, start)
			waitRunningObserved(ns, name)
		})
		Expect(most).To(Equal(1), "the restarting node only: %s", when)
	})

	It("a scale step down and back up", func() {
		most, when := notReadyDuring("scaling 4 → 3 → 4", func() {
			_, err := mergePatch(ns, name, `{"spec":{"size":3}}`)
			Expect(err).NotTo(HaveOccurred())
			waitRunningObserved(ns, name)
			allUp(prefix, 3)
			_, err = mergePatch(ns, name, `{"spec":{"size":4}}`)
			Expect(err).NotTo(HaveOccurred())
			waitRunningObserved(ns, name)
			allUp(prefix, 4)
		})
		Expect(most).To(Equal(1), "the leaving pod, then the joining one: %s", when)
	})

	It("a WarmRestart operation of every pod", func() {
		for o := range 4 {
			awaitExec(ns, fmt.Sprintf("%s-%d", name, o))
		}
		most, when := notReadyDuring("a 4-pod WarmRestart", func() {
			_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"avail-warm"}]}}`)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
				WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal("Completed"))
			waitRunningObserved(ns, name)
		})
		Expect(most).To(Equal(1), "the node restarting in place only: %s", when)
	})
})
