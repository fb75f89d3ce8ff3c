package aerosim

import (
	"encoding/base64"
	"strings"
	"testing"
)

func infoValue(t *testing.T, addr, cmd string) string {
	t.Helper()
	body, err := exchange(addr, cmd)
	if err != nil {
		t.Fatal(err)
	}
	_, value, ok := splitAnswer(body)
	if !ok {
		t.Fatalf("%s: %q", cmd, body)
	}
	return value
}

// What the client reads to find the cluster: -1 before the node joins; then the peers with their real
// IPs, and replicas maps that, over the members, give every partition exactly one master and one
// replica.
func TestClientInfoAnswers(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	nodes := simpleCluster(t, s, 3)
	if got := infoValue(t, nodes[0].Addr, "partition-generation"); got != "-1" {
		t.Fatalf("before joining: partition-generation %s", got)
	}
	clk.Step(realTimings.JoinDelay)
	peers := infoValue(t, nodes[0].Addr, "peers-clear-std")
	for _, n := range nodes[1:] {
		if !strings.Contains(peers, "["+n.NodeID+",,["+n.IP+"]]") {
			t.Fatalf("peers-clear-std %q lacks %s", peers, n.Name)
		}
	}
	for p, c := range replicaCounts(t, nodes) {
		if c != [2]int{1, 1} {
			t.Fatalf("partition %d: %v masters and replicas", p, c)
		}
	}
	if got := infoValue(t, nodes[0].Addr, "services"); strings.Count(got, ";") != 1 {
		t.Fatalf("services %q", got)
	}
}

// replicaCounts counts, per partition, the nodes whose replicas answer holds it at each position.
func replicaCounts(t *testing.T, nodes []NodeState) [][2]int {
	t.Helper()
	counts := make([][2]int, nPartitions)
	for _, n := range nodes {
		value := infoValue(t, n.Addr, "replicas")
		parts := strings.Split(strings.TrimPrefix(value, "test:"), ",")
		if len(parts) != 4 || parts[0] != "0" || parts[1] != "2" {
			t.Fatalf("replicas %q", value)
		}
		for pos, b64 := range parts[2:] {
			bits, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || len(bits) != nPartitions/8 {
				t.Fatalf("bitmap %q: %v", b64, err)
			}
			for p := range nPartitions {
				if bits[p>>3]&(0x80>>(p&7)) != 0 {
					counts[p][pos]++
				}
			}
		}
	}
	return counts
}
