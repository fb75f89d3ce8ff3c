package aerospike

import (
	"context"
	"testing"

	"k8s.io/utils/clock"

	"github.com/acko-io/acko/test/aerosim"
)

// BenchmarkClusterStable8Nodes measures one full "is the cluster stable" probe of an 8-node
// cluster over TCP: 8 concurrent connects, info requests, parses, and the decision.
func BenchmarkClusterStable8Nodes(b *testing.B) {
	s := newSim(b, aerosim.Options{})
	targets := addCluster(b, s, "bench", 8)
	c := NewClient(ClientOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		nodes := probeAll(ctx, c, clock.RealClock{}, ProbeSpec{Targets: targets})
		if stable, reason := gate(nodes, targets); !stable {
			b.Fatal(reason)
		}
	}
}
