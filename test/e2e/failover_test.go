package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/localcluster"
)

// uidTracker records every UID each pod of a cluster has had, polling until stopped: a pod
// restarted twice shows three UIDs even if the test looks only before and after.
type uidTracker struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
	stop chan struct{}
	done chan struct{}
}

func trackPodUIDs(namespace, name string) *uidTracker {
	t := &uidTracker{seen: map[string]map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	t.record(podUIDs(namespace, name))
	go func() {
		defer GinkgoRecover()
		defer close(t.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				out, err := kubectlErr("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/instance="+name,
					"-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}`)
				if err != nil {
					continue
				}
				uids := map[string]string{}
				for _, line := range strings.Fields(out) {
					k, v, _ := strings.Cut(line, "=")
					uids[k] = v
				}
				t.record(uids)
			}
		}
	}()
	return t
}

func (t *uidTracker) record(uids map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for pod, uid := range uids {
		if t.seen[pod] == nil {
			t.seen[pod] = map[string]bool{}
		}
		t.seen[pod][uid] = true
	}
}

// incarnations stops the tracker and says how many UIDs each pod had.
func (t *uidTracker) incarnations() map[string]int {
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for pod, uids := range t.seen {
		out[pod] = len(uids)
	}
	return out
}

func isLeader(i int) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return opts.IsLeader(ctx, i)
}

func leaseHolder() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return opts.LeaseHolder(ctx)
}

// leader is the manager that leads now: under load a leader that cannot renew its lease in time
// gives up (and exits), so which one leads is read, not assumed.
func leader() int {
	GinkgoHelper()
	found := -1
	Eventually(func() int {
		found = -1
		for _, i := range []int{localcluster.PrimaryManager, localcluster.StandbyManager} {
			if ok, _ := isLeader(i); ok {
				found = i
			}
		}
		return found
	}).Should(BeNumerically(">=", 0), "no manager leads")
	return found
}

// ensureManagers starts whichever of the two managers is not running.
func ensureManagers(ctx context.Context) {
	GinkgoHelper()
	for _, i := range []int{localcluster.PrimaryManager, localcluster.StandbyManager} {
		if !opts.IsRunning(localcluster.ManagerName(i)) {
			Expect(cluster.StartManager(ctx, i)).To(Succeed())
		}
	}
}

// killLeader kills the leading manager (SIGKILL: no lease release), measures how long the lease
// takes to change hands, and returns that time and the manager killed.
func killLeader() (time.Duration, int) {
	GinkgoHelper()
	i := leader()
	holder, err := leaseHolder()
	Expect(err).NotTo(HaveOccurred())
	killed := time.Now()
	Expect(opts.KillProcess(localcluster.ManagerName(i))).To(Succeed())
	Eventually(leaseHolder).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).
		ShouldNot(Or(Equal(holder), BeEmpty()))
	failover := time.Since(killed)
	Eventually(func() (bool, error) { return isLeader(1 - i) }).Should(BeTrue())
	return failover, i
}

// The e2e managers elect a leader with 8-second leases (localcluster.E2EOptions): the standby
// takes over within a lease after the leader dies, and finishes its work without repeating any.
var _ = Describe("Leader failover between two managers", Ordered, func() {
	const ns, name = "e2e-failover", "failover"
	pods := []string{"failover-0", "failover-1", "failover-2"}

	BeforeAll(func(ctx SpecContext) {
		createCluster(ns, name, 3, "")
		Expect(cluster.StartManager(ctx, localcluster.StandbyManager)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			// Leave the suite as it was: the primary alone, leading (a stopped leader releases the lease).
			Expect(opts.StopProcess(localcluster.ManagerName(localcluster.StandbyManager))).To(Succeed())
			if ok, _ := isLeader(localcluster.PrimaryManager); !ok {
				_ = opts.StopProcess(localcluster.ManagerName(localcluster.PrimaryManager))
				Expect(cluster.StartManager(ctx, localcluster.PrimaryManager)).To(Succeed())
			}
			Eventually(func() (bool, error) { return isLeader(localcluster.PrimaryManager) }).Should(BeTrue())
		})
		Eventually(func() (bool, error) { return isLeader(localcluster.PrimaryManager) }).Should(BeTrue())
		Expect(isLeader(localcluster.StandbyManager)).To(BeFalse())
	})

	It("the standby finishes a rolling restart the killed leader began, restarting every pod exactly once", func(ctx SpecContext) {
		ensureManagers(ctx)
		w := withWorkload(ns, name)
		before := podUIDs(ns, name)
		tracker := trackPodUIDs(ns, name)
		// A pod spec change: its rolling restart recreates the pods (a config change would not).
		_, err := mergePatch(ns, name, `{"spec":{"podSpec":{"annotations":{"e2e.acko.io/roll":"1"}}}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return restartedPods(ns, name, before) }).WithTimeout(2 * time.Minute).
			WithPolling(100 * time.Millisecond).Should(BeNumerically(">=", 1))

		failover, killed := killLeader()
		AddReportEntry("failover during a rolling restart", failover.String())
		_, _ = fmt.Fprintf(GinkgoWriter, "failover (kill to new lease holder) during a rolling restart: %s\n", failover)

		Eventually(func() int { return restartedPods(ns, name, before) }).WithTimeout(5 * time.Minute).Should(Equal(3))
		waitRunningObserved(ns, name)
		Expect(tracker.incarnations()).To(Equal(map[string]int{"failover-0": 2, "failover-1": 2, "failover-2": 2}),
			"every pod restarted exactly once")
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{
			"failover-0": "PodSpecChanged", "failover-1": "PodSpecChanged", "failover-2": "PodSpecChanged"}))
		Expect(eventMessages(ns, name, "RollingRestartStarted")).To(HaveLen(3))
		w.expectNothingLost()

		// The killed manager comes back as the standby.
		Expect(cluster.StartManager(ctx, killed)).To(Succeed())
		Expect(isLeader(killed)).To(BeFalse())
	})

	It("the other manager finishes a WarmRestart the killed leader began, restarting every node exactly once", func(ctx SpecContext) {
		ensureManagers(ctx)
		for _, p := range pods {
			awaitExec(ns, p)
		}
		w := withWorkload(ns, name)
		uids := podUIDs(ns, name)
		before := restarts(ns, pods)
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"failover"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) {
			return field(ns, "asc/"+name, "{.status.operationStatus.completedPods}")
		}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(MatchRegexp(`^\["[^"]+"\]$`))

		failover, _ := killLeader()
		AddReportEntry("failover during a WarmRestart", failover.String())
		_, _ = fmt.Fprintf(GinkgoWriter, "failover (kill to new lease holder) during a WarmRestart: %s\n", failover)

		Eventually(func() (string, error) { return field(ns, "asc/"+name, "{.status.operationStatus.phase}") }).
			WithTimeout(5 * time.Minute).Should(Equal("Completed"))
		after := restarts(ns, pods)
		for _, p := range pods {
			Expect(after[p]).To(Equal(before[p]+1), "exactly one restart of %s", p)
		}
		Expect(podUIDs(ns, name)).To(Equal(uids), "a warm restart keeps every pod")
		Expect(mustField(ns, "asc/"+name, "{.status.operationStatus.completedPods}")).
			To(Equal(`["failover-0","failover-1","failover-2"]`))
		w.expectNothingLost()
	})
})
