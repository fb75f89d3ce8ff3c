package aerospike

import (
	"context"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/acko-io/acko/test/aerosim"
)

func newSim(tb testing.TB, opts aerosim.Options) *aerosim.Sim {
	tb.Helper()
	s, err := aerosim.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// addCluster adds n nodes named <cluster>-<i> on free loopback IPs and returns them as targets.
func addCluster(tb testing.TB, s *aerosim.Sim, cluster string, n int) []Target {
	tb.Helper()
	targets := make([]Target, n)
	for i := range targets {
		st, err := s.AddNode(aerosim.NodeSpec{Cluster: cluster, Name: fmt.Sprintf("%s-%d", cluster, i)})
		if err != nil {
			tb.Fatal(err)
		}
		targets[i] = Target{PodName: st.Name, Addr: st.Addr}
	}
	return targets
}

func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
}

// probe reads every target once, as a prober poll does.
func probe(t *testing.T, c InfoClient, targets []Target) map[string]NodeHealth {
	t.Helper()
	return probeAll(context.Background(), c, newFakeClock(), ProbeSpec{Targets: targets})
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gate applies the stability gate to one poll (of len(nodes) targets) for the given members.
func gate(nodes map[string]NodeHealth, targets []Target) (bool, string) {
	h := ClusterHealth{ExpectedSize: len(nodes), Nodes: nodes}
	var readAt time.Time
	for _, n := range nodes {
		readAt = n.ReadAt
	}
	return h.Gate(podNames(targets), readAt)
}
