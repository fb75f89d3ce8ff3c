package workload_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/workload"
)

// The real server's count for the negative control (fixtures dataplane/README.md, step 4): 3 nodes,
// replication-factor 2, memory, two nodes restarted at once: 3193 of 10 000 keys lost.
const realLostPercent = 100 * 3193.0 / 10000

// Timing of the simulated cluster: short, so that a test takes seconds, in the real order of events.
var simOptions = aerosim.Options{
	RestartDowntime:   300 * time.Millisecond,
	JoinDelay:         200 * time.Millisecond,
	DropDelay:         500 * time.Millisecond,
	HangDropDelay:     time.Second,
	MigrationDuration: 2 * time.Second,
}

// cluster starts a simulated cluster of simple-mode nodes (the default namespace test: memory,
// replication-factor 2) and waits until they formed one cluster with no migration left.
func cluster(t *testing.T, names ...string) (*aerosim.Sim, []string) {
	t.Helper()
	s, err := aerosim.New(simOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	seeds := make([]string, 0, len(names))
	for _, name := range names {
		st, err := s.AddNode(aerosim.NodeSpec{Cluster: "c1", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, st.Addr)
	}
	waitSettled(t, s, len(names))
	return s, seeds
}

// waitSettled waits until every node is a member of one cluster of size n with no migration left.
func waitSettled(t *testing.T, s *aerosim.Sim, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nodes := s.Nodes()
		settled := len(nodes) == n
		for _, st := range nodes {
			settled = settled && st.Member && st.ClusterSize == n && st.MigratePartitionsRemaining == 0
		}
		if settled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settled cluster of %d after 30 s: %+v", n, nodes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func start(t *testing.T, cfg workload.Config) *workload.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg.Log = os.Stderr
	r, err := workload.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stop(t *testing.T, r *workload.Run) workload.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := r.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", rep.Table())
	return rep
}

// waitAcknowledged lets the load run until every key has an acknowledged write.
func waitAcknowledged(t *testing.T, r *workload.Run, keys int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.Snapshot().Acknowledged < keys {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s only %d of %d keys acknowledged:\n%s", r.Snapshot().Acknowledged, keys, r.Snapshot().Table())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A healthy 3-node cluster under the official client: nothing lost, every operation succeeded.
func TestHealthyClusterLosesNothing(t *testing.T) {
	_, seeds := cluster(t, "a", "b", "c")
	const keys = 1000
	r := start(t, workload.Config{Seeds: seeds[:1], Keys: keys, Rate: 500})
	waitAcknowledged(t, r, keys)
	time.Sleep(2 * time.Second) // reads of keys written more than once
	rep := stop(t, r)
	if rep.Lost != 0 || rep.Acknowledged != keys || !rep.Verified {
		t.Errorf("lost %d of %d acknowledged (verified %v), want 0 of %d", rep.Lost, rep.Acknowledged, rep.Verified, keys)
	}
	if rep.Availability < 99.9 {
		t.Errorf("availability %.2f%%, %d failed %v: want every operation to succeed", rep.Availability, rep.Failed,
			rep.ErrorsByCode)
	}
	if rep.Reads < keys/2 || rep.LongestWriteGap > 2*time.Second {
		t.Errorf("%d reads, longest write gap %s: the load did not run at its rate", rep.Reads, rep.LongestWriteGap)
	}
	if snap := r.Snapshot(); snap.Duration != rep.Duration || snap.Writes != rep.Writes {
		t.Errorf("a snapshot after Stop: %s, %d writes; want the stopped load's %s, %d", snap.Duration, snap.Writes,
			rep.Duration, rep.Writes)
	}
	if _, err := r.Stop(context.Background()); err == nil {
		t.Error("a second Stop succeeded")
	}
}

// One node of three restarting (memory: it comes back empty) loses nothing with replication-factor
// 2: the real server kept all 10 000 keys (fixtures dataplane/README.md, step 4, stages B–D).
func TestOneRestartLosesNothing(t *testing.T) {
	s, seeds := cluster(t, "a", "b", "c")
	const keys = 1000
	r := start(t, workload.Config{Seeds: seeds, Keys: keys, Rate: 1000})
	waitAcknowledged(t, r, keys)
	if _, err := s.WarmRestart("c"); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, s, 3)
	rep := stop(t, r)
	if rep.Lost != 0 || !rep.Verified {
		t.Errorf("lost %d of %d acknowledged keys after one restart (verified %v), want 0", rep.Lost, rep.Acknowledged,
			rep.Verified)
	}
}

// The negative control: bypassing any operator, two of three nodes of a replication-factor-2
// memory namespace go down at once. The partitions whose both copies were on them are gone, so
// the workload must count lost keys, about as many as the real server lost.
func TestTwoNodesDownAtOnceLoseRecords(t *testing.T) {
	s, seeds := cluster(t, "a", "b", "c")
	const keys = 3000
	r := start(t, workload.Config{Seeds: seeds, Keys: keys, Rate: 2000})
	waitAcknowledged(t, r, keys)
	if _, err := s.WarmRestartNodes([]string{"b", "c"}); err != nil {
		t.Fatal(err)
	}
	// The load stops at once (as the real experiment's writer had), so that rewrites after the
	// nodes returned do not hide the loss; the verification then waits out the migrations.
	rep := stop(t, r)
	waitSettled(t, s, 3)
	lost := rep.LostPercent()
	fmt.Printf("negative control: lost %d of %d acknowledged keys = %.1f%% (real server: 3193 of 10000 = %.1f%%)\n",
		rep.Lost, rep.Acknowledged, lost, realLostPercent)
	if rep.Lost == 0 {
		t.Fatal("two of three RF2 memory nodes restarted at once and the workload lost nothing: the oracle cannot fail")
	}
	// Copies are spread evenly over the 3 node pairs: a third of the partitions had both copies on
	// the two restarted nodes, less the keys the load rewrote in the moment before it stopped.
	if lost < 0.75*realLostPercent || lost > 1.25*realLostPercent {
		t.Errorf("lost %.1f%% of the keys, want about the real server's %.1f%%", lost, realLostPercent)
	}
	if rep.LostByReason["KEY_NOT_FOUND_ERROR"] != rep.Lost {
		t.Errorf("lost by reason %v: the real server answered not found for every lost key", rep.LostByReason)
	}
}

// A split brain healed: {a} and {b, c} each take every partition and accept writes, then merge by
// generation and last-update time. Under SplitTolerant no key is lost (each has a copy of a write
// at or after the split); the keys whose newest acknowledged write lost the merge are counted
// apart, and they are what the strict rule would have counted lost.
func TestSplitBrainHealedKeepsACopyOfEveryKey(t *testing.T) {
	s, seeds := cluster(t, "a", "b", "c")
	const keys = 1000
	r := start(t, workload.Config{Seeds: seeds, Keys: keys, Rate: 1000, SplitTolerant: true})
	waitAcknowledged(t, r, keys)
	r.MarkSplit()
	if err := s.SetPartitions([][]string{{"a"}, {"b", "c"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // both sides formed (DropDelay) and took writes
	if err := s.SetPartitions(nil); err != nil {
		t.Fatal(err)
	}
	// The load stops as the split heals, so that rewrites after the merge do not hide what the
	// merge chose; the verification waits for the merge's migrations.
	rep := stop(t, r)
	fmt.Printf("split brain healed: lost %d, %d of %d keys kept with an older write than their newest acknowledged one\n",
		rep.Lost, rep.SplitOverwritten, rep.Acknowledged)
	if rep.Lost != 0 || !rep.Verified {
		t.Errorf("lost %d of %d keys (verified %v) after a healed split, want 0: %v", rep.Lost, rep.Acknowledged,
			rep.Verified, rep.LostByReason)
	}
}

// The verification's client finds the cluster when the only seed is gone (a pod's address moves
// when it is recreated): it also tries the nodes the load's client knew. Removing one node of
// three loses nothing with replication-factor 2.
func TestVerificationWithoutItsSeed(t *testing.T) {
	s, seeds := cluster(t, "a", "b", "c")
	const keys = 500
	r := start(t, workload.Config{Seeds: seeds[:1], Keys: keys, Rate: 1000})
	waitAcknowledged(t, r, keys)
	if err := s.RemoveNode("a"); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, s, 2)
	rep := stop(t, r)
	if rep.Lost != 0 || !rep.Verified {
		t.Errorf("lost %d of %d keys (verified %v) after removing the seed node, want 0", rep.Lost, rep.Acknowledged,
			rep.Verified)
	}
}
