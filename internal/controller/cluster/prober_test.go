package cluster

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/test/aerosim"
)

// simulatedNodes serves every pod's address from a simulator, healthy, in one Aerospike cluster.
func simulatedNodes(w *world, subnet int) {
	sim, err := aerosim.New(aerosim.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(sim.Close)
	var mu sync.Mutex
	w.podIP = func(pod *corev1.Pod, ordinal int) string {
		mu.Lock()
		defer mu.Unlock()
		ip := fmt.Sprintf("127.0.%d.%d", subnet, ordinal+10)
		_, _ = sim.AddNode(aerosim.NodeSpec{Cluster: "c", Name: pod.Name, IP: ip})
		return ip
	}
}

var _ = Describe("A healthy cluster left alone, with the real prober polling the simulator", func() {
	It("costs no API write", func() {
		ns, w := newNamespace()
		simulatedNodes(w, 201)
		// 40ms between polls: the 150 polls of 6s are what 25 minutes of the default 10s interval make.
		w.prober = aerospike.NewProberManager(aerospike.ProberOptions{Interval: 40 * time.Millisecond, BusyInterval: 40 * time.Millisecond})
		op := startOperator(w, operations.Config{})
		key := create(sampleCluster(ns, "idle", 3))
		waitRunning(key)
		waitWritesSettled(op)
		before := op.writes.count()
		Consistently(func() []string { return op.writes.list()[before:] }, 6*time.Second, 100*time.Millisecond).
			Should(BeEmpty())
		health, ok := w.prober.Snapshot(key)
		Expect(ok).To(BeTrue())
		Expect(health.Nodes).To(HaveLen(3))
		stable, why := health.Gate([]string{"idle-0", "idle-1", "idle-2"}, health.ReadAt)
		Expect(stable).To(BeTrue(), why)
	})
})
