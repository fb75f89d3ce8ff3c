package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/localcluster/simclient"
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
	{name: "node hung", inject: (*chaos).hangNode},
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

// settled waits until the cluster runs its spec with every node a member and no migration left.
func (c *chaos) settled() {
	GinkgoHelper()
	Eventually(func() (string, error) {
		return field(c.ns, "asc/"+c.name, "{.status.phase} {.status.observedGeneration} {.metadata.generation}")
	}).WithTimeout(chaosSettle).WithPolling(time.Second).Should(MatchRegexp(`^Running (\d+) (\d+)$`))
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

// changeReplicationFactor asks for the other factor (2 or 3): a Ready cluster takes it (live on every node,
// then one recluster); otherwise the webhook refuses it and nothing changes.
func (c *chaos) changeReplicationFactor() string {
	GinkgoHelper()
	c.rf = 5 - c.rf
	// Only the factor changes (a merge patch of the namespace list would also spell out its defaults).
	_, err := kubectlErr("patch", "asc", c.name, "-n", c.ns, "--type", "json", "-p",
		fmt.Sprintf(`[{"op":"add","path":"/spec/aerospikeConfig/namespaces/0/replication-factor","value":%d}]`, c.rf))
	if err != nil {
		Expect(err).To(MatchError(ContainSubstring(rfChangeNotReady)))
		c.rf = 5 - c.rf
		return fmt.Sprintf("asked for replication-factor %d: refused, the cluster is not Ready", 5-c.rf)
	}
	return fmt.Sprintf("replication-factor %d", c.rf)
}

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
		createCluster(ns, name, 3, "")
		allUp(ns+"/", 3)
		w := withWorkload(ns, name)
		c := &chaos{ns: ns, name: name, ctx: ctx, rng: rand.New(rand.NewPCG(seed, 0)), start: time.Now(),
			size: 3, rf: 2, sprigs: 256}
		DeferCleanup(func(ctx SpecContext) {
			// A spec that failed mid-fault leaves the next specs a manager.
			if !opts.IsRunning(localcluster.ManagerName(localcluster.PrimaryManager)) {
				Expect(cluster.StartManager(ctx, localcluster.PrimaryManager)).To(Succeed())
			}
			if CurrentSpecReport().Failed() {
				_, _ = fmt.Fprintf(GinkgoWriter, "chaos failed: replay with %s; the faults:\n%s\n", replay, strings.Join(c.log, "\n"))
			}
		})
		faults := chaosFaults
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
		_, _ = fmt.Fprintf(GinkgoWriter, "the faults:\n%s\n", strings.Join(c.log, "\n"))
	})
})
