package controller

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

const (
	// maxCrashPoints bounds the crash-safety loop (each crash point runs one operation).
	maxCrashPoints = 30
	// extraCrashPoints go past the clean run's write count: how many status writes an operation
	// makes varies a little with timing (the Reconciling message follows each wait reason).
	extraCrashPoints = 3
)

// errOperatorGone is what a crashed operator gets for anything it still tries.
var errOperatorGone = errors.New("operator process is gone (crash injected by the test)")

func (w *writeCounter) afterWrite(f func(n int)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.after = f
}

// crashConfig keeps a restart that was recorded but maybe not sent short to settle: the node's
// uptime is trusted after half a second instead of the default 15s.
var crashConfig = operations.Config{SettleDelay: 500 * time.Millisecond}

// operateWithCrash sets operation id on the cluster and lets a fresh operator run it. With crashAfter
// > 0 that operator dies right after its crashAfter-th write since the operation was set: every
// later write and signal fails, so nothing more of it lands, and its manager is stopped. A second
// fresh operator (new reconciler, cache and prober state; same world) then finishes the job.
// It returns the first operator's writes for the operation and whether it died mid-way.
func operateWithCrash(w *world, key types.NamespacedName, kind ackov1alpha1.OperationKind, id string, crashAfter int) ([]string, bool) {
	GinkgoHelper()
	first, err := newOperator(w, crashConfig)
	Expect(err).NotTo(HaveOccurred())
	base := first.writes.count()
	died := make(chan struct{})
	if crashAfter > 0 {
		first.writes.afterWrite(func(n int) {
			if n != base+crashAfter {
				return
			}
			// Runs in the reconcile that made the write, before it goes on: from here on the process
			// is gone as far as the cluster can tell.
			first.writes.setFail(func(string, client.Object) error { return errOperatorGone })
			w.set(func(w *world) { w.signalErr = func(string) error { return errOperatorGone } })
			first.cancel()
			close(died)
		})
	}
	setOperation(key, kind, id)
	Eventually(func() bool {
		select {
		case <-died:
			return true
		default:
		}
		c := fetch(key)
		st := c.Status.OperationStatus
		return st != nil && st.ID == id && st.Phase != ackov1alpha1.OperationInProgress &&
			c.Status.Phase == ackov1alpha1.PhaseRunning
	}, timeout, poll/5).Should(BeTrue())
	first.stop()
	writes := first.writes.list()[base:]
	select {
	case <-died:
	default:
		return writes, false
	}

	w.set(func(w *world) { w.signalErr = nil })
	w.Stop(key) // a new process has no health reading yet
	second, err := newOperator(w, crashConfig)
	Expect(err).NotTo(HaveOccurred())
	defer second.stop()
	waitOperation(key, id, ackov1alpha1.OperationCompleted)
	waitRunning(key)
	return writes, true
}

var _ = Describe("Operations survive an operator crash", func() {
	DescribeTable("after any write, a fresh operator finishes the operation and no pod is restarted twice",
		func(kind ackov1alpha1.OperationKind, how string) {
			ns, w := newNamespace()
			setup := startOperator(w, crashConfig)
			key := create(sampleCluster(ns, "ops", 3))
			waitRunning(key)
			setup.stop()

			// A clean run tells how many writes the operation makes, from the spec change until the
			// cluster is Running again with the operation Completed.
			before := traces(key, w)
			writes, _ := operateWithCrash(w, key, kind, "clean", 0)
			Expect(restartsSince(before, key, w)).To(Equal(each(allPods, how)))
			AddReportEntry(fmt.Sprintf("writes of a 3-pod %s", kind), fmt.Sprintf("%d: %v", len(writes), writes))
			Expect(len(writes)).To(BeNumerically(">=", 2*len(allPods)), "at least a begin and a done per pod")

			crashes := 0
			for n := 1; n <= min(len(writes)+extraCrashPoints, maxCrashPoints); n++ {
				id := fmt.Sprintf("crash-%d", n)
				before := traces(key, w)
				writes, crashed := operateWithCrash(w, key, kind, id, n)
				at := "no crash: the operation ended first"
				if crashed {
					crashes++
					at = "crash after " + writes[n-1]
				}
				st := operationStatus(key)
				Expect(st.Phase).To(Equal(ackov1alpha1.OperationCompleted), "%s, %s", id, at)
				Expect(st.CompletedPods).To(Equal(allPods), "%s, %s", id, at)
				Expect(restartsSince(before, key, w)).To(Equal(each(allPods, how)), "%s, %s", id, at)
			}
			AddReportEntry(fmt.Sprintf("crash points of a 3-pod %s", kind), crashes)
			Expect(crashes).To(BeNumerically(">=", len(allPods)), "the crash points were reached")
		},
		// Labelled so that `make test` (hack/test.sh) runs each in a process of its own: they are the longest specs.
		Entry("WarmRestart: each pod signalled exactly once", Label("crash-warm"), ackov1alpha1.OperationWarmRestart, "warm×1"),
		Entry("PodRestart: each pod deleted exactly once", Label("crash-pod"), ackov1alpha1.OperationPodRestart, "recreated×1"),
	)
})
