package aerosim

import (
	"errors"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
)

// hungKeys are keys of set hang whose partitions place the hung node n2 as master (masterHung), as
// replica of a live master (replicaHung), or nowhere (live).
type hungKeys struct{ masterHung, replicaHung, live *as.Key }

func findHungKeys(t *testing.T, s *Sim) hungKeys {
	t.Helper()
	var k hungKeys
	for i := 0; k.masterHung == nil || k.replicaHung == nil || k.live == nil; i++ {
		candidate := key(t, "hang", i)
		reps := replicaNames(t, s, candidate)
		switch {
		case reps[0] == "n2":
			k.masterHung = candidate
		case reps[1] == "n2":
			k.replicaHung = candidate
		default:
			k.live = candidate
		}
	}
	return k
}

// replicaNames are the nodes holding the key's partition in n0's cluster, master first.
func replicaNames(t *testing.T, s *Sim, k *as.Key) []string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.nodes["n0"].view()
	if v == nil {
		t.Fatal("n0 is not a member")
	}
	var out []string
	for _, n := range v.ns["test"].reps[partitionID(k.Digest())] {
		out = append(out, n.spec.Name)
	}
	return out
}

// generationOn is the generation of the key's record in the node's own copy (0: none).
func generationOn(t *testing.T, s *Sim, name string, k *as.Key) uint32 {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := digest(k.Digest())
	c := s.nodes[name].store().copyOf("test", partitionID(d[:]))
	if c == nil {
		return 0
	}
	r, _ := c.get(d)
	return generationOf(r)
}

func mustPut(t *testing.T, c *as.Client, policy *as.WritePolicy, k *as.Key, v string) {
	t.Helper()
	if err := c.Put(policy, k, as.BinMap{"v": v}); err != nil {
		t.Fatalf("put %v=%s: %v", k.Value(), v, err)
	}
}

// A hung node (a stopped asd) applies nothing and answers nothing. Until the others drop it, a write
// of a partition it holds a copy of is never acknowledged: sent to it as master, nothing is applied;
// sent to a live master, the master applies it and the replica's ack never comes (asd answers rc 9
// at the deadline). Reads a live copy can serve are served. Once dropped, writes succeed on the
// remaining copies; released, it rejoins with its memory, and migrations converge every copy (the
// higher generation wins) with no record lost.
func TestHungNodeStallsWritesUntilDropped(t *testing.T) {
	s, clk, nodes, keys := stableThree(t, realTimings)
	c := connect(t, nodes[0])
	k := findHungKeys(t, s)
	for _, hk := range []*as.Key{k.masterHung, k.replicaHung, k.live} {
		mustPut(t, c, nil, hk, "before")
	}
	objectsBefore := mustNode(t, s, "n2").Objects["test"]
	if _, err := s.SetFault("n2", FaultHang); err != nil {
		t.Fatal(err)
	}

	policy := as.NewWritePolicy(0, 0)
	policy.TotalTimeout = 300 * time.Millisecond
	for name, hk := range map[string]*as.Key{"master hung": k.masterHung, "replica hung": k.replicaHung} {
		start := time.Now()
		err := c.Put(policy, hk, as.BinMap{"v": "during"})
		var ae *as.AerospikeError
		if !errors.As(err, &ae) || !ae.Matches(types.TIMEOUT) || time.Since(start) < policy.TotalTimeout*9/10 {
			t.Fatalf("%s: a write needing the hung node answered after %s: %v", name, time.Since(start), err)
		}
	}
	for _, n := range []string{"n0", "n1", "n2"} {
		if g := generationOn(t, s, n, k.masterHung); g != 0 && g != 1 {
			t.Fatalf("a write whose master hangs was applied on %s (generation %d)", n, g)
		}
	}
	master := replicaNames(t, s, k.replicaHung)[0]
	if gm, gh := generationOn(t, s, master, k.replicaHung), generationOn(t, s, "n2", k.replicaHung); gm != 2 || gh != 1 {
		t.Fatalf("write to a live master, replica hung: master generation %d (asd applies it first), hung %d", gm, gh)
	}
	mustPut(t, c, policy, k.live, "during")

	// The hung master's partition is read from the live replica once the first try times out.
	read := as.NewPolicy()
	read.SocketTimeout = 100 * time.Millisecond
	if rec, err := c.Get(read, k.masterHung); err != nil || rec.Bins["v"] != "before" {
		t.Fatalf("read of a hung master's partition from its live replica: %v %v", rec, err)
	}

	clk.Step(realTimings.HangDropDelay)
	if st := mustNode(t, s, "n0"); st.ClusterSize != 2 {
		t.Fatalf("n2 not dropped after HangDropDelay: %+v", st)
	}
	after := connect(t, nodes[0])
	for _, hk := range []*as.Key{k.masterHung, k.replicaHung} {
		mustPut(t, after, policy, hk, "after")
	}
	if st := mustNode(t, s, "n2"); st.Objects["test"] != objectsBefore || generationOn(t, s, "n2", k.replicaHung) != 1 {
		t.Fatalf("the hung node's records changed: %d objects, was %d", st.Objects["test"], objectsBefore)
	}

	if _, err := s.SetFault("n2", FaultNone); err != nil {
		t.Fatal(err)
	}
	if st := mustNode(t, s, "n2"); st.ClusterSize != 3 || st.Objects["test"] != objectsBefore {
		t.Fatalf("released, n2 rejoins with its memory: %+v", st)
	}
	clk.Step(realTimings.MigrationDuration)
	assertConverged(t, s, nodes[1], k)
	if lost := lostKeys(t, nodes[1], keys); lost != 0 {
		t.Fatalf("%d of %d keys lost", lost, loadKeys)
	}
}

// assertConverged checks that every copy of the keys holds the value the last acknowledged write
// gave, and that each key has exactly its two copies.
func assertConverged(t *testing.T, s *Sim, seed NodeState, k hungKeys) {
	t.Helper()
	fresh := connect(t, seed)
	for hk, want := range map[*as.Key]string{k.masterHung: "after", k.replicaHung: "after", k.live: "during"} {
		rec, err := fresh.Get(nil, hk)
		if err != nil || rec.Bins["v"] != want {
			t.Fatalf("key %v after migrations: %v %v, want %s", hk.Value(), rec, err, want)
		}
		copies := 0
		for _, n := range []string{"n0", "n1", "n2"} {
			if g := generationOn(t, s, n, hk); g != 0 {
				copies++
				if g != rec.Generation {
					t.Fatalf("key %v: %s holds generation %d, the cluster %d", hk.Value(), n, g, rec.Generation)
				}
			}
		}
		if copies != 2 {
			t.Fatalf("key %v has %d copies", hk.Value(), copies)
		}
	}
}
