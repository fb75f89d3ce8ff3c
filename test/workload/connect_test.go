package workload

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"

	"github.com/acko-io/acko/test/aerosim"
)

// namedClusters starts, in one simulator, the nodes of clusters named by their cluster-name (a
// node of each at the listed addresses, seeding each other), and waits until each has formed.
func namedClusters(t *testing.T, clusters map[string][]string) *aerosim.Sim {
	t.Helper()
	s, err := aerosim.New(aerosim.Options{JoinDelay: 100 * time.Millisecond, DropDelay: 300 * time.Millisecond,
		RestartDowntime: 200 * time.Millisecond, MigrationDuration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for name, ips := range clusters {
		for i, ip := range ips {
			spec := aerosim.NodeSpec{Name: fmt.Sprintf("%s-%d", name, i), IP: ip, Config: aerosim.MeshConf(name, ips...)}
			if _, err := s.AddNode(spec); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for !formed(s, clusters) {
		if time.Now().After(deadline) {
			t.Fatalf("the clusters did not form in 20 s: %+v", s.Nodes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// formed: every node is a member of a cluster of its cluster-name's size with no migration left.
func formed(s *aerosim.Sim, clusters map[string][]string) bool {
	for _, st := range s.Nodes() {
		name, _, _ := strings.Cut(st.Name, "-")
		if !st.Member || st.ClusterSize != len(clusters[name]) || st.MigratePartitionsRemaining != 0 {
			return false
		}
	}
	return true
}

// loopbackIPs are n addresses in a random 127.x.y.0/24, apart from other tests' nodes.
func loopbackIPs(n int) []string {
	base := fmt.Sprintf("127.%d.%d.", 1+rand.IntN(254), rand.IntN(256))
	out := make([]string, n)
	for i := range out {
		out[i] = base + fmt.Sprint(10+i)
	}
	return out
}

func addrs(ips []string) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip + ":3000"
	}
	return out
}

// A seed that reaches a node of another cluster: with a cluster-name the client keeps only the nodes
// of ours; without one it takes the other cluster's node too (and its partition map with it).
func TestConnectKeepsOnlyTheNamedCluster(t *testing.T) {
	ips := loopbackIPs(4)
	namedClusters(t, map[string][]string{"ours": ips[:2], "other": ips[2:]})
	hosts, err := as.NewHosts(addrs([]string{ips[2], ips[0]})...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		clusterName string
		want        []string
	}{{"ours", addrs(ips[:2])}, {"", addrs(ips)}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		client, err := connect(ctx, hosts, Config{ClusterName: c.clusterName, Log: io.Discard})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range client.GetNodes() {
			got = append(got, n.GetHost().String())
		}
		client.Close()
		if slices.Sort(got); !slices.Equal(got, c.want) {
			t.Errorf("cluster-name %q: the client's nodes are %v, want %v", c.clusterName, got, c.want)
		}
	}
}

// A recreated pod's address given to a node of another cluster: the verification still seeds from
// it; with the cluster's name it refuses that seed's node (and its cluster) and still reads every
// key back through the other seeds and the nodes the load knew.
func TestVerificationRefusesAnotherClusterAtASeed(t *testing.T) {
	ips := loopbackIPs(4)
	s := namedClusters(t, map[string][]string{"ours": ips[:3]})
	const keys = 500
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := Start(ctx, Config{Seeds: addrs(ips[:3]), Keys: keys, Rate: 1000, ClusterName: "ours"})
	if err != nil {
		t.Fatal(err)
	}
	for r.Snapshot().Acknowledged < keys && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	// ours-0's pod is gone; its address now belongs to a node of a cluster of two, "other".
	if err := s.RemoveNode("ours-0"); err != nil {
		t.Fatal(err)
	}
	other := []string{ips[0], ips[3]}
	for i, ip := range other {
		if _, err := s.AddNode(aerosim.NodeSpec{Name: fmt.Sprintf("other-%d", i), IP: ip, Config: aerosim.MeshConf("other", other...)}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := r.Stop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lost != 0 || !rep.Verified {
		t.Errorf("lost %d of %d keys (verified %v) with another cluster's node at a seed, want 0: %v", rep.Lost,
			rep.Acknowledged, rep.Verified, rep.LostByReason)
	}
}
