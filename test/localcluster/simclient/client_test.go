package simclient

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acko-io/acko/test/aerosim"
)

// newClient serves a fresh simulator's control API and returns a client of it.
func newClient(t *testing.T) (*Client, context.Context) {
	t.Helper()
	_, url := serveSim(t)
	return New(url), context.Background()
}

func serveSim(t *testing.T) (*aerosim.Sim, string) {
	t.Helper()
	sim, err := aerosim.New(aerosim.Options{Port: 13000, RestartDowntime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	srv := httptest.NewServer(aerosim.NewHandler(sim))
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

// With several shards, a namespace's nodes live in the shard ShardOf names; listing and DNS span
// them all, and a call about several nodes in different shards is refused.
func TestShards(t *testing.T) {
	sims, urls := make([]*aerosim.Sim, 2), make([]string, 2)
	for i := range sims {
		sims[i], urls[i] = serveSim(t)
	}
	c, ctx := New(strings.Join(urls, ",")), context.Background()
	var names []string
	for _, ns := range []string{"a", "b", "c", "d", "e", "f"} {
		name := NodeName(ns, "pod-0")
		if _, err := c.AddNode(ctx, aerosim.NodeSpec{Cluster: ClusterName(ns, "c"), Name: name}); err != nil {
			t.Fatal(err)
		}
		if _, err := sims[ShardOf(ns, 2)].Node(name); err != nil {
			t.Fatalf("%s is not in shard %d: %v", name, ShardOf(ns, 2), err)
		}
		if _, err := c.WarmRestart(ctx, name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if len(sims[0].Nodes()) == 0 || len(sims[1].Nodes()) == 0 {
		t.Fatalf("six namespaces all in one shard: %d and %d nodes", len(sims[0].Nodes()), len(sims[1].Nodes()))
	}
	if nodes, err := c.Nodes(ctx); err != nil || len(nodes) != len(names) {
		t.Fatalf("nodes of both shards: %d, %v", len(nodes), err)
	}
	records := map[string][]string{"x.ns.svc": {"127.0.0.9"}}
	if err := c.SetDNS(ctx, records); err != nil {
		t.Fatal(err)
	}
	for i, sim := range sims {
		if got := sim.DNS(); len(got) != 1 {
			t.Errorf("shard %d DNS: %v", i, got)
		}
	}
	split := slices.IndexFunc(names, func(n string) bool { return c.at(n) != c.at(names[0]) })
	if _, err := c.WarmRestartNodes(ctx, names[0], names[split]); !errors.Is(err, aerosim.ErrInvalid) {
		t.Fatalf("a restart across shards: %v", err)
	}
	if _, err := c.History(ctx, time.Time{}); !errors.Is(err, aerosim.ErrInvalid) {
		t.Fatalf("history of two shards: %v", err)
	}
}

func TestClientAgainstTheSimulator(t *testing.T) {
	c, ctx := newClient(t)

	name := NodeName("ns", "pod-0") // a slash in the name: escaped in the path
	added, err := c.AddNode(ctx, aerosim.NodeSpec{Cluster: ClusterName("ns", "c"), Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddNode(ctx, aerosim.NodeSpec{Cluster: "x", Name: name}); !errors.Is(err, aerosim.ErrConflict) {
		t.Fatalf("second add: %v", err)
	}
	st, err := c.WarmRestart(ctx, name)
	if err != nil || st.Restarts != 1 || st.Member || st.IP != added.IP {
		t.Fatalf("warm restart: %+v, %v", st, err)
	}
	if nodes, err := c.Nodes(ctx); err != nil || len(nodes) != 1 || nodes[0].Name != name {
		t.Fatalf("nodes: %+v, %v", nodes, err)
	}
	if err := c.RemoveNode(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Node(ctx, name); !errors.Is(err, aerosim.ErrNotFound) {
		t.Fatalf("removed node: %v", err)
	}
}

// Several nodes restart at once, or none does when one of them cannot.
func TestWarmRestartNodes(t *testing.T) {
	c, ctx := newClient(t)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := c.AddNode(ctx, aerosim.NodeSpec{Cluster: "c1", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	states, err := c.WarmRestartNodes(ctx, "a", "b")
	if err != nil || len(states) != 2 || states[0].Restarts != 1 || states[1].Phase != aerosim.PhaseRestarting {
		t.Fatalf("restart a, b: %+v, %v", states, err)
	}
	if _, err := c.WarmRestartNodes(ctx, "c", "a"); !errors.Is(err, aerosim.ErrConflict) {
		t.Fatalf("a is restarting: %v", err)
	}
	if st, err := c.Node(ctx, "c"); err != nil || st.Restarts != 0 {
		t.Fatalf("c must not have restarted: %+v, %v", st, err)
	}
	if st, err := c.Node(ctx, "c"); err != nil || st.Objects == nil {
		t.Fatalf("c's object counts per namespace: %+v, %v", st.Objects, err)
	} else if _, ok := st.Objects["test"]; !ok {
		t.Fatalf("a simple node runs namespace test: %+v", st.Objects)
	}
}

func TestMeshCalls(t *testing.T) {
	c, ctx := newClient(t)
	name := NodeName("ns", "pod-0")
	added, err := c.AddNode(ctx, aerosim.NodeSpec{Cluster: ClusterName("ns", "c"), Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if log, err := c.Log(ctx, name); err != nil || len(log) == 0 {
		t.Fatalf("log: %v, %v", log, err)
	}
	records := map[string][]string{"pod-0.c-headless.ns.svc.cluster.local": {added.IP}}
	if err := c.SetDNS(ctx, records); err != nil {
		t.Fatal(err)
	}
	if got, err := c.DNS(ctx); err != nil || len(got) != 1 {
		t.Fatalf("dns: %v, %v", got, err)
	}
	if err := c.CutMesh(ctx, []string{name}, []string{"nope"}); !errors.Is(err, aerosim.ErrNotFound) {
		t.Fatalf("cut with an unknown node: %v", err)
	}
	if err := c.CutMesh(ctx, []string{name}); err != nil {
		t.Fatal(err)
	}
	if err := c.HealMesh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveNode(ctx, name); err != nil {
		t.Fatal(err)
	}
	assertHistoryEndsRemoved(ctx, t, c)
}

func assertHistoryEndsRemoved(ctx context.Context, t *testing.T, c *Client) {
	t.Helper()
	h, err := c.History(ctx, time.Time{})
	if err != nil || len(h.Transitions) == 0 || h.Transitions[len(h.Transitions)-1].Reason != aerosim.ReasonRemoved {
		t.Fatalf("history: %+v, %v", h, err)
	}
	if h, err := c.History(ctx, time.Now().Add(time.Hour)); err != nil || len(h.Transitions) != 0 {
		t.Fatalf("history from the future: %+v, %v", h, err)
	}
}

func TestFileCalls(t *testing.T) {
	c, ctx := newClient(t)
	name := NodeName("ns", "pod-0")
	if _, err := c.AddNode(ctx, aerosim.NodeSpec{Cluster: "c", Name: name}); err != nil {
		t.Fatal(err)
	}
	const file = "/etc/aerospike/aerospike.conf"
	if _, err := c.ReadFile(ctx, name, file); !errors.Is(err, aerosim.ErrNoFile) {
		t.Fatalf("no file yet: %v", err)
	}
	if _, err := c.ReadFile(ctx, "nope", file); !errors.Is(err, aerosim.ErrNotFound) {
		t.Fatalf("no node: %v", err)
	}
	if err := c.WriteFile(ctx, name, file, "a\tb\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadFile(ctx, name, file); err != nil || got != "a\tb\n" {
		t.Fatalf("read back: %q, %v", got, err)
	}
	if err := c.SetDir(ctx, name, "/etc/aerospike", map[string]string{"other": "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadFile(ctx, name, file); !errors.Is(err, aerosim.ErrNoFile) {
		t.Fatalf("replaced by SetDir: %v", err)
	}
	if err := c.WriteFile(ctx, name, "relative", ""); !errors.Is(err, aerosim.ErrInvalid) {
		t.Fatalf("relative path: %v", err)
	}
}
