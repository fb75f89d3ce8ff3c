package simclient

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/acko-io/acko/test/aerosim"
)

func TestClientAgainstTheSimulator(t *testing.T) {
	sim, err := aerosim.New(aerosim.Options{Port: 13000, RestartDowntime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	srv := httptest.NewServer(aerosim.NewHandler(sim))
	t.Cleanup(srv.Close)
	c, ctx := New(srv.URL), context.Background()

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
