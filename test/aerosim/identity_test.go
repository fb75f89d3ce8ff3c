package aerosim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	testingclock "k8s.io/utils/clock/testing"
)

// inNetworkService adds lines to the service block of the network stanza of a MeshConf.
func inNetworkService(config string, lines ...string) string {
	extra := ""
	for _, l := range lines {
		extra += "\t\t" + l + "\n"
	}
	return strings.Replace(config, "\t\tport 3000\n", "\t\tport 3000\n"+extra, 1)
}

// inService adds lines (node-id ...) to the service stanza of a MeshConf, from its line 2.
func inService(config string, lines ...string) string {
	return strings.Replace(config, "service {\n", "service {\n\t"+strings.Join(lines, "\n\t")+"\n", 1)
}

// assertAsdNodeID checks that the node answers id, a node id as asd prints it.
func assertAsdNodeID(t *testing.T, st NodeState, id string) {
	t.Helper()
	v, ok := parseNodeID(id)
	if !ok || formatNodeID(v) != id || len(id) > 16 {
		t.Fatalf("%q is not a node id as asd prints one", id)
	}
	if got := ask(t, st.Addr, "node"); got != id {
		t.Fatalf("node answers %s, the state says %s", got, id)
	}
}

// Without node-id in its config, a node's id is asd's own: the fabric port, then the MAC address of
// the pod's interface. A restart in place (tini's SIGUSR1, or a start again after asd refused a
// changed file) keeps it; the pod recreated under the same name, with a new MAC address, gets another.
func TestNodeIDFollowsThePod(t *testing.T) {
	spec := NodeSpec{Name: "a", IP: podIP(0), ConfigFile: confPath, Files: map[string]string{confPath: conf("db")}}
	for _, tc := range []struct {
		name  string
		again func(t *testing.T, s *Sim, clk *testingclock.FakeClock) NodeState
		same  bool
	}{
		{"warm restart", func(t *testing.T, s *Sim, clk *testingclock.FakeClock) NodeState {
			if _, err := s.WarmRestart("a"); err != nil {
				t.Fatal(err)
			}
			clk.Step(time.Second)
			return mustNode(t, s, "a")
		}, true},
		{"restart after a refused file", func(t *testing.T, s *Sim, clk *testingclock.FakeClock) NodeState {
			if err := s.WriteFile("a", confPath, "service {\n}\n"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.WarmRestart("a"); err != nil {
				t.Fatal(err)
			}
			clk.Step(time.Second)
			if st := mustNode(t, s, "a"); st.Phase != PhaseFailed {
				t.Fatalf("refused: %+v", st)
			}
			return restartWith(t, s, clk, conf("db"))
		}, true},
		{"pod recreated", func(t *testing.T, s *Sim, _ *testingclock.FakeClock) NodeState {
			if err := s.RemoveNode("a"); err != nil {
				t.Fatal(err)
			}
			return addNode(t, s, spec)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := realTimings
			opts.CrashLoopBackoff = 10 * time.Second
			s, clk := newFakeSim(t, opts)
			first := addNode(t, s, spec)
			assertAsdNodeID(t, first, first.NodeID)
			if id, _ := parseNodeID(first.NodeID); id>>48 != 3001 {
				t.Fatalf("%s: the top 16 bits are not the fabric port", first.NodeID)
			}
			again := tc.again(t, s, clk)
			if (again.NodeID == first.NodeID) != tc.same {
				t.Fatalf("node id %s, then %s", first.NodeID, again.NodeID)
			}
			assertAsdNodeID(t, again, again.NodeID)
			if got := parseKV(ask(t, again.Addr, "get-config:context=service")).vals["node-id"]; got != again.NodeID {
				t.Fatalf("get-config answers node-id=%s, node %s", got, again.NodeID)
			}
		})
	}
}

// node-id in the file asd reads at start is the node's id, read again at every start: node,
// get-config, the NodeState, statistics' principal (the highest id) and the others' peers follow it.
func TestNodeIDFromTheFile(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	seeds := []string{podIP(0), podIP(1)}
	addNode(t, s, NodeSpec{Name: "a", IP: podIP(0), ConfigFile: confPath,
		Files: map[string]string{confPath: inService(conf("db", seeds...), "node-id 0a1")}})
	b := addNode(t, s, NodeSpec{Name: "b", IP: podIP(1), Config: inService(conf("db", seeds...), "node-id B2")})
	clk.Step(realTimings.JoinDelay)
	check := func(id, principal string) {
		t.Helper()
		a := mustNode(t, s, "a")
		if a.NodeID != id || a.ClusterSize != 2 {
			t.Fatalf("a: %+v", a)
		}
		assertAsdNodeID(t, a, id)
		if got := parseKV(ask(t, a.Addr, "get-config:context=service")).vals["node-id"]; got != id {
			t.Fatalf("get-config: node-id=%s", got)
		}
		if peers := ask(t, b.Addr, "peers-clear-std"); !strings.HasSuffix(peers, ",3000,[["+id+",,["+a.IP+"]]]") {
			t.Fatalf("b's peers: %s", peers)
		}
		for _, n := range []NodeState{a, b} {
			stats := parseKV(ask(t, n.Addr, "statistics")).vals
			if stats["cluster_principal"] != principal || stats["paxos_principal"] != principal {
				t.Fatalf("%s: principal %s/%s, want %s", n.Name, stats["cluster_principal"], stats["paxos_principal"],
					principal)
			}
		}
	}
	check("A1", "B2")
	if err := s.WriteFile("a", confPath, inService(conf("db", seeds...), "node-id c3")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WarmRestart("a"); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.RestartDowntime + realTimings.JoinDelay)
	check("C3", "C3")
}

// What asd refuses of a node's identity stops it at start, with asd's message; what it accepts
// gives the node id it derives.
func TestIdentityAtStart(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	for i, tc := range []struct {
		lines   []string // service lines
		network []string // network service lines
		want    string   // the error's prefix, or the node id
	}{
		{[]string{"node-id xyz"}, nil, "CRITICAL (config): line 2 :: node-id must be a 64-bit hex number, not xyz"},
		{[]string{"node-id 10000000000000000"}, nil, "CRITICAL (config): line 2 :: node-id must be a 64-bit hex number"},
		{[]string{"node-id 0"}, nil, "CRITICAL (config): line 2 :: node-id must be "},
		{[]string{"node-id A1", "node-id-interface eth0"}, nil,
			"CRITICAL (config): may not configure both 'node-id' and ''node-id-interface"},
		{[]string{"node-id-interface eth1"}, nil, "CRITICAL (config): could not get node id"},
		{[]string{"node-id-interface lo"}, nil, "BB9000000000000"},
		{[]string{"node-id 00000000000000000fF"}, nil, "FF"},
		{nil, []string{"access-address any"}, "CRITICAL (config): Invalid access address: any"},
		{nil, []string{"access-address db-9.nowhere"}, "CRITICAL (config): Invalid access address: db-9.nowhere"},
		{nil, []string{"alternate-access-address 0.0.0.0"}, "CRITICAL (config): Invalid access address: 0.0.0.0"},
		{nil, []string{"access-port 80"}, "CRITICAL (config): line 7 :: access-port must be >= 1024 and <= 65535, not 80"},
	} {
		text := inNetworkService(conf("db"), tc.network...)
		if tc.lines != nil {
			text = inService(text, tc.lines...)
		}
		st := addNode(t, s, NodeSpec{Name: strconv.Itoa(i), Config: text})
		if strings.HasPrefix(tc.want, "CRITICAL") {
			if st.Phase != PhaseFailed || !strings.HasPrefix(st.Error, tc.want) {
				t.Errorf("%v %v: %s, want %s", tc.lines, tc.network, st.Error, tc.want)
			}
			continue
		}
		if st.Phase == PhaseFailed || st.NodeID != tc.want {
			t.Errorf("%v: %+v, want node id %s", tc.lines, st, tc.want)
		}
	}
	for _, id := range []string{"0", "xyz", "10000000000000000"} {
		if _, err := s.AddNode(NodeSpec{Cluster: "c", Name: "spec-" + id, NodeID: id}); !errors.Is(err, ErrInvalid) {
			t.Errorf("NodeSpec.NodeID %s: %v", id, err)
		}
	}
}

// Two nodes with one node id never count each other: each ignores the heartbeats carrying its own id
// and flags itself a duplicate; a node hearing both puts the id on probation and drops the member it
// had (as/src/fabric/hb.c). The newcomer is never admitted; once it is gone, the others cluster again.
func TestDuplicateNodeID(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	seeds := []string{podIP(0), podIP(1), podIP(2)}
	for i, id := range []string{"A1", "A2"} {
		addPod(t, s, i, inService(conf("db", seeds...), "node-id "+id))
	}
	clk.Step(realTimings.JoinDelay)
	assertOneCluster(t, s, 2, "before", "db-0", "db-1")

	addPod(t, s, 2, inService(conf("db", seeds...), "node-id A1"))
	clk.Step(realTimings.JoinDelay + realTimings.DropDelay)
	for _, name := range []string{"db-0", "db-1", "db-2"} {
		st := mustNode(t, s, name)
		if st.ClusterSize != 1 {
			t.Errorf("%s: cluster size %d with a duplicate node id around", name, st.ClusterSize)
		}
		if got := parseKV(ask(t, st.Addr, "statistics")).vals["cluster_duplicate_nodes"]; got != "A1" {
			t.Errorf("%s: cluster_duplicate_nodes=%s", name, got)
		}
	}
	for name, want := range map[string]string{
		"db-0": "WARNING (hb): duplicate node-id: a1 with fabric endpoints {" + podIP(2) + ":3001}",
		"db-2": "WARNING (hb): duplicate node-id: a1 with fabric endpoints {" + podIP(0) + ":3001}",
		"db-1": "WARNING (hb): node expired a1 - potentially duplicate node-id",
	} {
		if log, _ := s.Log(name); !strings.Contains(strings.Join(log, "\n"), want) {
			t.Errorf("%s's log lacks %q:\n%s", name, want, strings.Join(log, "\n"))
		}
	}

	if err := s.RemoveNode("db-2"); err != nil {
		t.Fatal(err)
	}
	clk.Step(realTimings.DropDelay)
	assertOneCluster(t, s, 2, "the duplicate gone", "db-0", "db-1")
	if got := parseKV(ask(t, podIP(1)+":3000", "statistics")).vals["cluster_duplicate_nodes"]; got != "null" {
		t.Errorf("cluster_duplicate_nodes=%s", got)
	}
}

// A pod recreated with the node-id of one the others still count (it stopped less than DropDelay
// ago) takes its place: the others' heartbeat entry for that id is the new pod's.
func TestNodeIDTakenOverByANewPod(t *testing.T) {
	opts := realTimings
	opts.JoinDelay = time.Second
	s, clk := newFakeSim(t, opts)
	seeds := []string{podIP(0), podIP(1), podIP(2)}
	for i, id := range []string{"A1", "A2"} {
		addPod(t, s, i, inService(conf("db", seeds...), "node-id "+id))
	}
	clk.Step(opts.JoinDelay)
	if err := s.RemoveNode("db-0"); err != nil {
		t.Fatal(err)
	}
	addPod(t, s, 2, inService(conf("db", seeds...), "node-id A1"))
	clk.Step(opts.JoinDelay)
	assertOneCluster(t, s, 2, "A1 again, before db-0's DropDelay", "db-1", "db-2")
	if peers := ask(t, podIP(1)+":3000", "peers-clear-std"); !strings.HasSuffix(peers, "[[A1,,["+podIP(2)+"]]]") {
		t.Fatalf("db-1's peers: %s", peers)
	}
}

// Each node advertises its own access addresses, as asd builds them from network service: service-clear-*
// its own, peers-clear-* the other members' ([<node id>,,[<address>,...]] with ":3000" left out, no entry
// for a node without such addresses), and the deprecated service, services and services-alternate.
func TestAccessAddresses(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	setDNS(t, s, podRecords(3))
	seeds := []string{podIP(0), podIP(1), podIP(2)}
	nodes := []struct {
		lines          []string // network service lines
		std, alt, serv string   // its service-clear-std, service-clear-alt, service
		peerStd        string   // its addresses in the others' peers-clear-std
		peerAlt        string   // in their peers-clear-alt
		servAlt        string   // in their services-alternate
	}{
		{nil, podIP(0) + ":3000", "", podIP(0) + ":3000", podIP(0), "", ""},
		{[]string{"access-address " + podDNS(1), "access-port 4000", "alternate-access-address 10.0.0.1",
			"alternate-access-address 10.0.0.2"},
			podDNS(1) + ":4000", "10.0.0.1:4000,10.0.0.2:4000", podDNS(1) + ":4000",
			podDNS(1) + ":4000", "10.0.0.1:4000,10.0.0.2:4000", "10.0.0.1:4000"},
		{[]string{"access-address eth0", "access-address ::1", "alternate-access-address 10.0.0.3",
			"alternate-access-port 3000"},
			podIP(2) + ":3000,[::1]:3000", "10.0.0.3:3000", podIP(2) + ":3000",
			podIP(2) + ",[::1]", "10.0.0.3", "10.0.0.3:3000"},
	}
	ids := []string{"A0", "A1", "A2"}
	for i, n := range nodes {
		addPod(t, s, i, inService(inNetworkService(conf("db", seeds...), n.lines...), "node-id "+ids[i]))
	}
	clk.Step(realTimings.JoinDelay)
	for i, n := range nodes {
		var std, alt, services, servAlt []string
		for j, o := range nodes {
			if j == i {
				continue
			}
			std = append(std, "["+ids[j]+",,["+o.peerStd+"]]")
			services = append(services, o.serv)
			if o.peerAlt != "" {
				alt = append(alt, "["+ids[j]+",,["+o.peerAlt+"]]")
				servAlt = append(servAlt, o.servAlt)
			}
		}
		addr := podIP(i) + ":3000"
		gen := ask(t, addr, "peers-generation")
		for cmd, want := range map[string]string{
			"service-clear-std":  n.std,
			"service-clear-alt":  n.alt,
			"service":            n.serv,
			"peers-clear-std":    gen + ",3000,[" + strings.Join(std, ",") + "]",
			"peers-clear-alt":    gen + ",3000,[" + strings.Join(alt, ",") + "]",
			"services":           strings.Join(services, ";"),
			"services-alternate": strings.Join(servAlt, ";"),
		} {
			if got := ask(t, addr, cmd); got != want {
				t.Errorf("db-%d %s: %q, want %q", i, cmd, got, want)
			}
		}
	}
}

// peers-generation counts as asd's service list does, as the restart capture shows
// (dataplane/restart/events.json): one for each peer that joins or leaves, one for each peer whose
// asd is new to this one; a node that stopped stays listed until the others drop it.
func TestPeersGenerationLikeTheCapture(t *testing.T) {
	opts := realTimings
	opts.RestartDowntime = 15 * time.Second // SIGTERM, started again 15 s later
	s, clk := newFakeSim(t, opts)
	seeds := []string{podIP(0), podIP(1), podIP(2)}
	for i := range 3 {
		addPod(t, s, i, conf("db", seeds...))
	}
	clk.Step(opts.JoinDelay)
	gens := func(want ...string) {
		t.Helper()
		for i, w := range want {
			if got := ask(t, podIP(i)+":3000", "peers-generation"); w != "" && got != w {
				t.Fatalf("db-%d: peers-generation %s, want %s", i, got, w)
			}
		}
	}
	gens("4", "4", "4")
	n2 := mustNode(t, s, "db-2").NodeID
	if _, err := s.WarmRestart("db-2"); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if peers := ask(t, podIP(0)+":3000", "peers-clear-std"); !strings.Contains(peers, n2) {
		t.Fatalf("db-2 is listed until the others drop it: %s", peers)
	}
	clk.Step(opts.DropDelay)
	gens("5", "5")
	clk.Step(opts.RestartDowntime + opts.JoinDelay)
	gens("7", "7", "4")
	if _, err := s.WarmRestartNodes([]string{"db-1", "db-2"}); err != nil {
		t.Fatal(err)
	}
	clk.Step(opts.DropDelay)
	gens("9")
	clk.Step(opts.RestartDowntime + opts.JoinDelay)
	gens("13", "4", "4")
}

// forward listens on a free loopback address at port and relays each connection to target, as a
// NAT in front of a pod does; it returns the address's IP.
func forward(t *testing.T, port int, target string) string {
	t.Helper()
	var ln net.Listener
	var ip string
	var err error
	for range ipAttempts {
		ip = fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
		if ln, err = net.Listen("tcp4", net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp4", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	return ip
}

// The official client told to use the alternate addresses (ClientPolicy.UseServicesAlternate) finds
// the cluster through one node's alternate address and reaches every node at its own, read from
// peers-clear-alt: here each node's NAT address, on port 4000.
func TestClientUsesAlternateAddresses(t *testing.T) {
	s := newSim(t, Options{})
	seeds := []string{podIP(0), podIP(1), podIP(2)}
	alt := map[string]string{}
	for i := range 3 {
		ip := forward(t, 4000, podIP(i)+":3000")
		st := addPod(t, s, i, inNetworkService(conf("db", seeds...), "alternate-access-address "+ip,
			"alternate-access-port 4000"))
		alt[st.NodeID] = ip
	}
	policy := as.NewClientPolicy()
	policy.Timeout = 5 * time.Second
	policy.UseServicesAlternate = true
	first := mustNode(t, s, "db-0")
	c, err := as.NewClientWithPolicyAndHost(policy, as.NewHost(alt[first.NodeID], 4000))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.GetNodes()) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	nodes := c.GetNodes()
	if len(nodes) != 3 {
		t.Fatalf("the client sees %d nodes", len(nodes))
	}
	for _, n := range nodes {
		if h := n.GetHost(); h.Name != alt[n.GetName()] || h.Port != 4000 {
			t.Errorf("node %s reached at %s, its alternate address is %s:4000", n.GetName(), h, alt[n.GetName()])
		}
	}
	k := key(t, "demo", "through-nat")
	if err := c.Put(nil, k, as.BinMap{"v": 1}); err != nil {
		t.Fatal(err)
	}
	if rec, err := c.Get(nil, k); err != nil || rec.Bins["v"] != 1 {
		t.Fatalf("read back: %v, %v", rec, err)
	}
}
