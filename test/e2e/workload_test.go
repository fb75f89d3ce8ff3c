package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/localcluster/simclient"
	"github.com/acko-io/acko/test/workload"
)

// The load every fault spec runs with (issue 21): small, so that the specs' workloads together stay
// light on the shared cores, and big enough that every partition pair of a 3-node cluster holds keys.
const (
	workloadKeys = 500
	workloadRate = 200 // operations per second, half writes half reads
	// workloadStop bounds Stop: the load ends at once, the verification waits out the migrations.
	workloadStop = 3 * time.Minute
)

// workloadSets numbers the sets of the runs, so that a run never reads another run's records.
var workloadSets atomic.Int64

// workloadRun is the official client's workload on one cluster for the length of a spec.
type workloadRun struct {
	label string
	run   *workload.Run
	done  bool
	start time.Time
}

// withWorkload starts the workload against the pods of a cluster (seeds: their IPs at port 3000; the
// namespace test of clusterYAML) and waits until every key has an acknowledged write, so that a fault
// injected next can lose any of them. A spec that ends without expectNothingLost (a failure) still
// stops the load and prints its figures.
func withWorkload(namespace, name string) *workloadRun {
	GinkgoHelper()
	return withWorkloadConfig(namespace, name, workload.Config{})
}

// withWorkloadConfig is withWorkload with other keys, rate, split tolerance or seeds.
func withWorkloadConfig(namespace, name string, cfg workload.Config) *workloadRun {
	GinkgoHelper()
	if len(cfg.Seeds) == 0 {
		cfg.Seeds = podSeeds(namespace, name)
		cfg.CurrentSeeds = func() []string {
			seeds, err := runningPodSeeds(namespace, name)
			if err != nil {
				_, _ = fmt.Fprintf(GinkgoWriter, "workload: the pods' addresses: %v\n", err)
			}
			return seeds
		}
	}
	// The seeds stay in the client: a pod recreated meanwhile may leave its IP to a pod of another
	// cluster, whose nodes the client must not take for ours (the cluster-name is the cluster's name).
	cfg.ClusterName = name
	Expect(cfg.Seeds).NotTo(BeEmpty(), "no pod IP of %s/%s", namespace, name)
	cfg.Set = fmt.Sprintf("e2e-%d", workloadSets.Add(1))
	if cfg.Keys == 0 || cfg.Rate == 0 {
		cfg.Keys, cfg.Rate = workloadKeys, workloadRate
	}
	cfg.Log = GinkgoWriter
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := workload.Start(ctx, cfg)
	Expect(err).NotTo(HaveOccurred())
	w := &workloadRun{label: namespace + "/" + name, run: run, start: time.Now()}
	DeferCleanup(func() {
		if !w.done {
			_, _ = w.stop()
		}
	})
	// Half the operations write: the keys take 2·Keys/Rate seconds; twice that, or a minute.
	writeOnce := time.Duration(2*cfg.Keys/cfg.Rate) * time.Second
	Eventually(func() int { return run.Snapshot().Acknowledged }).WithTimeout(max(time.Minute, 2*writeOnce)).
		WithPolling(250*time.Millisecond).Should(Equal(cfg.Keys), "every key written once")
	return w
}

// podSeeds lists the IPs of a cluster's running pods at the service port.
func podSeeds(namespace, name string) []string {
	GinkgoHelper()
	seeds, err := runningPodSeeds(namespace, name)
	Expect(err).NotTo(HaveOccurred())
	return seeds
}

// runningPodSeeds is podSeeds without failing the spec (for code that runs outside its assertions).
func runningPodSeeds(namespace, name string) ([]string, error) {
	out, err := kubectlErr("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/instance="+name,
		"--field-selector=status.phase=Running", "-o", `jsonpath={range .items[*]}{.status.podIP}{" "}{end}`)
	var seeds []string
	for _, ip := range strings.Fields(out) {
		seeds = append(seeds, ip+":3000")
	}
	return seeds, err
}

// stop ends the load, verifies every acknowledged key and prints the figures (in the spec's output
// and the report).
func (w *workloadRun) stop() (workload.Report, error) {
	w.done = true
	ctx, cancel := context.WithTimeout(context.Background(), workloadStop)
	defer cancel()
	rep, err := w.run.Stop(ctx)
	_, _ = fmt.Fprintf(GinkgoWriter, "workload on %s:\n%s", w.label, rep.Table())
	AddReportEntry("workload on "+w.label, summary(rep))
	return rep, err
}

// printSimulator prints, for a loss to be understood, the simulator's nodes of the workload's
// namespace now and what happened to them since the load began.
func (w *workloadRun) printSimulator() {
	prefix := strings.SplitN(w.label, "/", 2)[0] + "/"
	nodes, err := simNodesNamed(prefix)
	if err != nil {
		_, _ = fmt.Fprintf(GinkgoWriter, "the simulator's nodes: %v\n", err)
		return
	}
	for _, n := range nodes {
		_, _ = fmt.Fprintf(GinkgoWriter, "node %s %s id %s %s cluster %s size %d migrating %d objects %v\n",
			n.Name, n.Addr, n.NodeID, n.Phase, n.ClusterKey, n.ClusterSize, n.MigratePartitionsRemaining, n.Objects)
	}
	h := clusterHistory(w.start)
	for _, t := range h.Transitions {
		if strings.HasPrefix(t.Node, prefix) {
			_, _ = fmt.Fprintf(GinkgoWriter, "%s %s up=%t %s cluster %s size %d\n", t.At.Format(time.StampMilli), t.Node,
				t.Up, t.Reason, t.ClusterKey, t.ClusterSize)
		}
	}
	for _, c := range h.Clusters {
		if slices.ContainsFunc(c.Members, func(m string) bool { return strings.HasPrefix(m, prefix) }) {
			_, _ = fmt.Fprintf(GinkgoWriter, "%s cluster %s %s formed: %v\n", c.At.Format(time.StampMilli), c.Key, c.Name, c.Members)
		}
	}
}

// summary is a report in one line.
func summary(rep workload.Report) string {
	lost := "not verified"
	if rep.Verified {
		lost = fmt.Sprintf("%d of %d (%.2f%%)", rep.Lost, rep.Acknowledged, rep.LostPercent())
	}
	return fmt.Sprintf("%.0f ops/s, %.2f%% available, longest write gap %s, errors %v, lost %s",
		rep.OpsPerSec, rep.Availability, rep.LongestWriteGap.Round(time.Millisecond), rep.ErrorsByCode, lost)
}

// expectNothingLost stops the workload and asserts that every acknowledged write reads back.
func (w *workloadRun) expectNothingLost() workload.Report {
	GinkgoHelper()
	rep, err := w.stop()
	Expect(err).NotTo(HaveOccurred(), "the verification ran")
	Expect(rep.Verified).To(BeTrue())
	if rep.Lost > 0 {
		w.printSimulator()
	}
	Expect(rep.Lost).To(BeZero(), "records lost on %s:\n%s", w.label, rep.Table())
	return rep
}

// realLostPercent is the real server's loss in the negative control's step (fixtures
// aerospike-ce-8.1.2.0/dataplane/README.md, step 4): 3 nodes, replication-factor 2, memory, two
// nodes restarted at once: 3193 of 10 000 keys.
const realLostPercent = 100 * 3193.0 / 10000

// The oracle can fail: bypassing the operator, the simulator's control API restarts two of three
// nodes of a replication-factor-2 memory namespace at once. The partitions whose two copies were
// both on them are gone: about a third of the keys, as on the real server.
var _ = Describe("The workload's negative control", Label("negative-control"), func() {
	It("loses about a third of the records when two of three nodes restart at once", func() {
		const ns, name = "e2e-negative", "negative"
		createCluster(ns, name, 3, "")
		allUp(ns+"/", 3)
		w := withWorkloadConfig(ns, name, workload.Config{Keys: 3000, Rate: 1000})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := sim().WarmRestartNodes(ctx, simclient.NodeName(ns, name+"-1"), simclient.NodeName(ns, name+"-2"))
		Expect(err).NotTo(HaveOccurred())
		w.expectAThirdLost("negative control")
	})
})

// expectAThirdLost stops the workload right after two of three nodes of a replication-factor-2 memory
// namespace went down at once, and asserts that about a third of the keys is lost, as on the real server.
// The load stops at once, so that rewrites after the nodes came back do not hide the loss; the
// verification waits out the migrations.
func (w *workloadRun) expectAThirdLost(what string) {
	GinkgoHelper()
	rep, err := w.stop()
	Expect(err).NotTo(HaveOccurred())
	Expect(rep.Verified).To(BeTrue())
	lost := rep.LostPercent()
	reportFigure(what, fmt.Sprintf("lost %d of %d acknowledged keys = %.1f%% (real server: 3193 of 10000 = %.1f%%)",
		rep.Lost, rep.Acknowledged, lost, realLostPercent))
	Expect(rep.Lost).To(BeNumerically(">", 0), "two copies down and nothing lost: the oracle cannot fail")
	// A third of the partitions had both copies on the two nodes, less what the load rewrote in the
	// moment before it stopped.
	Expect(lost).To(BeNumerically("~", realLostPercent, realLostPercent/4))
	Expect(rep.LostByReason).To(Equal(map[string]int{"KEY_NOT_FOUND_ERROR": rep.Lost}))
}
