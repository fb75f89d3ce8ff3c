package aerospike

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"

	"github.com/acko-io/acko/test/aerosim"
)

func TestStableCluster(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 3)
	c := NewClient(ClientOptions{})

	nodes := probe(t, c, targets)
	if ok, reason := gate(nodes, targets); !ok {
		t.Fatalf("not stable: %s", reason)
	}
	f := nodes["c1-0"].Facts
	st, _ := s.Node("c1-0")
	if f.NodeID != st.NodeID || f.Build != "8.1.2.0" || f.ClusterSize != 3 || !f.ClusterIntegrity {
		t.Errorf("facts: %+v", f)
	}

	cmd := ClusterStableCommand(3, false)
	answers, err := c.Info(context.Background(), targets[0].Addr, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := ParseClusterStable(answers[cmd]); err != nil || key != f.ClusterKey {
		t.Errorf("cluster-stable: %q, %v; want %q", key, err, f.ClusterKey)
	}
}

func TestMigratingCluster(t *testing.T) {
	clk := newFakeClock()
	s := newSim(t, aerosim.Options{Clock: clk, MigrationDuration: 20 * time.Second})
	targets := addCluster(t, s, "c1", 3)
	c := NewClient(ClientOptions{})

	if ok, reason := gate(probe(t, c, targets), targets); ok || !strings.Contains(reason, "migrate_partitions_remaining") {
		t.Fatalf("stable=%t while migrating: %s", ok, reason)
	}
	assertClusterStableAnswer(t, c, targets[0].Addr, 3, "unstable cluster")

	clk.Step(19 * time.Second)
	if ok, _ := gate(probe(t, c, targets), targets); ok {
		t.Fatal("stable before the countdown finished")
	}
	clk.Step(time.Second)
	if ok, reason := gate(probe(t, c, targets), targets); !ok {
		t.Fatalf("not stable after the countdown: %s", reason)
	}
}

// assertClusterStableAnswer checks that cluster-stable answers ERROR:7 with the given message.
func assertClusterStableAnswer(t *testing.T, c InfoClient, addr string, size int, msg string) {
	t.Helper()
	cmd := ClusterStableCommand(size, false)
	answers, err := c.Info(context.Background(), addr, cmd)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseClusterStable(answers[cmd])
	var ie *InfoError
	if !errors.As(err, &ie) || ie.Code != 7 || ie.Message != msg {
		t.Errorf("cluster-stable: %v, want ERROR:7:%s", err, msg)
	}
}

func TestOneNodeDown(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 3)
	if err := s.RemoveNode("c1-2"); err != nil {
		t.Fatal(err)
	}
	c := NewClient(ClientOptions{Timeout: time.Second})
	nodes := probe(t, c, targets)
	if h := nodes["c1-2"]; !errors.Is(h.Err, ErrUnreachable) || h.Reachable() {
		t.Fatalf("stopped node: %v", h.Err)
	}
	// With a node gone the others report a smaller cluster: the gate holds.
	if ok, reason := gate(nodes, targets); ok || !strings.Contains(reason, "c1-0: cluster_size=2, want 3") {
		t.Fatalf("stable=%t with a node down: %s", ok, reason)
	}
	if ok, reason := gate(nodes, targets[1:]); ok || !strings.Contains(reason, "waiting for a reading of the 2 running nodes") {
		t.Fatalf("a reading for 3 nodes cannot say whether 2 are stable: %t %s", ok, reason)
	}
	// Once the pod is gone, the two left agree on a 2-node cluster.
	if ok, reason := gate(probe(t, c, targets[:2]), targets[:2]); !ok {
		t.Fatalf("the remaining 2 nodes: %s", reason)
	}
	assertClusterStableAnswer(t, c, targets[0].Addr, 3, "cluster not specified size")
}

func TestHangingNodeBoundedByTimeout(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 1)
	if _, err := s.SetFault("c1-0", aerosim.FaultHang); err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	c := NewClient(ClientOptions{Timeout: timeout})
	start := time.Now()
	_, err := ReadNodeFacts(context.Background(), c, targets[0].Addr, 1, false)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("hanging node: %v", err)
	}
	if elapsed < timeout || elapsed > timeout+2*time.Second {
		t.Errorf("returned after %v, want about %v", elapsed, timeout)
	}
}

// TestConnectionsBounded: calls beyond MaxConnections wait for a turn, and the wait does not eat
// into their own timeout (a hanging node is unreachable only after Timeout of its own call).
func TestConnectionsBounded(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 4)
	for _, target := range targets {
		if _, err := s.SetFault(target.PodName, aerosim.FaultHang); err != nil {
			t.Fatal(err)
		}
	}
	const timeout = 300 * time.Millisecond
	c := NewClient(ClientOptions{Timeout: timeout, MaxConnections: 2})
	start := time.Now()
	nodes := probe(t, c, targets)
	elapsed := time.Since(start)
	for pod, h := range nodes {
		if !errors.Is(h.Err, ErrUnreachable) {
			t.Errorf("%s: %v, want unreachable", pod, h.Err)
		}
	}
	if elapsed < 2*timeout {
		t.Errorf("4 hanging nodes answered in %v with 2 connections of %v each: the calls ran together", elapsed, timeout)
	}

	// A call waiting for its turn ends with its context.
	c = NewClient(ClientOptions{Timeout: time.Minute, MaxConnections: 1})
	go func() { _, _ = c.Info(t.Context(), targets[0].Addr, "statistics") }()
	eventually(t, "the first call holds the only connection", func() bool { return len(c.turns) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Info(ctx, targets[1].Addr, "statistics"); !errors.Is(err, ErrUnreachable) ||
		!errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for a free connection") {
		t.Fatalf("call without a turn: %v", err)
	}
}

func TestCancelClosesConnection(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 1)
	if _, err := s.SetFault("c1-0", aerosim.FaultHang); err != nil {
		t.Fatal(err)
	}
	c := NewClient(ClientOptions{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Info(ctx, targets[0].Addr, "statistics")
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("cancelled call returned after %v", elapsed)
	}
}

func TestRestartDetectedByUptime(t *testing.T) {
	clk := newFakeClock()
	s := newSim(t, aerosim.Options{Clock: clk, RestartDowntime: 5 * time.Second})
	targets := addCluster(t, s, "c1", 2)
	c := NewClient(ClientOptions{Timeout: time.Second})
	clk.Step(100 * time.Second)
	before := probe(t, c, targets)
	if up := before["c1-0"].Facts.Uptime; up != 100*time.Second {
		t.Fatalf("uptime %v", up)
	}

	if _, err := s.WarmRestart("c1-0"); err != nil {
		t.Fatal(err)
	}
	if h := probe(t, c, targets)["c1-0"]; !errors.Is(h.Err, ErrUnreachable) {
		t.Fatalf("restarting node answered: %+v", h)
	}
	clk.Step(5 * time.Second)
	after := probe(t, c, targets)
	if h := after["c1-0"]; h.Err != nil || h.Facts.Uptime != 0 {
		t.Fatalf("after restart: %+v", h)
	}
	if !healthChanged(before, after) {
		t.Error("a restart (uptime back to 0, new cluster key) must count as a change")
	}
}

func TestBadAnswersRejected(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 1)
	c := NewClient(ClientOptions{Timeout: 5 * time.Second})
	tests := map[aerosim.Fault]error{
		aerosim.FaultGarbage:     ErrBadResponse,
		aerosim.FaultBogusLength: ErrBadResponse,
		aerosim.FaultOversized:   ErrBadResponse,
		aerosim.FaultClose:       ErrUnreachable,
	}
	for fault, want := range tests {
		if _, err := s.SetFault("c1-0", fault); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := c.Info(context.Background(), targets[0].Addr, "statistics")
		runtime.ReadMemStats(&after)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", fault, err, want)
		}
		// The simulator itself builds a 2 MiB answer; the client must not add the declared size.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Errorf("%s: %d bytes allocated", fault, grew)
		}
	}
}

func TestErrorAnswers(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 1)
	answers, err := NewClient(ClientOptions{}).Info(context.Background(), targets[0].Addr,
		"quiesce:", "racks:", "nosuchcommand", "build", "build")
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]error{"quiesce:": ErrEnterpriseOnly, "racks:": ErrEnterpriseOnly, "nosuchcommand": ErrUnrecognizedCommand} {
		if _, err := Value(answers, cmd); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", cmd, err, want)
		}
	}
	if v, err := Value(answers, "build"); err != nil || v != "8.1.2.0" {
		t.Errorf("build: %q, %v", v, err)
	}
}

// A refused or reset connection is retried within the same deadline.
func TestRetry(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		first, err := ln.Accept()
		if err != nil {
			return
		}
		_ = first.Close() // no answer: the client must retry
		second, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = second.Close() }()
		req := make([]byte, headerSize+len("build\n"))
		_, _ = io.ReadFull(second, req)
		body := "build\t8.1.2.0\n"
		_, _ = second.Write(append([]byte{2, 1, 0, 0, 0, 0, 0, byte(len(body))}, body...))
	}()
	answers, err := NewClient(ClientOptions{Attempts: 2}).Info(context.Background(), ln.Addr().String(), "build")
	if err != nil || answers["build"] != "8.1.2.0" {
		t.Fatalf("retry: %v, %v", answers, err)
	}
}

func TestInvalidRequests(t *testing.T) {
	c := NewClient(ClientOptions{})
	for _, tt := range []struct {
		addr string
		cmds []string
	}{
		{"127.0.0.1", []string{"build"}},
		{"127.0.0.1:http", []string{"build"}},
		{"127.0.0.1:3000", nil},
		{"127.0.0.1:3000", []string{"a\tb"}},
		{"127.0.0.1:3000", []string{"a\nb"}},
	} {
		if _, err := c.Info(context.Background(), tt.addr, tt.cmds...); err == nil || errors.Is(err, ErrUnreachable) {
			t.Errorf("Info(%q, %q): %v", tt.addr, tt.cmds, err)
		}
	}
}

// netConnOf depends on the v7.10.2 Connection layout; an upgrade that changes it fails here.
func TestNetConnOf(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 1)
	host, err := parseHost(targets[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, aerr := as.NewConnection(as.NewClientPolicy(), host)
	if aerr != nil {
		t.Fatal(aerr)
	}
	defer conn.Close()
	if sock := netConnOf(conn); sock == nil || sock.RemoteAddr().String() != targets[0].Addr {
		t.Fatalf("netConnOf: %v", sock)
	}
}

// The client addresses a node advertises are read only for a cluster with external access (the
// reconciler checks them against the pods' own); the others pay nothing for them.
func TestAdvertisedAddressesReadOnRequest(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 1)
	c := NewClient(ClientOptions{})
	for _, advertised := range []bool{false, true} {
		nodes := probeAll(context.Background(), c, newFakeClock(), ProbeSpec{Targets: targets, Advertised: advertised})
		n := nodes[targets[0].PodName]
		if n.Err != nil {
			t.Fatal(n.Err)
		}
		want := ""
		if advertised {
			want = targets[0].Addr // no access address configured: the address it binds
		}
		if n.Facts.ServiceStd != want || n.Facts.ServiceAlt != "" {
			t.Errorf("advertised %v: service-clear-std %q (want %q), service-clear-alt %q", advertised,
				n.Facts.ServiceStd, want, n.Facts.ServiceAlt)
		}
	}
}
