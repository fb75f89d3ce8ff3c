package e2e

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/internal/aerospike"
)

// realColdStartRecords is how many records the file-backed spec loads before its restart. A real asd
// 8.1.2.0 reads about 500 000 records a second back from a file in the page cache (4 000 000 in 7.9 s,
// measured on this kind of machine; 5 000 000 took 17.5 s on a loaded one), and logs its progress every
// 5 s, the first 5 s into the load (storage.c's TICKER_INTERVAL): a load shorter than that shows no
// progress at all. The operator polls every 5 s too, so the load must outlast its first ticker line by
// more than a poll: 6 000 000 records loaded in about 7.5 s on an idle machine, and the one poll between
// the ticker line and the end was missed (CI, stop 47). 10 000 000 is about 20 s idle.
const realColdStartRecords = 10_000_000

// Issue 39, a file-backed namespace restarted on a real asd 8.1.2.0 node: a Community Edition asd
// always cold starts, reading its file back before it opens its ports, and says how far only in its
// log. The status shows that progress as the operator read it from the real log, the readiness gate
// stays closed meanwhile, and nothing is lost.
//
// One node: a Community Edition cluster has no migrate-fill-delay, so every node that leaves and
// rejoins a 3-node cluster migrates its partitions in full, and the records a cold start needs to
// last past its first ticker line take long to migrate: 7 500 000 records over 3 nodes (replication
// factor 2) took 3m40s to write and, once the first node's 17.5 s cold start ended, 90 s to migrate
// 240 of its 2700 partitions on this kind of machine (about 17 minutes a node).
var _ = Describe("Real nodes: a file-backed namespace", Label("real"), func() {
	BeforeEach(func() {
		Expect(opts.RealNodes).To(BeTrue(), "the real tier needs real nodes (make test-real)")
	})

	It("rolls a static change in place: the status shows the cold start's progress read from the real log, nothing lost", func() {
		const ns, name = "real-cold", "realcold"
		pods := []string{name + "-0"}
		began := time.Now()
		applyYAML(clusterYAMLEngine(ns, name, 1,
			"type: device\n          files: [/opt/aerospike/data/test.dat]\n          filesize: 4G", realPlacement+`  storage:
    volumes:
      - name: data
        path: /opt/aerospike/data
        size: 10Gi
`))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, name)
		awaitRealCluster(ns, name, 1)
		reportTime("real cold start: a file-backed node Running", time.Since(began))

		fill := time.Now()
		Expect(fillRecords(podSeeds(ns, name), name, realColdStartRecords)).To(Succeed())
		reportTime(fmt.Sprintf("real cold start: %d records written", realColdStartRecords), time.Since(fill))
		reportRealRSS(ns, pods)
		w := withWorkload(ns, name)

		By("a static change restarts asd in place; it reads its file back")
		start := time.Now()
		stop := make(chan struct{})
		seen := sampleUntil(stop, 500*time.Millisecond, func() (loadSample, bool) { return sampleLoad(ns, pods) })
		_, err := mergePatch(ns, name, `{"spec":{"aerospikeConfig":{"service":{"log-local-time":true}}}}`)
		Expect(err).NotTo(HaveOccurred())
		waitRunningObserved(ns, name)
		awaitRealCluster(ns, name, 1)
		close(stop)
		reportTime(fmt.Sprintf("real cold start: static change rolled in place, a node of %d records", realColdStartRecords),
			time.Since(start))

		messages, progress := map[string][]string{}, 0
		for _, s := range <-seen {
			Expect(s.gateOpen).To(BeEmpty(), "the readiness gate opened while asd loaded")
			for p, msg := range s.messages {
				if !slices.Contains(messages[p], msg) {
					messages[p] = append(messages[p], msg)
				}
				if strings.Contains(msg, " of 100 % of its devices read") {
					progress++
				}
			}
		}
		for _, p := range pods {
			reportFigure("real cold start: the status of "+p+" while it loaded", strings.Join(messages[p], " | "))
			Expect(messages[p]).To(ContainElement(HavePrefix("loading data: test ")),
				"the status showed %s's cold start, read from its log", p)
		}
		Expect(progress).To(BeNumerically(">", 0), "a ticker line of the real log ({test} loaded: objects N device-pcts (P)) in the status")
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{pods[0]: "ConfigChanged"}))
		for _, p := range pods {
			Expect(mustField(ns, "asc/"+name, "{.status.pods."+p+".dataLoading}")).To(BeEmpty(), "cleared once %s answers", p)
		}
		Expect(kubectl("logs", pods[0], "-n", ns, "-c", "aerospike-server")).To(
			ContainSubstring("{test} loaded: objects "), "kubectl logs shows what the operator read")
		reportRealRSS(ns, pods)
		Expect(masterObjects(ns, name)).To(BeNumerically(">=", realColdStartRecords), "every record read back")
		w.expectNothingLost()
	})
})

// loadSample is what one look at a rolling cluster saw: each pod's status.pods[].dataLoading.message
// (only those with one), and the pods whose readiness gate was open while that message's load still
// progressed (expectGateClosedWhileLoading's rule).
type loadSample struct {
	messages map[string]string
	gateOpen []string
}

// sampleLoad reads the cluster's cold-start records in the status and the pods' readiness gates; it
// keeps the sample when some pod was loading.
func sampleLoad(ns string, pods []string) (loadSample, bool) {
	s := loadSample{messages: map[string]string{}}
	name := strings.TrimSuffix(pods[0], "-0")
	for _, p := range pods {
		load, _ := field(ns, "asc/"+name, "{.status.pods."+p+".dataLoading.message}|{.status.pods."+p+".dataLoading.progressed}")
		msg, progressed, _ := strings.Cut(load, "|")
		if !strings.HasPrefix(msg, "loading data: ") {
			continue
		}
		s.messages[p] = msg
		gate, _ := field(ns, "pod/"+p,
			`{range .status.conditions[?(@.type=="acko.io/aerospike-ready")]}{.status} {.lastTransitionTime}{end}`)
		if why := gateOpenWhileLoading(gate, progressed); why != "" {
			s.gateOpen = append(s.gateOpen, p+": "+why)
		}
	}
	return s, len(s.messages) > 0
}

// fillRecords writes n small records into the set "bulk" of namespace test, in batches of 1000 over
// 4 connections of the official client, each acknowledged.
func fillRecords(seeds []string, clusterName string, n int) error {
	hosts := make([]*as.Host, 0, len(seeds))
	for _, s := range seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return err
		}
		p, _ := strconv.Atoi(port)
		hosts = append(hosts, as.NewHost(host, p))
	}
	policy := as.NewClientPolicy()
	policy.ClusterName = clusterName
	client, err := as.NewClientWithPolicyAndHost(policy, hosts...)
	if err != nil {
		return err
	}
	defer client.Close()
	const batch, workers = 1000, 4
	bp := as.NewBatchPolicy()
	bp.TotalTimeout, bp.SocketTimeout = time.Minute, 30*time.Second
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for {
				from := int(next.Add(batch)) - batch
				if from >= n {
					return
				}
				recs := make([]as.BatchRecordIfc, 0, batch)
				for k := from; k < min(from+batch, n); k++ {
					key, err := as.NewKey("test", "bulk", k)
					if err != nil {
						errs[i] = err
						return
					}
					recs = append(recs, as.NewBatchWrite(nil, key, as.PutOp(as.NewBin("v", k))))
				}
				if err := client.BatchOperate(bp, recs); err != nil {
					errs[i] = fmt.Errorf("records %d-%d: %w", from, from+len(recs)-1, err)
					return
				}
				for _, r := range recs {
					if rc := r.BatchRec().ResultCode; rc != 0 {
						errs[i] = fmt.Errorf("record %v: result code %d", r.BatchRec().Key.Value(), rc)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// masterObjects is the number of master records of namespace test over the cluster's real nodes.
func masterObjects(ns, name string) int {
	GinkgoHelper()
	ips, err := realPodIPs(ns, name)
	Expect(err).NotTo(HaveOccurred())
	total := 0
	for pod, ip := range ips {
		answer, err := realInfo(ip, "namespace/test")
		Expect(err).NotTo(HaveOccurred(), pod)
		n, err := strconv.Atoi(aerospike.ParseKV(answer)["master_objects"])
		Expect(err).NotTo(HaveOccurred(), "%s: %q", pod, answer)
		total += n
	}
	return total
}
