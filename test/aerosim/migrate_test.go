package aerosim

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
	testingclock "k8s.io/utils/clock/testing"
)

const loadKeys = 3000

// stableThree is a formed 3-node RF2 memory cluster on a fake clock, holding loadKeys keys written
// through the official client (set load, bin v = i).
func stableThree(t *testing.T, opts Options) (*Sim, *testingclock.FakeClock, []NodeState, []*as.Key) {
	t.Helper()
	s, clk := newFakeSim(t, opts)
	nodes := simpleCluster(t, s, 3)
	clk.Step(opts.JoinDelay)
	clk.Step(opts.MigrationDuration)
	keys := writeLoad(t, connect(t, nodes[0]))
	return s, clk, nodes, keys
}

func writeLoad(t *testing.T, c *as.Client) []*as.Key {
	t.Helper()
	keys := make([]*as.Key, loadKeys)
	for i := range keys {
		keys[i] = key(t, "load", i)
		if err := c.Put(nil, keys[i], as.BinMap{"v": i}); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// lostKeys reads every key with a fresh client on seed, as the real experiment did at each stage:
// a key that is not found, or holds another value, is lost; any other error fails the test.
func lostKeys(t *testing.T, seed NodeState, keys []*as.Key) int {
	t.Helper()
	c := connect(t, seed)
	defer c.Close()
	lost := 0
	for i, k := range keys {
		rec, err := c.Get(nil, k)
		switch {
		case resultCode(err) == types.KEY_NOT_FOUND_ERROR:
			lost++
		case err != nil:
			t.Fatalf("key %d: %v", i, err)
		case rec.Bins["v"] != i:
			lost++
		}
	}
	return lost
}

func objects(t *testing.T, s *Sim) (total int64, perNode []int64) {
	t.Helper()
	for _, st := range s.Nodes() {
		total += st.Objects["test"]
		perNode = append(perNode, st.Objects["test"])
	}
	return total, perNode
}

// One node restarting (its memory namespace comes back empty) loses nothing: every partition kept a
// copy. The README's stages B-D: the survivors drop it and migrate the partitions it held a copy of
// (counted by the partitions that really move: the real server showed 2729), then it rejoins empty and
// migrations refill it.
func TestOneRestartLosesNothing(t *testing.T) {
	opts := realTimings
	opts.RestartDowntime = 30 * time.Second // long enough for the two survivors to finish migrating
	s, clk, nodes, keys := stableThree(t, opts)
	if total, _ := objects(t, s); total != 2*loadKeys {
		t.Fatalf("RF2: %d objects for %d keys", total, loadKeys)
	}
	if _, err := s.WarmRestart("n2"); err != nil {
		t.Fatal(err)
	}
	if st := mustNode(t, s, "n2"); st.Objects["test"] != 0 {
		t.Fatalf("a memory namespace restarts empty: %+v", st.Objects)
	}
	clk.Step(opts.DropDelay)
	start := assertMigrating(t, s, clk, opts.MigrationDuration)
	if start < 2400 || start > 3100 {
		t.Fatalf("migrations after the drop: %d", start)
	}
	if lost := lostKeys(t, nodes[0], keys); lost != 0 {
		t.Fatalf("one node down lost %d of %d keys", lost, loadKeys)
	}
	clk.Step(opts.RestartDowntime - opts.DropDelay - opts.MigrationDuration + opts.JoinDelay)
	if st := mustNode(t, s, "n2"); st.ClusterSize != 3 || st.Objects["test"] != 0 {
		t.Fatalf("n2 rejoins empty: %+v", st)
	}
	assertMigrating(t, s, clk, opts.MigrationDuration)
	total, perNode := objects(t, s)
	if total != 2*loadKeys || perNode[2] == 0 {
		t.Fatalf("after migrations: objects %v", perNode)
	}
	if lost := lostKeys(t, nodes[0], keys); lost != 0 {
		t.Fatalf("after migrations: %d lost", lost)
	}
}

// assertMigrating checks that n0's migrations count down to 0 over d and returns where they started.
func assertMigrating(t *testing.T, s *Sim, clk *testingclock.FakeClock, d time.Duration) int64 {
	t.Helper()
	start := mustNode(t, s, "n0").MigratePartitionsRemaining
	clk.Step(d / 2)
	if half := mustNode(t, s, "n0").MigratePartitionsRemaining; half <= 0 || half >= start {
		t.Fatalf("migrations half way: %d of %d", half, start)
	}
	clk.Step(d - d/2)
	if left := mustNode(t, s, "n0").MigratePartitionsRemaining; left != 0 {
		t.Fatalf("migrations after %s: %d of %d left", d, left, start)
	}
	return start
}

// Two of three nodes restarting at once lose the records whose both copies they held: about a third
// with RF2 (the real server lost 3193 of 10 000), and they stay lost once migrations are done.
func TestTwoRestartsAtOnceLoseAThird(t *testing.T) {
	s, clk, nodes, keys := stableThree(t, realTimings)
	if _, err := s.WarmRestartNodes([]string{"n1", "n2"}); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.RestartDowntime + realTimings.JoinDelay)
	lost := lostKeys(t, nodes[0], keys)
	t.Logf("two of three RF2 nodes restarted at once: %d of %d keys lost (%.1f%%; the real server: 31.9%%)",
		lost, loadKeys, 100*float64(lost)/loadKeys)
	if lost < loadKeys/4 || lost > loadKeys*42/100 {
		t.Fatalf("lost %d of %d: outside the band around 1/3", lost, loadKeys)
	}
	clk.Step(realTimings.MigrationDuration)
	if after := lostKeys(t, nodes[0], keys); after != lost {
		t.Fatalf("after migrations %d lost, before %d", after, lost)
	}
	if total, _ := objects(t, s); total != 2*int64(loadKeys-lost) {
		t.Fatalf("objects %d for %d surviving keys", total, loadKeys-lost)
	}
}

// A persistent namespace keeps its records across an asd restart and across the pod's replacement on
// the same volume, unless the new pod's init container erased it; a memory namespace, or a new volume,
// starts empty.
func TestPersistentNamespace(t *testing.T) {
	for _, tc := range []struct {
		engine, volume string
		erase          []string
		afterRestart   int
		afterReplace   int
	}{
		{engine: "device", volume: "pvc-db-0", afterRestart: loadKeys, afterReplace: loadKeys},
		{engine: "device", volume: "pvc-db-0,pvc-meta-0", erase: []string{"pvc-db-0"}, afterRestart: loadKeys},
		{engine: "device", volume: "pvc-db-0", erase: []string{"pvc-other"}, afterRestart: loadKeys, afterReplace: loadKeys},
		{engine: "device", afterRestart: loadKeys, afterReplace: 0}, // emptyDir: gone with the pod
		{engine: "memory", volume: "pvc-db-0", afterRestart: 0, afterReplace: 0},
	} {
		t.Run(tc.engine+"/"+tc.volume, func(t *testing.T) {
			s, clk := newFakeSim(t, realTimings)
			spec := NodeSpec{Name: "db-0", IP: podIP(0), Config: engineConf(tc.engine), Volume: tc.volume}
			st := addNode(t, s, spec)
			clk.Step(realTimings.JoinDelay)
			keys := writeLoad(t, connect(t, st))
			if _, err := s.WarmRestart("db-0"); err != nil {
				t.Fatal(err)
			}
			clk.Step(realTimings.RestartDowntime + realTimings.JoinDelay)
			if got := loadKeys - lostKeys(t, st, keys); got != tc.afterRestart {
				t.Fatalf("after a restart %d keys, want %d", got, tc.afterRestart)
			}
			if err := s.RemoveNode("db-0"); err != nil {
				t.Fatal(err)
			}
			spec.EraseVolumes = tc.erase
			st = addNode(t, s, spec)
			clk.Step(realTimings.JoinDelay)
			if got := loadKeys - lostKeys(t, st, keys); got != tc.afterReplace {
				t.Fatalf("after the pod's replacement %d keys, want %d", got, tc.afterReplace)
			}
		})
	}
}

func engineConf(engine string) string {
	storage := "storage-engine memory {\n\t\tdata-size 1G\n\t}"
	if engine == "device" {
		storage = "storage-engine device {\n\t\tfile /opt/aerospike/data/test.dat\n\t\tfilesize 1G\n\t}"
	}
	return strings.Replace(conf("db"), "storage-engine memory {\n\t\tdata-size 1G\n\t}", storage, 1)
}

// A mesh cut makes two clusters; each side takes writes to its own copies; on heal migrations merge
// them: the record with the higher generation wins, then the later last-update time.
func TestSplitBrainMerge(t *testing.T) {
	s, clk, nodes, _ := stableThree(t, realTimings)
	k := key(t, "demo", "contested")
	c := connect(t, nodes[0])
	if err := c.Put(nil, k, as.BinMap{"v": "before"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPartitions([][]string{{"n0"}, {"n1", "n2"}}); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.DropDelay)
	minority, majority := connect(t, nodes[0]), connect(t, nodes[1])
	// The minority writes twice (generation 3), the majority once, later (generation 2).
	for _, v := range []string{"minority-1", "minority-2"} {
		if err := minority.Put(nil, k, as.BinMap{"v": v}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(time.Second)
	if err := majority.Put(nil, k, as.BinMap{"v": "majority"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPartitions(nil); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.MigrationDuration)
	fresh := connect(t, nodes[2])
	rec, err := fresh.Get(nil, k)
	if err != nil || rec.Bins["v"] != "minority-2" || rec.Generation != 3 {
		t.Fatalf("after the heal: %v %v", rec, err)
	}
	if total, _ := objects(t, s); total != 2*loadKeys+2 {
		t.Fatalf("after the heal %d objects: non-replica copies must be dropped", total)
	}
}

// stuckThree is the scenario on a real 8.1.2.0: a formed 3-node RF2 memory cluster holding
// loadKeys keys takes replication-factor 3 by set-config on every node, then db-2's asd restarts
// (within the others' drop delay) on its file, which still says 2, before any recluster. Each node
// reads its config from its own file (confPath).
func stuckThree(t *testing.T) (*Sim, *testingclock.FakeClock, []NodeState, []*as.Key) {
	t.Helper()
	s, clk := newFakeSim(t, realTimings)
	seeds := []string{podIP(0), podIP(1), podIP(2)}
	var nodes []NodeState
	for i := range 3 {
		nodes = append(nodes, addNode(t, s, NodeSpec{Name: podName(i), IP: podIP(i), ConfigFile: confPath,
			Files: map[string]string{confPath: conf("db", seeds...)}}))
	}
	clk.Step(realTimings.JoinDelay)
	clk.Step(realTimings.MigrationDuration)
	keys := writeLoad(t, connect(t, nodes[0]))
	for _, n := range nodes {
		if got := ask(t, n.Addr, "set-config:context=namespace;id=test;replication-factor=3"); got != "ok" {
			t.Fatalf("set-config: %s", got)
		}
	}
	if _, err := s.WarmRestart("db-2"); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.RestartDowntime)
	clk.Step(realTimings.JoinDelay)
	return s, clk, nodes, keys
}

// A node that comes back with the old replication-factor after the others took the new one sticks the
// whole cluster, as it did a real 8.1.2.0 (issue 39): every node logs the exchange's lines once, no
// cluster forms (the agreeing nodes do not cluster apart), cluster-stable errs everywhere, recluster:
// is skipped by the principal and ignored by the others, the restarted node serves no read, writes
// time out, and setting the new factor on the odd node changes nothing.
func TestReplicationFactorMismatchSticksTheCluster(t *testing.T) {
	s, clk, nodes, keys := stuckThree(t)
	assertStuck := func(when string) {
		t.Helper()
		for _, n := range nodes {
			for _, cmd := range []string{"cluster-stable:size=3;ignore-migrations=false",
				"cluster-stable:size=2;ignore-migrations=true", "cluster-stable:"} {
				if got := ask(t, n.Addr, cmd); got != errUnstable {
					t.Fatalf("%s: %s on %s: %s", when, cmd, n.Name, got)
				}
			}
			want := reclusterIgnored
			if s.nodes[n.Name] == highestID(slices.Collect(maps.Values(s.nodes))) {
				want = "ERROR::unknown"
			}
			if got := ask(t, n.Addr, "recluster:"); got != want {
				t.Fatalf("%s: recluster: on %s: %s, want %s", when, n.Name, got, want)
			}
		}
		if st := mustNode(t, s, "db-2"); st.Member || st.ClusterSize != 0 {
			t.Fatalf("%s: the restarted node is in a cluster: %+v", when, st)
		}
		for _, name := range []string{"db-0", "db-1"} {
			if st := mustNode(t, s, name); st.ClusterSize != 3 {
				t.Fatalf("%s: %s did not keep its last cluster (the agreeing nodes formed one?): %+v", when, name, st)
			}
		}
	}
	assertStuck("stuck")
	for _, n := range nodes {
		loggedOnce(t, s, n.Name, "WARNING (exchange): {test} has unmatched replication factors from 2 to 3",
			"WARNING (exchange): abandoned exchange - fix configuration conflict")
	}
	s.mu.Lock()
	odd := s.nodes["db-2"]
	_, rc := namespaceView(odd.asd.namespaces, odd.view(), "test")
	s.mu.Unlock()
	if rc != rcPartitionUnavail {
		t.Fatalf("a read on the restarted node answers rc %d, want PARTITION_UNAVAILABLE", rc)
	}
	if lost := lostKeys(t, nodes[0], keys); lost != 0 {
		t.Fatalf("%d keys not read from the frozen cluster", lost)
	}
	c := connect(t, nodes[0])
	wp := as.NewWritePolicy(0, 0)
	wp.TotalTimeout, wp.SocketTimeout, wp.MaxRetries = 300*time.Millisecond, 300*time.Millisecond, 0
	if err := c.Put(wp, key(t, "load", "new"), as.BinMap{"v": 1}); !errors.Is(err, as.ErrTimeout) {
		t.Fatalf("a write in the stuck exchange: %v, want a timeout", err)
	}
	if got := ask(t, nodes[2].Addr, "set-config:context=namespace;id=test;replication-factor=3"); got != "ok" {
		t.Fatalf("set-config: %s", got)
	}
	clk.Step(time.Minute)
	assertStuck("the new factor set on the odd node")
}

// loggedOnce fails the test unless the node logged each line exactly once.
func loggedOnce(t *testing.T, s *Sim, name string, lines ...string) {
	t.Helper()
	log, _ := s.Log(name)
	text := strings.Join(log, "\n")
	for _, line := range lines {
		if strings.Count(text, line) != 1 {
			t.Fatalf("%s: log line %q not once: %q", name, line, log)
		}
	}
}

// What ends a stuck exchange: a new membership. Restarting the node that came back with the old factor,
// its file now carrying the new one, loses nothing (it held nothing since its restart); restarting a
// node that holds data instead loses what that restart loses (about a third of the keys, the real
// server lost 3227 of 10 000: the partitions whose other copy was the empty odd node's).
func TestStuckExchangeEnds(t *testing.T) {
	for _, tc := range []struct {
		restart string
		lost    func(int) bool
	}{
		{"db-2", func(n int) bool { return n == 0 }},
		{"db-1", func(n int) bool { return n > loadKeys/5 && n < loadKeys/2 }},
	} {
		t.Run(tc.restart, func(t *testing.T) {
			s, clk, nodes, keys := stuckThree(t)
			rf3 := strings.Replace(conf("db", podIP(0), podIP(1), podIP(2)), "replication-factor 2", "replication-factor 3", 1)
			for _, n := range nodes {
				if err := s.WriteFile(n.Name, confPath, rf3); err != nil {
					t.Fatal(err)
				}
			}
			if got := ask(t, nodes[2].Addr, "set-config:context=namespace;id=test;replication-factor=3"); got != "ok" {
				t.Fatalf("set-config: %s", got)
			}
			if _, err := s.WarmRestart(tc.restart); err != nil {
				t.Fatal(err)
			}
			clk.Step(realTimings.RestartDowntime)
			clk.Step(realTimings.JoinDelay)
			clk.Step(realTimings.MigrationDuration)
			for _, n := range nodes {
				if got := ask(t, n.Addr, "cluster-stable:size=3;ignore-migrations=false"); !isHexKey(got) {
					t.Fatalf("%s after the restart of %s: cluster-stable %s", n.Name, tc.restart, got)
				}
				if got := parseKV(ask(t, n.Addr, "namespace/test")).vals["effective_replication_factor"]; got != "3" {
					t.Fatalf("%s: effective_replication_factor %s", n.Name, got)
				}
			}
			if lost := lostKeys(t, nodes[0], keys); !tc.lost(lost) {
				t.Fatalf("restarting %s lost %d of %d keys", tc.restart, lost, len(keys))
			}
		})
	}
}

func isHexKey(s string) bool {
	_, err := strconv.ParseUint(s, 16, 64)
	return err == nil && s != "0"
}

// A replication-factor set live takes effect at the next exchange, here the principal's recluster once
// every node has it: until then the partition map keeps two copies (and one node set alone splits
// nothing); after it, migrations make a third copy of every record and nothing is lost.
func TestReplicationFactorLive(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	seeds := []string{podIP(0), podIP(1), podIP(2)}
	var nodes []NodeState
	for i := range 3 {
		nodes = append(nodes, addNode(t, s, NodeSpec{Name: podName(i), IP: podIP(i), Config: conf("db", seeds...)}))
	}
	clk.Step(realTimings.JoinDelay)
	clk.Step(realTimings.MigrationDuration)
	keys := writeLoad(t, connect(t, nodes[0]))
	effective := func(n NodeState) string {
		return parseKV(ask(t, n.Addr, "namespace/test")).vals["effective_replication_factor"]
	}
	for i, n := range nodes {
		if got := ask(t, n.Addr, "set-config:context=namespace;id=test;replication-factor=3"); got != "ok" {
			t.Fatalf("set-config: %s", got)
		}
		clk.Step(realTimings.DropDelay + realTimings.JoinDelay)
		if st := mustNode(t, s, n.Name); st.ClusterSize != 3 || effective(n) != "2" {
			t.Fatalf("after the set on %d nodes: %+v, effective %s", i+1, st, effective(n))
		}
	}
	principal := slices.MaxFunc(nodes, func(a, b NodeState) int {
		if nodeIDAbove(s.nodes[a.Name], s.nodes[b.Name]) {
			return 1
		}
		return -1
	})
	for _, n := range nodes {
		if got := ask(t, n.Addr, "recluster:"); n.Name != principal.Name && got != "ignored-by-non-principal" {
			t.Fatalf("recluster on %s, not the principal: %s", n.Name, got)
		}
	}
	for _, n := range nodes {
		if got := effective(n); got != "3" {
			t.Fatalf("%s: effective_replication_factor %s after the recluster", n.Name, got)
		}
	}
	clk.Step(realTimings.MigrationDuration)
	if total, _ := objects(t, s); total != 3*loadKeys {
		t.Fatalf("RF3 after migrations: %d objects for %d keys", total, loadKeys)
	}
	if lost := lostKeys(t, nodes[1], keys); lost != 0 {
		t.Fatalf("%d keys lost", lost)
	}
}

// The partition rule: copies on distinct nodes, spread evenly, and a node holding none of a
// partition's copies joining or leaving moves none of them.
func TestRendezvousPartitionMap(t *testing.T) {
	mk := func(n int) []*node {
		out := make([]*node, n)
		for i := range out {
			out[i] = &node{ident: identity{nodeID: hexID(fmt.Sprintf("n%d", i))},
				asd: asd{namespaces: []nsConfig{{name: "test", rf: 2}}}}
		}
		return out
	}
	eight := mk(8)
	v8 := newView(1, eight)
	masters := map[*node]int{}
	for _, reps := range v8.ns["test"].reps {
		if len(reps) != 2 || reps[0] == reps[1] {
			t.Fatalf("replicas %v", reps)
		}
		masters[reps[0]]++
	}
	for _, n := range eight {
		if m := masters[n]; m < 4096/8*85/100 || m > 4096/8*115/100 {
			t.Fatalf("%s masters %d partitions of 4096", n.ident.nodeID, m)
		}
	}
	v7 := newView(2, eight[:7])
	for p, reps := range v8.ns["test"].reps {
		if !isIn(reps, eight[7]) && (reps[0] != v7.ns["test"].reps[p][0] || reps[1] != v7.ns["test"].reps[p][1]) {
			t.Fatalf("partition %d moved though the leaving node held no copy", p)
		}
	}
}

// Writes keep coming while one node after the other restarts, each once the previous one's migrations
// are done, as the operator rolls (real clock, short timings): every acknowledged write can be read
// back, with its value or a later one. (Restarting the next node before then loses the records whose
// only complete copy it held, as on the real server.)
func TestWritesDuringRestartsAreKept(t *testing.T) {
	s := newSim(t, Options{RestartDowntime: 50 * time.Millisecond, JoinDelay: 100 * time.Millisecond,
		DropDelay: 100 * time.Millisecond, MigrationDuration: 300 * time.Millisecond})
	nodes := simpleCluster(t, s, 3)
	time.Sleep(500 * time.Millisecond)
	c := connect(t, nodes[0])
	const keys = 200
	ks := make([]*as.Key, keys)
	for i := range ks {
		ks[i] = key(t, "load", i)
	}
	acked := make([]int, keys) // the last value acknowledged per key (0: none)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		policy := as.NewWritePolicy(0, 0)
		policy.TotalTimeout = 200 * time.Millisecond
		for v := 1; ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			for i := range keys {
				if c.Put(policy, ks[i], as.BinMap{"v": v}) == nil {
					acked[i] = v
				}
			}
		}
	}()
	for _, name := range []string{"n1", "n2", "n0"} {
		if _, err := s.WarmRestart(name); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the restarted node is back
		waitMigrations(t, s)
	}
	close(stop)
	<-done
	reader := connect(t, nodes[1])
	lost := 0
	for i := range keys {
		rec, err := reader.Get(nil, ks[i])
		if acked[i] > 0 && (err != nil || rec.Bins["v"].(int) < acked[i]) {
			lost++
		}
	}
	if lost != 0 {
		t.Fatalf("%d of %d acknowledged keys lost or older", lost, keys)
	}
}

func waitMigrations(t *testing.T, s *Sim) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		settled := true
		for _, st := range s.Nodes() {
			settled = settled && st.Member && st.ClusterSize == 3 && st.MigratePartitionsRemaining == 0
		}
		if settled {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("migrations not done: %+v", s.Nodes())
}

// A cold start reads a persistent namespace's records back before asd listens: it takes records /
// LoadRate, the log ticks the progress ("{ns} loaded: objects N device-pcts (P)", also in the node's
// CRI log file), and afterwards every record is there. A memory namespace starts at once.
func TestColdStartLoads(t *testing.T) {
	opts := realTimings
	opts.LoadRate, opts.LogDir = loadKeys/12, t.TempDir() // 12 s for the node's records: ticks at 5 and 10 s
	s, clk := newFakeSim(t, opts)
	spec := NodeSpec{Name: "ns/db-0", IP: podIP(0), Config: engineConf("device"), Volume: "pvc-db-0"}
	st := addNode(t, s, spec)
	clk.Step(realTimings.JoinDelay)
	keys := writeLoad(t, connect(t, st))
	if _, err := s.WarmRestart("ns/db-0"); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.RestartDowntime + 6*time.Second) // halfway
	if got, _ := s.Node("ns/db-0"); got.Phase != PhaseLoading {
		t.Fatalf("phase %s while reading the device, want %s", got.Phase, PhaseLoading)
	}
	if answered(st) {
		t.Fatal("asd answers before its data is loaded")
	}
	clk.Step(6*time.Second + realTimings.JoinDelay)
	if got, _ := s.Node("ns/db-0"); got.Phase != PhaseMember || !answered(st) {
		t.Fatalf("phase %s after the load, want %s, answering", got.Phase, PhaseMember)
	}
	if lost := lostKeys(t, st, keys); lost != 0 {
		t.Fatalf("%d keys lost across the cold start", lost)
	}
	log, _ := s.Log("ns/db-0")
	ticks := slices.DeleteFunc(slices.Clone(log), func(l string) bool { return !strings.Contains(l, "{test} loaded: objects ") })
	if len(ticks) != 2 || !strings.HasSuffix(ticks[0], "loaded: objects 1250 device-pcts (41)") ||
		!strings.HasSuffix(ticks[1], "loaded: objects 2500 device-pcts (83)") {
		t.Fatalf("ticker lines %q", ticks)
	}
	if last := log[len(log)-1]; !strings.HasSuffix(last, "service ready: soon there will be cake!") {
		t.Fatalf("last line %q", last)
	}
	file, err := os.ReadFile(filepath.Join(opts.LogDir, LogFile("ns/db-0")))
	if err != nil || !strings.Contains(string(file), " stderr F "+ticks[1]+"\n") {
		t.Fatalf("log file %q: %v", file, err)
	}

	addNode(t, s, NodeSpec{Name: "mem-0", IP: podIP(1), Config: engineConf("memory"), Volume: "pvc-mem-0"})
	if _, err := s.WarmRestart("mem-0"); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.RestartDowntime)
	if got, _ := s.Node("mem-0"); got.Phase != PhaseJoining {
		t.Fatalf("a memory namespace's node is %s after its restart, want %s", got.Phase, PhaseJoining)
	}
}

// answered: the node answers an info request (a node that does not listen resets the connection).
func answered(st NodeState) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(st.IP, "3000"), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	req := append([]byte{2, 1, 0, 0, 0, 0, 0, 7}, "status\n"...)
	if _, err := conn.Write(req); err != nil {
		return false
	}
	_, err = conn.Read(make([]byte, 8))
	return err == nil
}
