package aerosim

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	testingclock "k8s.io/utils/clock/testing"
)

// Reads per second one simulated node sustains with the official client, from many goroutines
// (go test -bench Reads -cpu 1 for one core).
func BenchmarkReads(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	nodes := simpleCluster(b, s, 1)
	policy := as.NewClientPolicy()
	policy.ConnectionQueueSize = 512
	c, aerr := as.NewClientWithPolicyAndHost(policy, as.NewHost(nodes[0].IP, 3000))
	if aerr != nil {
		b.Fatal(aerr)
	}
	b.Cleanup(c.Close)
	const keys = 1000
	ks := make([]*as.Key, keys)
	for i := range ks {
		ks[i] = key(b, "bench", i)
		if err := c.Put(nil, ks[i], as.BinMap{"v": i}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	cpuBefore := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := ks[next.Add(1)%keys]
			if _, err := c.Get(nil, k); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	// The figure that does not depend on what else the machine runs: reads per second of CPU the
	// process (client and simulator together) used.
	b.ReportMetric(float64(b.N)/(cpuTime(b)-cpuBefore).Seconds(), "reads/cpu-s")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Memory per 100 000 records of a few small bins, held by one node (a record's RF2 copy on another
// node shares it).
func BenchmarkMemoryPer100kRecords(b *testing.B) {
	const records = 100_000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		st := &store{ns: map[string]*nsStore{"test": {}}}
		for i := range records {
			var d digest
			d[0], d[1], d[2], d[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
			pid := partitionID(d[:])
			c := st.copyOf("test", pid)
			if c == nil {
				c = newCopy(true, 1)
				st.setCopy("test", pid, c)
			}
			c.put(d, &record{set: "load", generation: 1, lut: int64(i), bins: []bin{
				{name: "v", particle: particleInteger, value: make([]byte, 8)},
				{name: "s", particle: 3, value: []byte("value-0123456789")}}})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/100k-records")
		runtime.KeepAlive(st)
	}
}

// BenchmarkMesh is what the mesh costs at the scale of `make bench-scale`: clusters of 3 nodes with
// per-pod DNS seeds, as the operator renders them, started one after the other, then every node read
// once. Every call settles the whole simulated world, so the cost per node grows with the nodes of
// all clusters (1000 clusters took minutes): the test bed runs one simulator per 100 clusters.
func BenchmarkMesh(b *testing.B) {
	for _, clusters := range []int{100, 300} {
		b.Run(fmt.Sprintf("clusters=%d", clusters), func(b *testing.B) {
			for range b.N {
				meshOf(b, clusters)
			}
		})
	}
}

func meshOf(b *testing.B, clusters int) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	s, err := New(Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	const size = 3
	dns := func(c, i int) string { return fmt.Sprintf("c%d-%d.c%d-headless.ns.svc.cluster.local", c, i, c) }
	ip := func(c, i int) string { return fmt.Sprintf("127.%d.%d.%d", 100+c/250, c%250, 10+i) }
	records := map[string][]string{}
	for c := range clusters {
		for i := range size {
			records[dns(c, i)] = []string{ip(c, i)}
		}
	}
	if err := s.SetDNS(records); err != nil {
		b.Fatal(err)
	}
	for c := range clusters {
		seeds := []string{dns(c, 0), dns(c, 1), dns(c, 2)}
		for i := range size {
			spec := NodeSpec{Name: fmt.Sprintf("ns/c%d-%d", c, i), IP: ip(c, i), Config: MeshConf(fmt.Sprintf("c%d", c), seeds...)}
			if _, err := s.AddNode(spec); err != nil {
				b.Fatal(err)
			}
			clk.Step(10 * time.Millisecond)
		}
	}
	clk.Step(5 * time.Second)
	for c := range clusters {
		for i := range size {
			st, err := s.Node(fmt.Sprintf("ns/c%d-%d", c, i))
			if err != nil {
				b.Fatal(err)
			}
			if st.ClusterSize != size {
				b.Fatalf("%s: cluster size %d", st.Name, st.ClusterSize)
			}
		}
	}
}
