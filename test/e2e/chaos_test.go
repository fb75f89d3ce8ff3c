package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/localcluster/simclient"
	"github.com/acko-io/acko/test/workload"
)

// `make chaos` sets these; without them (make test-e2e) the chaos spec runs a short fixed sequence.
const (
	chaosSeedEnv     = "CHAOS_SEED"
	chaosDurationEnv = "CHAOS_DURATION"
	// chaosShortSeed and chaosShortDuration are the run of make test-e2e.
	chaosShortSeed     = 3
	chaosShortDuration = 60 * time.Second
	// chaosPause bounds the random pause between two faults.
	chaosPause = 5 * time.Second
	// chaosSettle bounds every wait of a fault for the cluster (Running, every node back).
	chaosSettle = 5 * time.Minute
)

// chaosSettings reads the seed and duration from the environment.
func chaosSettings() (uint64, time.Duration) {
	GinkgoHelper()
	seed, duration := uint64(chaosShortSeed), chaosShortDuration
	if v := os.Getenv(chaosSeedEnv); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		Expect(err).NotTo(HaveOccurred(), chaosSeedEnv)
	}
	if v := os.Getenv(chaosDurationEnv); v != "" {
		var err error
		duration, err = time.ParseDuration(v)
		Expect(err).NotTo(HaveOccurred(), chaosDurationEnv)
	}
	return seed, duration
}

// chaos injects random faults into one cluster, one after another. A fault that takes a node down by
// itself (a pod deleted, a node hung) waits until the cluster is Running with every node back and its
// migrations done: two such faults at once would take two copies down, which no operator can prevent.
// The other faults go through the operator's gates (a drain through the budget, spec changes through
// the roll) and may come at any moment, except that a spec change waits until the last one is done
// (issue 22, point 10: a change during an operation waits out the operation's deadline).
type chaos struct {
	ns, name string
	ctx      context.Context
	rng      *rand.Rand
	start    time.Time
	log      []string
	size     int
	rf       int
	image    int // index into chaosImages
	sprigs   int
	fdMax    int
	ops      int
	// the replication-factor changes: made (the cluster Running again at the new factor), of them with
	// a node killed in the middle, and refused (the cluster not Ready within chaosSettle)
	rfChanges, rfKilled, rfRefused int
}

var chaosImages = []string{"aerospike:ce-8.1.1.1", "aerospike:ce-8.1.2.0"}

// chaosFault is one kind of fault: its name and what it does (it says what it did).
type chaosFault struct {
	name   string
	inject func(c *chaos) string
}

var chaosFaults = []chaosFault{
	{name: "operator killed", inject: (*chaos).killOperator},
	{name: "pod deleted", inject: (*chaos).deletePod},
	{name: "node hung", inject: (*chaos).hangNode}, // simulated nodes only (chaosRealFaults)
	{name: "drain", inject: (*chaos).drain},
	{name: "config change", inject: (*chaos).changeConfig},
	{name: "scale step", inject: (*chaos).scale},
	{name: "operation", inject: (*chaos).operation},
	{name: "image change", inject: (*chaos).changeImage},
	{name: "replication-factor change", inject: (*chaos).changeReplicationFactor},
}

// record logs a fault with the time it began.
func (c *chaos) record(began time.Time, what string) {
	line := fmt.Sprintf("+%s %s", began.Sub(c.start).Round(time.Second), what)
	c.log = append(c.log, line)
	_, _ = fmt.Fprintf(GinkgoWriter, "chaos: %s\n", line)
}

func (c *chaos) pod() string { return fmt.Sprintf("%s-%d", c.name, c.rng.IntN(c.size)) }

// chaosRealFaults are the faults on real nodes: all but a node hung (the simulator's fault).
var chaosRealFaults = slices.DeleteFunc(slices.Clone(chaosFaults), func(f chaosFault) bool { return f.name == "node hung" })

// settled waits until the cluster runs its spec with every node a member and no migration left.
func (c *chaos) settled() {
	GinkgoHelper()
	Eventually(func() (string, error) {
		return field(c.ns, "asc/"+c.name, "{.status.phase} {.status.observedGeneration} {.metadata.generation}")
	}).WithTimeout(chaosSettle).WithPolling(time.Second).Should(MatchRegexp(`^Running (\d+) (\d+)$`))
	if opts.RealNodes {
		awaitRealCluster(c.ns, c.name, c.size)
		Eventually(func() []string { return unstableNodes(c.ns, c.name, c.size) }).WithTimeout(chaosSettle).Should(BeEmpty())
		return
	}
	Eventually(func() ([]aerosim.NodeState, error) { return simNodesNamed(c.ns + "/") }).WithTimeout(chaosSettle).
		Should(And(HaveLen(c.size), HaveEach(And(HaveField("Phase", aerosim.PhaseMember),
			HaveField("ClusterSize", c.size), HaveField("MigratePartitionsRemaining", BeZero())))))
}

// patch applies a spec change once the last one is done.
func (c *chaos) patch(patch string) string {
	GinkgoHelper()
	waitRunningObserved(c.ns, c.name)
	_, err := mergePatch(c.ns, c.name, patch)
	Expect(err).NotTo(HaveOccurred())
	return patch
}

func (c *chaos) killOperator() string {
	GinkgoHelper()
	manager := localcluster.ManagerName(localcluster.PrimaryManager)
	Expect(opts.KillProcess(manager)).To(Succeed())
	down := time.Duration(c.rng.IntN(5)) * time.Second
	time.Sleep(down)
	Expect(cluster.StartManager(c.ctx, localcluster.PrimaryManager)).To(Succeed())
	return fmt.Sprintf("killed the manager (SIGKILL), started it again after %s", down)
}

func (c *chaos) deletePod() string {
	GinkgoHelper()
	c.settled()
	pod := c.pod()
	kubectl("delete", "pod", pod, "-n", c.ns, "--wait=false")
	return "deleted pod " + pod
}

func (c *chaos) hangNode() string {
	GinkgoHelper()
	c.settled()
	pod := c.pod()
	node := simclient.NodeName(c.ns, pod)
	_, err := sim().SetFault(c.ctx, node, aerosim.FaultHang)
	Expect(err).NotTo(HaveOccurred())
	hung := time.Duration(2+c.rng.IntN(8)) * time.Second
	time.Sleep(hung)
	_, err = sim().SetFault(c.ctx, node, aerosim.FaultNone)
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf("hung the node of %s for %s", pod, hung)
}

// drain drains the kwok node of a random pod of the cluster (its pods only), then uncordons it.
func (c *chaos) drain() string {
	GinkgoHelper()
	pod := c.pod()
	node, err := field(c.ns, "pod/"+pod, "{.spec.nodeName}")
	if err != nil || node == "" {
		return fmt.Sprintf("no drain: pod %s has no node (%v)", pod, err)
	}
	out, err := kubectlErr("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
		"--pod-selector=app.kubernetes.io/instance="+c.name, "--timeout=2m")
	kubectl("uncordon", node)
	evicted := strings.Count(out, "evicted")
	return fmt.Sprintf("drained %s (pod %s): %d evicted, error %v; uncordoned", node, pod, evicted, err)
}

// changeConfig makes a static change (restarts in place) or a live one, at random.
func (c *chaos) changeConfig() string {
	GinkgoHelper()
	if c.rng.IntN(2) == 0 {
		c.fdMax++
		return c.patch(fmt.Sprintf(`{"spec":{"aerospikeConfig":{"service":{"proto-fd-max":%d}}}}`, 20000+c.fdMax))
	}
	c.sprigs = 256 + 512 - c.sprigs // 256 and 512 in turn
	return c.patch(c.namespacePatch())
}

func (c *chaos) namespacePatch() string {
	return fmt.Sprintf(`{"spec":{"aerospikeConfig":{"namespaces":[{"name":"test","replication-factor":%d,`+
		`"partition-tree-sprigs":%d,"storage-engine":{"type":"memory"}}]}}}`, c.rf, c.sprigs)
}

// scale moves the size one step between 3 and 5.
func (c *chaos) scale() string {
	GinkgoHelper()
	switch {
	case c.size == 3:
		c.size++
	case c.size == 5 || c.rng.IntN(2) == 0:
		c.size--
	default:
		c.size++
	}
	return c.patch(fmt.Sprintf(`{"spec":{"size":%d}}`, c.size))
}

func (c *chaos) operation() string {
	GinkgoHelper()
	c.ops++
	kind, pods := "WarmRestart", ""
	if c.rng.IntN(2) == 0 {
		kind, pods = "PodRestart", fmt.Sprintf(`,"podList":[%q]`, c.pod())
	}
	return c.patch(fmt.Sprintf(`{"spec":{"operations":[{"kind":%q,"id":"chaos-%d"%s}]}}`, kind, c.ops, pods))
}

func (c *chaos) changeImage() string {
	GinkgoHelper()
	c.image = 1 - c.image
	return c.patch(fmt.Sprintf(`{"spec":{"image":%q}}`, chaosImages[c.image]))
}

// changeReplicationFactor asks for the other factor (2 or 3) once the cluster is Ready (the webhook
// refuses it otherwise), waiting for that at most chaosSettle: a Ready cluster takes it (live on every
// node, then one recluster). Every other time a node is killed in the middle of it (its asd, once every
// other node runs the new factor: the stuck exchange the operator must end), and the change counts once
// the cluster is Running again at the new factor.
func (c *chaos) changeReplicationFactor() string {
	GinkgoHelper()
	if _, err := kubectlErr("wait", "--for=condition=Ready", "asc/"+c.name, "-n", c.ns,
		fmt.Sprintf("--timeout=%s", chaosSettle)); err != nil {
		c.rfRefused++
		return fmt.Sprintf("asked for replication-factor %d: not asked, the cluster was not Ready in %s", 5-c.rf, chaosSettle)
	}
	c.rf = 5 - c.rf
	// Only the factor changes (a merge patch of the namespace list would also spell out its defaults).
	_, err := kubectlErr("patch", "asc", c.name, "-n", c.ns, "--type", "json", "-p",
		fmt.Sprintf(`[{"op":"add","path":"/spec/aerospikeConfig/namespaces/0/replication-factor","value":%d}]`, c.rf))
	if err != nil {
		// Ready a moment ago, and not any more (a fault of the moment, a node that failed).
		Expect(err).To(MatchError(ContainSubstring(rfChangeNotReady)))
		c.rf = 5 - c.rf
		c.rfRefused++
		return fmt.Sprintf("asked for replication-factor %d: refused, the cluster is not Ready", 5-c.rf)
	}
	what := fmt.Sprintf("replication-factor %d", c.rf)
	if c.rng.IntN(2) == 0 {
		pods := make([]string, c.size)
		for i := range pods {
			pods[i] = fmt.Sprintf("%s-%d", c.name, i)
		}
		victim, err := downBeforeTheFactor(c.ns, c.name, pods, c.rf, c.crash)
		if err != nil {
			what += fmt.Sprintf(" (no node killed in the middle: %v)", err)
		} else {
			c.rfKilled++
			what += ", " + victim + "'s asd killed in the middle of it"
		}
	}
	waitRunningObserved(c.ns, c.name)
	c.rfChanges++
	return what
}

// crash kills a node's asd: its container (real nodes) or the simulator's node restarts on its own file.
func (c *chaos) crash(pod string) error {
	if opts.RealNodes {
		return cluster.KillReal(c.ns, pod)
	}
	_, err := sim().WarmRestart(c.ctx, simclient.NodeName(c.ns, pod))
	return err
}

// chaosLoad is the chaos workload: enough keys that every one of the 4096 partitions holds some (40 000
// keys leave 4096·e^(−40000/4096) ≈ 0.2 partitions empty; 500 keys touched about one in nine), each
// written once within withWorkload's wait.
var chaosLoad = workload.Config{Keys: 40000, Rate: 2000}

// rfChangeNotReady is the webhook's answer to a replication-factor change on a cluster that is not Ready.
const rfChangeNotReady = `while the cluster is not Ready: every node must run the same config`

// The chaos spec (issue 21): random faults on a cluster under the workload; at the end the cluster is
// Running and nothing acknowledged is lost. `make chaos CHAOS_SEED=... CHAOS_DURATION=...` replays a run.
var _ = Describe("Chaos", Label("chaos"), func() {
	It("keeps the cluster Running and loses no record under random faults", func(ctx SpecContext) {
		const ns, name = "e2e-chaos", "chaos"
		seed, duration := chaosSettings()
		replay := fmt.Sprintf("make chaos %s=%d %s=%s", chaosSeedEnv, seed, chaosDurationEnv, duration)
		reportFigure("chaos seed", replay)
		placement, faults := "", chaosFaults
		if opts.RealNodes {
			placement, faults = realPlacement, chaosRealFaults
		}
		createCluster(ns, name, 3, placement)
		c := &chaos{ns: ns, name: name, ctx: ctx, rng: rand.New(rand.NewPCG(seed, 0)), start: time.Now(),
			size: 3, rf: 2, sprigs: 256}
		c.settled()
		w := withWorkloadConfig(ns, name, chaosLoad)
		DeferCleanup(func(ctx SpecContext) {
			// A spec that failed mid-fault leaves the next specs a manager.
			if !opts.IsRunning(localcluster.ManagerName(localcluster.PrimaryManager)) {
				Expect(cluster.StartManager(ctx, localcluster.PrimaryManager)).To(Succeed())
			}
			if CurrentSpecReport().Failed() {
				_, _ = fmt.Fprintf(GinkgoWriter, "chaos failed: replay with %s; the faults:\n%s\n", replay, strings.Join(c.log, "\n"))
			}
		})
		for time.Since(c.start) < duration {
			f := faults[c.rng.IntN(len(faults))]
			began := time.Now()
			c.record(began, f.name+": "+f.inject(c))
			time.Sleep(time.Duration(c.rng.Int64N(int64(chaosPause))))
		}
		c.record(time.Now(), "the end: waiting until the cluster is Running with every node back")
		c.settled()
		rep := w.expectNothingLost()
		reportFigure("chaos", fmt.Sprintf("%d faults in %s, %s: %s", len(c.log)-1, time.Since(c.start).Round(time.Second),
			replay, summary(rep)))
		reportFigure("chaos: replication-factor changes", fmt.Sprintf("%d made (%d with a node killed in the middle), %d not made (the cluster not Ready)",
			c.rfChanges, c.rfKilled, c.rfRefused))
		_, _ = fmt.Fprintf(GinkgoWriter, "the faults:\n%s\n", strings.Join(c.log, "\n"))
	})
})
