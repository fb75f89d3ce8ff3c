package aerosim

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
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
