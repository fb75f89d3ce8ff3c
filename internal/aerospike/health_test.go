package aerospike

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	readAt   = time.Unix(1_800_000_000, 0)
	members3 = []string{"a", "b", "c"}
)

func settled(key string, size int) NodeHealth {
	return NodeHealth{ReadAt: readAt, Facts: NodeFacts{NodeID: "N" + key, ClusterSize: size, ClusterKey: key,
		ClusterIntegrity: true, ClusterStableKey: key}}
}

func with(h NodeHealth, mut func(*NodeHealth)) NodeHealth {
	mut(&h)
	return h
}

func TestGate(t *testing.T) {
	good := settled("K", 3)
	stableErr := &InfoError{Command: "cluster-stable", Code: 7, Message: "unstable cluster"}
	tests := []struct {
		name    string
		nodes   map[string]NodeHealth
		members []string
		now     time.Time
		why     string // "" when the gate passes
	}{
		{"stable", map[string]NodeHealth{"a": good, "b": good, "c": good}, members3, readAt, ""},
		{"a silent node holds it, by name", map[string]NodeHealth{"a": good, "b": good,
			"c": {ReadAt: readAt, Err: ErrUnreachable}}, members3, readAt, "c: does not answer"},
		{"a member without a reading", map[string]NodeHealth{"a": good, "b": good}, members3, readAt, "no reading of c yet"},
		{"stale readings", map[string]NodeHealth{"a": good, "b": good, "c": good}, members3,
			readAt.Add(6 * time.Second), "a: last reading is 6s old"},
		{"a reading for another size", map[string]NodeHealth{"a": good, "b": good}, []string{"a", "b"}, readAt,
			"waiting for a reading of the 2 running nodes"},
		{"keys differ", map[string]NodeHealth{"a": good, "b": good, "c": settled("L", 3)}, members3, readAt,
			"cluster_key differs: b has K, c has L"},
		{"size", map[string]NodeHealth{"a": good, "b": good, "c": settled("K", 2)}, members3, readAt, "c: cluster_size=2, want 3"},
		{"migrating", map[string]NodeHealth{"a": with(good, func(h *NodeHealth) { h.Facts.MigratePartitionsRemaining = 5 }),
			"b": good, "c": good}, members3, readAt, "a: migrate_partitions_remaining=5"},
		{"integrity", map[string]NodeHealth{"a": good, "b": with(good, func(h *NodeHealth) { h.Facts.ClusterIntegrity = false }),
			"c": good}, members3, readAt, "b: cluster_integrity=false"},
		{"the server's cluster-stable says no while statistics look settled", map[string]NodeHealth{"a": good, "b": good,
			"c": with(good, func(h *NodeHealth) { h.Facts.ClusterStableErr, h.Facts.ClusterStableKey = stableErr, "" })},
			members3, readAt, `c: cluster-stable: info "cluster-stable": ERROR:7:unstable cluster`},
		{"a bad answer", map[string]NodeHealth{"a": good, "b": {ReadAt: readAt, Err: ErrBadResponse}, "c": good},
			members3, readAt, "b: malformed"},
		{"nothing runs", nil, nil, readAt, "no Aerospike node runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := ClusterHealth{ExpectedSize: 3, Nodes: tt.nodes}
			ok, why := h.Gate(tt.members, tt.now)
			if ok != (tt.why == "") || !strings.Contains(why, tt.why) {
				t.Errorf("Gate = %t %q, want %q", ok, why, tt.why)
			}
		})
	}
}

func TestGroupsAndSplit(t *testing.T) {
	tests := []struct {
		name     string
		nodes    map[string]NodeHealth
		split    bool
		describe string
	}{
		{"one cluster", map[string]NodeHealth{"a": settled("K", 3), "b": settled("K", 3), "c": settled("K", 3)}, false,
			"cluster_key K, cluster_size 3: a (node NK), b (node NK), c (node NK)"},
		{"a node alone", map[string]NodeHealth{"a": settled("K", 2), "b": settled("K", 2), "c": settled("L", 1)}, true,
			"cluster_key K, cluster_size 2: a (node NK), b (node NK); cluster_key L, cluster_size 1: c (node NL)"},
		{"a node that has not joined yet", map[string]NodeHealth{"a": settled("K", 2), "b": settled("K", 2),
			"c": settled("0", 0)}, true, "cluster_key K, cluster_size 2: a (node NK), b (node NK); cluster_key 0, cluster_size 0: c (node N0)"},
		{"a hung node: the others see a smaller cluster", map[string]NodeHealth{"a": settled("K", 2), "b": settled("K", 2),
			"c": {Err: ErrUnreachable}}, true, "cluster_key K, cluster_size 2: a (node NK), b (node NK); not answering: c"},
		{"a node restarting, the others still whole", map[string]NodeHealth{"a": settled("K", 3), "b": settled("K", 3),
			"c": {Err: ErrUnreachable}}, false, "cluster_key K, cluster_size 3: a (node NK), b (node NK); not answering: c"},
	}
	for _, tt := range tests {
		h := ClusterHealth{Nodes: tt.nodes}
		if got := h.Split(members3); got != tt.split {
			t.Errorf("%s: Split = %t", tt.name, got)
		}
		if got := h.DescribeGroups(members3); got != tt.describe {
			t.Errorf("%s: DescribeGroups =\n%s\nwant\n%s", tt.name, got, tt.describe)
		}
	}
}

// NodeReady says whether this node can serve: a member of the cluster is ready while partitions
// migrate and while the cluster's size differs from the pods that run (every node reports both for a
// while after any membership change); a node that has not rejoined, one alone and one on the smaller
// side of a split are not.
func TestNodeReady(t *testing.T) {
	migrating := func(h NodeHealth) NodeHealth {
		return with(h, func(h *NodeHealth) { h.Facts.MigratePartitionsRemaining = 10 })
	}
	up := func(h NodeHealth, d time.Duration) NodeHealth {
		return with(h, func(h *NodeHealth) { h.Facts.Uptime = d })
	}
	four := []string{"a", "b", "c", "d"}
	tests := []struct {
		name    string
		nodes   map[string]NodeHealth
		members []string
		pod     string
		reason  string
		message string // a part of the message
	}{
		{"settled", map[string]NodeHealth{"a": settled("K", 3), "b": settled("K", 3), "c": settled("K", 3)},
			members3, "a", ReasonNodeReady, "member of the cluster"},
		{"migrating: still serves", map[string]NodeHealth{"a": migrating(settled("K", 3)), "b": settled("K", 3),
			"c": settled("K", 3)}, members3, "a", ReasonNodeReady, ""},
		{"the others of a node that restarts: smaller size, migrating", map[string]NodeHealth{
			"a": migrating(settled("K2", 2)), "b": migrating(settled("K2", 2)), "c": {Err: ErrUnreachable}},
			members3, "a", ReasonNodeReady, ""},
		{"the restarted node before it rejoins (size 0, key 0)", map[string]NodeHealth{"a": settled("K", 3),
			"b": settled("K", 3), "c": settled("0", 0)}, members3, "c", ReasonNotAMember, "has not joined a cluster yet"},
		{"the restarted node once rejoined, migrating", map[string]NodeHealth{"a": migrating(settled("K3", 3)),
			"b": migrating(settled("K3", 3)), "c": migrating(settled("K3", 3))}, members3, "c", ReasonNodeReady, ""},
		{"a node alone", map[string]NodeHealth{"a": settled("K", 2), "b": settled("K", 2), "c": settled("L", 1)},
			members3, "c", ReasonNotAMember, "cluster_key L"},
		{"a member while another node is alone", map[string]NodeHealth{"a": settled("K", 2), "b": settled("K", 2),
			"c": settled("L", 1)}, members3, "a", ReasonNodeReady, ""},
		{"the smaller side of a split", map[string]NodeHealth{"a": settled("K", 3), "b": settled("K", 3),
			"c": settled("K", 3), "d": settled("L", 1)}, four, "d", ReasonNotAMember, "cluster_key K, cluster_size 3"},
		{"an even split: the side that has run longest is the cluster", map[string]NodeHealth{
			"a": up(settled("K", 2), time.Hour), "b": up(settled("K", 2), time.Hour),
			"c": up(settled("L", 2), time.Minute), "d": up(settled("L", 2), time.Hour+time.Second)}, four, "d", ReasonNodeReady, ""},
		{"an even split: the other side", map[string]NodeHealth{
			"a": up(settled("K", 2), time.Hour), "b": up(settled("K", 2), time.Hour),
			"c": up(settled("L", 2), time.Minute), "d": up(settled("L", 2), time.Hour+time.Second)}, four, "a", ReasonNotAMember, ""},
		{"2 nodes, one recreated alone: the survivor serves", map[string]NodeHealth{"a": up(settled("K", 1), time.Hour),
			"b": up(settled("L", 1), 3*time.Second)}, []string{"a", "b"}, "a", ReasonNodeReady, ""},
		{"2 nodes, one recreated alone: it has not rejoined", map[string]NodeHealth{"a": up(settled("K", 1), time.Hour),
			"b": up(settled("L", 1), 3*time.Second)}, []string{"a", "b"}, "b", ReasonNotAMember, ""},
		{"2 nodes, one restarting: the survivor serves", map[string]NodeHealth{"a": settled("K", 1),
			"b": settled("0", 0)}, []string{"a", "b"}, "a", ReasonNodeReady, ""},
		{"the only node that answers", map[string]NodeHealth{"a": settled("K", 1), "b": {Err: ErrUnreachable},
			"c": {Err: ErrUnreachable}}, members3, "a", ReasonNodeReady, ""},
		{"a single node cluster", map[string]NodeHealth{"a": settled("K", 1)}, []string{"a"}, "a", ReasonNodeReady, ""},
		{"a single node starting", map[string]NodeHealth{"a": settled("0", 0)}, []string{"a"}, "a", ReasonNotAMember, ""},
		{"hung", map[string]NodeHealth{"a": settled("K", 3), "b": settled("K", 3),
			"c": {Err: errors.Join(ErrUnreachable, errors.New("i/o timeout"))}}, members3, "c", ReasonNotAnswering, ""},
		{"a bad answer", map[string]NodeHealth{"a": settled("K", 3), "b": {Err: ErrBadResponse}}, members3, "b",
			ReasonNotAnswering, "malformed"},
		{"no reading", map[string]NodeHealth{"a": settled("K", 3)}, members3, "d", ReasonNoReading, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := ClusterHealth{Nodes: tt.nodes}
			ok, reason, message := h.NodeReady(tt.pod, tt.members)
			if ok != (tt.reason == ReasonNodeReady) || reason != tt.reason || !strings.Contains(message, tt.message) {
				t.Errorf("NodeReady(%s) = %t %q %q, want %q %q", tt.pod, ok, reason, message, tt.reason, tt.message)
			}
		})
	}
}

// A restart is proven by an asd start more than a second after the start seen before the signal,
// whatever the rounding of the uptime: the pattern of real readings right after a restart.
func TestRestartedSince(t *testing.T) {
	signal := readAt
	before := signal.Add(-100 * time.Second) // a reading before the signal: up 100 s
	at := func(readAfter time.Duration, uptime time.Duration) ClusterHealth {
		return ClusterHealth{Nodes: map[string]NodeHealth{"a": {ReadAt: signal.Add(readAfter),
			Facts: NodeFacts{Uptime: uptime}}}}
	}
	for _, tt := range []struct {
		name      string
		h         ClusterHealth
		restarted bool
	}{
		// asd back 0.3 s after the signal; its whole-second uptime runs up to a second ahead.
		{"read 0.5 s after, uptime 1 s (ahead)", at(500*time.Millisecond, time.Second), true},
		{"read 1.2 s after, uptime 1 s", at(1200*time.Millisecond, time.Second), true},
		{"read 1.9 s after, uptime 2 s", at(1900*time.Millisecond, 2*time.Second), true},
		{"read 10 min after, uptime 10 min", at(10*time.Minute, 10*time.Minute), true},
		{"no restart: uptime kept growing", at(2*time.Second, 102*time.Second), false},
		{"no restart, rounding ahead", at(1500*time.Millisecond, 102*time.Second), false},
		{"no reading", ClusterHealth{}, false},
	} {
		if got := tt.h.RestartedSince("a", before); got != tt.restarted {
			t.Errorf("%s: RestartedSince = %t, want %t", tt.name, got, tt.restarted)
		}
	}
}
