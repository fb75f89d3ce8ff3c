package aerosim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A mesh cut splits the cluster after DropDelay; each side goes on with its own key; healed, the
// sides merge again.
func TestMeshCut(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	threeNodes(t, s, clk)
	before := clusterOf(t, s, "db-0", "db-1", "db-2")
	if err := s.SetPartitions([][]string{{"db-0", "db-1"}, {"db-2"}}); err != nil {
		t.Fatal(err)
	}
	clk.Step(1999 * time.Millisecond)
	if got := clusterOf(t, s, "db-0", "db-1", "db-2"); !allSame(got) || got[0] != before[0] {
		t.Fatalf("before DropDelay: %v", got)
	}
	clk.Step(time.Millisecond)
	got := clusterOf(t, s, "db-0", "db-1", "db-2")
	if got[0] != got[1] || !strings.HasPrefix(got[0], "2/") || !strings.HasPrefix(got[2], "1/") || got[0] == before[0] {
		t.Fatalf("split: %v", got)
	}
	if p := s.Partitions(); len(p) != 2 || len(p[0]) != 2 || p[1][0] != "db-2" {
		t.Errorf("partitions: %v", p)
	}
	if err := s.SetPartitions(nil); err != nil {
		t.Fatal(err)
	}
	assertOneCluster(t, s, 3, "healed", "db-0", "db-1", "db-2")
}

func TestBadMeshCut(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	threeNodes(t, s, clk)
	if err := s.SetPartitions([][]string{{"db-0"}, {"db-0"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a node in two groups: %v", err)
	}
	if err := s.SetPartitions([][]string{{"nope"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown node: %v", err)
	}
	if p := s.Partitions(); p != nil {
		t.Errorf("a refused cut changed the mesh: %v", p)
	}
}

// The history records every node's ups and downs with their times, so that a test can check how
// many nodes of a cluster were down at once and for how long.
func TestHistory(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	start := clk.Now()
	threeNodes(t, s, clk) // + 1 minute
	restartAt := clk.Now()
	if _, err := s.WarmRestart("db-1"); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	hangAt := clk.Now()
	if _, err := s.SetFault("db-2", FaultHang); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	if err := s.RemoveNode("db-2"); err != nil {
		t.Fatal(err)
	}
	h := s.History(restartAt)
	type tr struct {
		node, reason string
		after        time.Duration
	}
	var got []tr
	for _, x := range h.Transitions {
		got = append(got, tr{x.Node, x.Reason, x.At.Sub(restartAt)})
	}
	hung := hangAt.Sub(restartAt)
	want := []tr{
		{"db-1", ReasonRestarting, 0},
		{"db-1", ReasonJoining, 200 * time.Millisecond},
		{"db-0", ReasonMember, 2200 * time.Millisecond}, // the new key
		{"db-1", ReasonMember, 2200 * time.Millisecond},
		{"db-2", ReasonMember, 2200 * time.Millisecond},
		{"db-2", ReasonHung, hung},
		{"db-0", ReasonMember, hung + 3*time.Second},
		{"db-1", ReasonMember, hung + 3*time.Second},
		{"db-2", ReasonRemoved, hung + 10*time.Second},
	}
	if len(got) != len(want) {
		t.Fatalf("transitions:\n got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("transition %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if n := len(s.History(start).Transitions); n <= len(want) {
		t.Errorf("the whole history has %d transitions", n)
	}
	last := h.Clusters[len(h.Clusters)-1]
	if len(last.Members) != 2 || last.Name != "db" {
		t.Errorf("last cluster formed: %+v", last)
	}
}
