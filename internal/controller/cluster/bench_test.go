package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/testenv"
)

// The benchmarks run on the same real API server as the suite (started here, since `go test
// -bench` without -run does not run the Ginkgo suite). make bench runs each once (-benchtime 1x):
// the figures are per-operation measurements reported with b.ReportMetric.

var (
	benchEnvOnce    sync.Once
	benchEnvStarted bool
)

// TestMain stops the API server the benchmarks started (the Ginkgo suite stops its own in AfterSuite).
func TestMain(m *testing.M) {
	code := m.Run()
	if benchEnvStarted && env != nil {
		_ = env.Stop()
	}
	os.Exit(code)
}

func benchSetup(b *testing.B) (ns string, w *world) {
	b.Helper()
	benchEnvOnce.Do(func() {
		RegisterFailHandler(func(msg string, _ ...int) { panic(msg) })
		logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
		var err error
		if env, cfg, err = testenv.Start(); err != nil {
			b.Fatal(err)
		}
		benchEnvStarted = true
		scheme = runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = ackov1alpha1.AddToScheme(scheme)
		if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			b.Fatal(err)
		}
	})
	ns, w, stop, err := startWorld()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return ns, w
}

func benchOperator(b *testing.B, w *world) *operator {
	b.Helper()
	op, err := newOperator(w, operations.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(op.stop)
	return op
}

// waitFor polls cond every 5ms for up to a minute.
func waitFor(b *testing.B, what string, cond func(c *ackov1alpha1.AerospikeCluster) bool, key types.NamespacedName) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		c := &ackov1alpha1.AerospikeCluster{}
		if k8s.Get(context.Background(), key, c) == nil && cond(c) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := &ackov1alpha1.AerospikeCluster{}
	_ = k8s.Get(context.Background(), key, c)
	b.Fatalf("timed out waiting for %s of %s: phase %s, observed %d of generation %d, conditions %+v", what, key,
		c.Status.Phase, c.Status.ObservedGeneration, c.Generation, c.Status.Conditions)
}

func isRunning(c *ackov1alpha1.AerospikeCluster) bool {
	return c.Status.Phase == ackov1alpha1.PhaseRunning && c.Status.ObservedGeneration == c.Generation
}

func isPaused(c *ackov1alpha1.AerospikeCluster) bool {
	return c.Status.Phase == ackov1alpha1.PhasePaused && meta.IsStatusConditionTrue(c.Status.Conditions, ackov1alpha1.ConditionPaused)
}

func benchCreate(b *testing.B, c *ackov1alpha1.AerospikeCluster) types.NamespacedName {
	b.Helper()
	if err := k8s.Create(context.Background(), c); err != nil {
		b.Fatal(err)
	}
	return client.ObjectKeyFromObject(c)
}

func benchPatch(b *testing.B, key types.NamespacedName, mutate func(*ackov1alpha1.AerospikeCluster)) {
	b.Helper()
	for range 20 {
		c := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(context.Background(), key, c); err != nil {
			b.Fatal(err)
		}
		mutate(c)
		if err := k8s.Update(context.Background(), c); err == nil {
			return
		}
	}
	b.Fatal("could not update the cluster")
}

// BenchmarkSteadyReconcile: API requests and writes of one reconcile of a healthy, unchanged
// 3-node cluster (the cost of every watch or prober wake-up).
func BenchmarkSteadyReconcile(b *testing.B) {
	ns, w := benchSetup(b)
	op := benchOperator(b, w)
	key := benchCreate(b, sampleCluster(ns, "steady", 3))
	waitFor(b, "Running", isRunning, key)
	time.Sleep(time.Second) // let the last watch events settle
	requests, writes := op.requests.Load(), op.writes.count()
	req := ctrl.Request{NamespacedName: key}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if _, err := op.reconciler.Reconcile(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(op.requests.Load()-requests)/float64(n), "api-requests/op")
	b.ReportMetric(float64(op.writes.count()-writes)/float64(n), "writes/op")
}

// BenchmarkPauseLatency: time from `spec.paused=true` landing to status phase Paused, over 20
// pauses, with a healthy cluster and with every Aerospike node hanging (a real prober over the
// simulator, calls bounded by the 2s info timeout).
func BenchmarkPauseLatency(b *testing.B) {
	for _, hang := range []bool{false, true} {
		name := "healthy"
		if hang {
			name = "nodes-hanging"
		}
		b.Run(name, func(b *testing.B) {
			ns, w := benchSetup(b)
			if hang {
				hangingNodes(b, w)
			}
			benchOperator(b, w)
			key := benchCreate(b, sampleCluster(ns, "pauser", 3))
			waitFor(b, "pods", func(c *ackov1alpha1.AerospikeCluster) bool { return c.Status.Size == 3 }, key)
			var lat []time.Duration
			for b.Loop() {
				lat = append(lat, pauseRounds(b, key, 20)...)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}

func pauseRounds(b *testing.B, key types.NamespacedName, n int) []time.Duration {
	var lat []time.Duration
	for range n {
		benchPatch(b, key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = true })
		start := time.Now()
		waitFor(b, "Paused", isPaused, key)
		lat = append(lat, time.Since(start))
		benchPatch(b, key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = false })
		waitFor(b, "resumed", func(c *ackov1alpha1.AerospikeCluster) bool { return c.Status.Phase != ackov1alpha1.PhasePaused }, key)
	}
	return lat
}

// hangingNodes serves every pod's address from the simulator with nodes that accept and never answer.
func hangingNodes(b *testing.B, w *world) {
	sim, err := aerosim.New(aerosim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sim.Close() })
	var mu sync.Mutex
	w.podIP = func(pod *corev1.Pod, ordinal int) string {
		mu.Lock()
		defer mu.Unlock()
		ip := fmt.Sprintf("127.0.%d.%d", 200, ordinal+10)
		if _, err := sim.AddNode(aerosim.NodeSpec{Cluster: "hang", Name: pod.Name, IP: ip}); err == nil {
			_, _ = sim.SetFault(pod.Name, aerosim.FaultHang)
		}
		return ip
	}
	w.prober = aerospike.NewProberManager(aerospike.ProberOptions{BusyInterval: 200 * time.Millisecond})
}

// BenchmarkWarmRestartOverhead: a 3-pod WarmRestart where asd restarts instantly, so the time is
// the operator's own overhead (status writes, exec, waiting for the next health reading).
func BenchmarkWarmRestartOverhead(b *testing.B) {
	ns, w := benchSetup(b)
	benchOperator(b, w)
	key := benchCreate(b, sampleCluster(ns, "warm", 3))
	waitFor(b, "Running", isRunning, key)
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("warm-%d", i)
		benchPatch(b, key, func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: id}}
		})
		waitFor(b, "Completed", func(c *ackov1alpha1.AerospikeCluster) bool {
			op := c.Status.OperationStatus
			return op != nil && op.ID == id && op.Phase == ackov1alpha1.OperationCompleted
		}, key)
	}
}

// BenchmarkManagerMemory: heap held by the manager with 40 clusters of 8 pods cached and probed.
func BenchmarkManagerMemory(b *testing.B) {
	ns, w := benchSetup(b)
	for b.Loop() {
		var before goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		op := benchOperator(b, w)
		var keys []types.NamespacedName
		for i := range 40 {
			keys = append(keys, benchCreate(b, sampleCluster(ns, fmt.Sprintf("mem-%d", i), 8)))
		}
		for _, k := range keys {
			waitFor(b, "Running", isRunning, k)
		}
		var after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(op.requests.Load())/40, "api-requests/cluster-to-Running")
	}
}
