package workload_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/workload"
)

// nat forwards TCP from a node's alternate address to its service address, as a NodePort or a load
// balancer would, and can go away for a while.
type nat struct {
	t        *testing.T
	addr     string
	target   string
	accepted atomic.Int64
	mu       sync.Mutex
	ln       net.Listener
	conns    []net.Conn
}

func newNAT(t *testing.T, addr, target string) *nat {
	t.Helper()
	n := &nat{t: t, addr: addr, target: target}
	n.up()
	t.Cleanup(n.down)
	return n
}

func (n *nat) up() {
	n.t.Helper()
	ln, err := net.Listen("tcp", n.addr)
	if err != nil {
		n.t.Fatal(err)
	}
	n.mu.Lock()
	n.ln = ln
	n.mu.Unlock()
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			n.accepted.Add(1)
			backend, err := net.Dial("tcp", n.target)
			if err != nil {
				_ = client.Close()
				continue
			}
			n.mu.Lock()
			n.conns = append(n.conns, client, backend)
			n.mu.Unlock()
			go func() { _, _ = io.Copy(backend, client); _ = backend.Close() }()
			go func() { _, _ = io.Copy(client, backend); _ = client.Close() }()
		}
	}()
}

// down closes the listener and every connection: the address stops answering.
func (n *nat) down() {
	n.mu.Lock()
	defer n.mu.Unlock()
	_ = n.ln.Close()
	for _, c := range n.conns {
		_ = c.Close()
	}
	n.conns = nil
}

// The client told to use the alternate addresses reaches every node through its own (here each
// node's NAT address, port 4000) from one seed, loses nothing, and the node probe measures how long
// a node's address stopped answering.
func TestAlternateAddressesAndNodeProbe(t *testing.T) {
	s, err := aerosim.New(simOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ips := []string{"127.78.0.10", "127.78.0.11", "127.78.0.12"}
	nats := make([]*nat, len(ips))
	for i, ip := range ips {
		alt := fmt.Sprintf("127.79.0.%d", 10+i)
		nats[i] = newNAT(t, alt+":4000", ip+":3000")
		conf := strings.Replace(aerosim.MeshConf("alt", ips...), "\t\tport 3000\n",
			"\t\tport 3000\n\t\talternate-access-address "+alt+"\n\t\talternate-access-port 4000\n", 1)
		if _, err := s.AddNode(aerosim.NodeSpec{Name: fmt.Sprintf("n%d", i), IP: ip, Config: conf}); err != nil {
			t.Fatal(err)
		}
	}
	waitSettled(t, s, len(ips))
	const keys = 300
	r := start(t, workload.Config{Seeds: []string{nats[0].addr}, Keys: keys, Rate: 500, UseServicesAlternate: true,
		ProbeNodes: true})
	waitAcknowledged(t, r, keys)
	for i, n := range nats {
		if n.accepted.Load() == 0 {
			t.Errorf("node %d was never reached at its alternate address", i)
		}
	}
	if d := r.Snapshot().MaxUnreachableNode; d != 0 {
		t.Errorf("a node was unreachable for %s before any went away", d)
	}
	const outage = 3 * time.Second
	nats[2].down()
	time.Sleep(outage)
	nats[2].up()
	time.Sleep(2 * time.Second) // probes find it again
	rep := stop(t, r)
	if rep.Lost != 0 || !rep.Verified {
		t.Errorf("lost %d of %d keys (verified %v)", rep.Lost, rep.Acknowledged, rep.Verified)
	}
	// The probes run once per tend interval (1 s): the outage measured is within a second or two of it.
	if d := rep.MaxUnreachableNode; d < outage-1500*time.Millisecond || d > outage+1500*time.Millisecond {
		t.Errorf("the longest unreachable node: %s, want about %s", d, outage)
	}
}
