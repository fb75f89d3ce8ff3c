package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/test/testcluster"
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

// operateWithCrash sets operation id on the cluster and runs it with runWithCrash.
func operateWithCrash(w *world, key types.NamespacedName, kind ackov1alpha1.OperationKind, id string, crashAfter int) ([]string, bool) {
	GinkgoHelper()
	return runWithCrash(w, key, crashAfter, func() { setOperation(key, kind, id) }, func() bool {
		c := fetch(key)
		st := c.Status.OperationStatus
		return st != nil && st.ID == id && st.Phase != ackov1alpha1.OperationInProgress &&
			c.Status.Phase == ackov1alpha1.PhaseRunning
	}, func() {
		waitOperation(key, id, ackov1alpha1.OperationCompleted)
		waitRunning(key)
	})
}

// runWithCrash lets a fresh operator start a change (start) and carry it out until finished. With
// crashAfter > 0 that operator dies right after its crashAfter-th write since the start: every later
// write and exec into a pod fails, so nothing more of it lands, and its manager is stopped. A second fresh
// operator (new reconciler, cache and prober state; same world) then finishes the job (settled). It
// returns the first operator's writes for the change and whether it died mid-way.
func runWithCrash(w *world, key types.NamespacedName, crashAfter int, start func(), finished func() bool,
	settled func()) ([]string, bool) {
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
			w.set(func(w *world) { w.execErr = func(string) error { return errOperatorGone } })
			first.cancel()
			close(died)
		})
	}
	start()
	Eventually(func() bool {
		select {
		case <-died:
			return true
		default:
		}
		return finished()
	}, timeout, poll/5).Should(BeTrue())
	first.stop()
	writes := first.writes.list()[base:]
	select {
	case <-died:
	default:
		return writes, false
	}

	w.set(func(w *world) { w.execErr = nil })
	w.Stop(key) // a new process has no health reading yet
	second, err := newOperator(w, crashConfig)
	Expect(err).NotTo(HaveOccurred())
	defer second.stop()
	settled()
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

// A roll or a scale step, changed there and back: the way there runs with a crash after each write in
// turn, the way back (when it is not a crash point itself) with no crash.
type crashChange struct {
	size   int32
	racks  []int32
	there  func(c *ackov1alpha1.AerospikeCluster, n int) // the n-th change, a crash point
	back   func(c *ackov1alpha1.AerospikeCluster)        // undoes it with no crash (nil: there alternates)
	expect func(names []string) map[string]string        // what happens to the pods that remain
	// live runs the pods' asd as simulated nodes (world.sim) and gives the operator the real
	// liveconfig.Applier; without it, the operator has no live changes and restarts in place instead.
	live bool
	// shows, with live, is what every node reports after the n-th change: the info command, the
	// name in its answer and the value.
	shows func(n int) (command, name, value string)
	// from, when set, is the cluster's config before the first change (else the sample's).
	from func(c *ackov1alpha1.AerospikeCluster)
}

func proto(c *ackov1alpha1.AerospikeCluster, n int) {
	c.Spec.AerospikeConfig.Value["service"] = map[string]any{"proto-fd-max": int64(20000 + n)}
}

func protoShown(n int) (string, string, string) {
	return "get-config:context=service", "proto-fd-max", strconv.Itoa(20000 + n)
}

// histograms turns microsecond histograms on and the namespace's read benchmarks off (back: the other
// way). Both are dynamic, and a real 8.1.2.0 server refuses to change microsecond-histograms while any
// enable-benchmarks-* is on: the change is applied live in two requests per node, the benchmarks off
// first (back: microsecond-histograms off first), and a crash may fall between them.
func histograms(on bool) func(c *ackov1alpha1.AerospikeCluster) {
	return func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.AerospikeConfig.Value["service"] = map[string]any{"microsecond-histograms": on}
		ns := c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)
		ns["enable-benchmarks-read"] = !on
	}
}

func histogramsShown(int) (string, string, string) {
	return "get-config:context=service", "microsecond-histograms", "true"
}

// factor sets the namespace's replication-factor: a change every node takes together, then one
// recluster.
func factor(rf int64) func(c *ackov1alpha1.AerospikeCluster) {
	return func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = rf
	}
}

// factorShown: the factor in effect (the partition map's, after the recluster), not only the one set.
func factorShown(int) (string, string, string) {
	return "namespace/test", "effective_replication_factor", "3"
}

// checkNodes: every remaining pod's node reports the n-th change's value, and its asd restarted
// exactly as often as the world signalled it (a live change that restarted asd on its own shows here).
func checkNodes(w *world, key types.NamespacedName, cc crashChange, n int, at string) {
	GinkgoHelper()
	cmd, name, want := cc.shows(n)
	for pod := range podUIDs(key) {
		p := &corev1.Pod{}
		Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: key.Namespace, Name: pod}, p)).To(Succeed())
		Expect(nodeValue(p, cmd, name)).To(Equal(want), "%s, %s: %s of %s", pod, at, cmd, name)
		st, err := w.sim.Node(pod)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Restarts).To(Equal(w.warmRestarts(pod)), "%s, %s: asd restarts", pod, at)
		Expect(st.Crashes).To(BeZero(), "%s, %s", pod, at)
	}
}

// withGrowingVolume gives the cluster a Block volume of 1Gi whose StorageClass allows expansion.
func withGrowingVolume(c *ackov1alpha1.AerospikeCluster) {
	GinkgoHelper()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "world-expandable"}, Provisioner: "example.com/disk",
		AllowVolumeExpansion: ptr.To(true)}
	Expect(client.IgnoreAlreadyExists(k8s.Create(context.Background(), class))).To(Succeed())
	c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{{Name: "data", Path: "/dev/xvdb",
		Size: resource.MustParse("1Gi"), VolumeMode: corev1.PersistentVolumeBlock, StorageClassName: ptr.To(class.Name)}}}
}

func image(c *ackov1alpha1.AerospikeCluster, n int) {
	c.Spec.Image = []string{"aerospike:ce-8.1.2.0", testcluster.Image}[n%2]
}

var _ = Describe("Rolls and scale-downs survive an operator crash", func() {
	DescribeTable("after any write, a fresh operator finishes the change and no pod is restarted twice or left out",
		func(cc crashChange) {
			began := time.Now()
			var tune []func(*world)
			if cc.live {
				tune = append(tune, withSim)
			}
			ns, w := newNamespace(tune...)
			setup := startOperator(w, crashConfig)
			c := sampleCluster(ns, "roll", cc.size)
			if cc.from != nil {
				cc.from(c)
			}
			if len(cc.racks) > 0 {
				c.Spec.RackConfig = &ackov1alpha1.RackConfig{}
				for _, id := range cc.racks {
					c.Spec.RackConfig.Racks = append(c.Spec.RackConfig.Racks, ackov1alpha1.Rack{ID: id})
				}
			}
			key := create(c)
			waitRunning(key)
			setup.stop()

			change := func(n, crashAfter int) ([]string, bool, map[string]string) {
				if cc.back != nil && n > 0 {
					back := startOperator(w, crashConfig)
					update(key, cc.back)
					waitRunning(key)
					back.stop()
				}
				before := traces(key, w)
				writes, crashed := runWithCrash(w, key, crashAfter, func() {
					update(key, func(c *ackov1alpha1.AerospikeCluster) { cc.there(c, n) })
				}, func() bool {
					c := fetch(key)
					return c.Status.Phase == ackov1alpha1.PhaseRunning && c.Status.ObservedGeneration == c.Generation
				}, func() { waitRunning(key) })
				return writes, crashed, restartsSince(before, key, w)
			}
			writes, _, restarts := change(0, 0)
			remaining := slices.Sorted(maps.Keys(podUIDs(key)))
			Expect(restarts).To(Equal(cc.expect(remaining)))
			if cc.live {
				checkNodes(w, key, cc, 0, "clean run")
			}
			AddReportEntry("writes of the change", fmt.Sprintf("%d: %v", len(writes), writes))

			// Every write of the clean run is a crash point (operations stop at maxCrashPoints).
			crashes := 0
			for n := 1; n <= len(writes)+extraCrashPoints; n++ {
				writes, crashed, restarts := change(n, n)
				at := "no crash: the change ended first"
				if crashed {
					crashes++
					at = "crash after " + writes[n-1]
				}
				Expect(restarts).To(Equal(cc.expect(remaining)), "crash point %d, %s", n, at)
				Expect(slices.Sorted(maps.Keys(podUIDs(key)))).To(Equal(remaining), "crash point %d, %s", n, at)
				if cc.live {
					checkNodes(w, key, cc, n, fmt.Sprintf("crash point %d, %s", n, at))
				}
			}
			AddReportEntry("crash points", crashes)
			AddReportEntry("run time", time.Since(began).Round(time.Second).String())
			Expect(crashes).To(BeNumerically(">=", len(writes)/2), "the crash points were reached")
		},
		// Under the labels of the operations' tables: hack/test.sh runs the controller suite in three processes.
		Entry("evict and recreate (image change)", Label("crash-pod"), crashChange{size: 2, there: image,
			expect: func(names []string) map[string]string { return each(names, "recreated×1") }}),
		Entry("restart in place (config change, no live changes)", Label("crash-warm"), crashChange{size: 2, there: proto,
			expect: func(names []string) map[string]string { return each(names, "warm×1") }}),
		Entry("apply live (dynamic service.proto-fd-max)", Label("crash-pod"), crashChange{size: 2, there: proto,
			live: true, shows: protoShown,
			expect: func([]string) map[string]string { return map[string]string{} }}),
		Entry("apply live in two requests per node (benchmarks off, then microsecond-histograms on)",
			Label("crash-warm"), crashChange{size: 2, live: true, from: histograms(false),
				there: func(c *ackov1alpha1.AerospikeCluster, _ int) { histograms(true)(c) }, back: histograms(false),
				shows: histogramsShown, expect: func([]string) map[string]string { return map[string]string{} }}),
		Entry("replication-factor 2 → 3: live on every node, then one recluster", Label("crash-warm"),
			crashChange{size: 3, live: true, there: func(c *ackov1alpha1.AerospikeCluster, _ int) { factor(3)(c) },
				back: factor(2), shows: factorShown, expect: func([]string) map[string]string { return map[string]string{} }}),
		Entry("a larger Block volume: StatefulSet replaced, claims resized, each pod restarted in place",
			Label("crash-volumes"), crashChange{size: 2, from: withGrowingVolume,
				there: func(c *ackov1alpha1.AerospikeCluster, n int) {
					c.Spec.Storage.Volumes[0].Size = resource.MustParse(fmt.Sprintf("%dGi", 2+n))
				},
				expect: func(names []string) map[string]string { return each(names, "warm×1") }}),
		Entry("a larger Block volume in the same edit as a scale-down (3 → 2): the StatefulSet created again asks "+
			"for the leaving pod until the door lets it go, each remaining pod restarted in place", Label("crash-volumes"),
			crashChange{size: 3, from: withGrowingVolume,
				there: func(c *ackov1alpha1.AerospikeCluster, n int) {
					c.Spec.Size, c.Spec.Storage.Volumes[0].Size = 2, resource.MustParse(fmt.Sprintf("%dGi", 2+n))
				},
				back:   func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 3 },
				expect: func(names []string) map[string]string { return each(names, "warm×1") }}),
		Entry("replicas decrement (3 → 2)", Label("crash-pod"), crashChange{size: 3,
			there:  func(c *ackov1alpha1.AerospikeCluster, _ int) { c.Spec.Size = 2 },
			back:   func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 3 },
			expect: func([]string) map[string]string { return map[string]string{} }}),
		Entry("rack removal", Label("crash-warm"), crashChange{size: 4, racks: []int32{1, 2},
			there: func(c *ackov1alpha1.AerospikeCluster, _ int) {
				c.Spec.Size, c.Spec.RackConfig.Racks = 2, c.Spec.RackConfig.Racks[:1]
			},
			back: func(c *ackov1alpha1.AerospikeCluster) {
				c.Spec.Size, c.Spec.RackConfig.Racks = 4, append(c.Spec.RackConfig.Racks, ackov1alpha1.Rack{ID: 2})
			},
			expect: func([]string) map[string]string { return map[string]string{} }}),
	)
})
