package aerosim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func newSim(t *testing.T, opts Options) *Sim {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func addNode(t *testing.T, s *Sim, spec NodeSpec) NodeState {
	t.Helper()
	st, err := s.AddNode(spec)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// exchange sends one raw info request and returns the answer body.
func exchange(addr string, cmds ...string) ([]byte, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	req := strings.Join(cmds, "\n") + "\n"
	if _, err := conn.Write(append(frameHeader(uint64(len(req))), req...)); err != nil {
		return nil, err
	}
	h := make([]byte, headerSize)
	if _, err := io.ReadFull(conn, h); err != nil {
		return nil, err
	}
	if h[0] != 2 || h[1] != 1 {
		return nil, errors.New("bad header")
	}
	body := make([]byte, frameLength(h))
	_, err = io.ReadFull(conn, body)
	return body, err
}

// The embedded fixtures are, byte for byte, the files whose sha256 the manifest recorded when they were copied
// from the project's shared facts (a real CE 8.1.2.0 server's answers); an edit by hand shows up here.
func TestEmbeddedFixturesMatchTheirProvenance(t *testing.T) {
	dataplane, err := fs.Sub(fixtureFS, dataplaneRoot)
	if err != nil {
		t.Fatal(err)
	}
	checkManifest(t, "fixtures/aerospike-ce-8.1.2.0.sha256", Fixtures())
	checkManifest(t, dataplaneRoot+".sha256", dataplane)
}

func checkManifest(t *testing.T, manifestPath string, root fs.FS) {
	t.Helper()
	manifest, err := fixtureFS.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(manifest)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("manifest line %q", line)
		}
		want[name] = sum
	}
	seen := 0
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := fs.ReadFile(root, p)
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want[p] {
			t.Errorf("%s: sha256 %s, manifest says %q", p, got, want[p])
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(want) {
		t.Errorf("%s: %d files embedded, the manifest lists %d", manifestPath, seen, len(want))
	}
}

// Every fixture answer must come back byte for byte from a node configured with the values the
// fixture's own statistics show, its node id, and the other nodes of its capture in its cluster.
func TestAnswersMatchFixtures(t *testing.T) {
	s := newSim(t, Options{})
	nodes := map[string]NodeState{}
	for profile := range s.tmpl {
		nodes[profile] = addNode(t, s, fixtureNodeSpec(t, profile))
		if _, err := s.SetPin(profile, fixturePin(t, profile)); err != nil {
			t.Fatal(err)
		}
	}
	for profile, st := range nodes {
		t.Run(profile, func(t *testing.T) {
			files, _ := fs.Glob(Fixtures(), profile+"/*.body")
			if len(files) == 0 {
				t.Fatal("no fixture files")
			}
			for _, file := range files {
				want, _ := fs.ReadFile(Fixtures(), file)
				cmd, _, _ := splitAnswer(want)
				got, err := exchange(st.Addr, cmd)
				if err != nil {
					t.Fatalf("%s: %v", cmd, err)
				}
				if strings.HasPrefix(cmd, "namespace/") {
					got = withObjectsOf(got, want)
				}
				// The captured server advertised its own address: the node advertises its.
				want = bytes.ReplaceAll(want, []byte("127.0.0.1:4000"), []byte(st.IP+":3000"))
				if !bytes.Equal(got, want) {
					t.Errorf("%s:\n got %q\nwant %q", file, got, want)
				}
			}
		})
	}
}

// withObjectsOf copies want's object counts into got: the simulator counts the records it holds, and
// these fixtures' servers held records the test does not write.
func withObjectsOf(got, want []byte) []byte {
	_, wantList, _ := splitAnswer(want)
	values := map[string]string{}
	for _, key := range []string{"objects", "master_objects", "prole_objects", "non_replica_objects"} {
		values[key] = parseKV(wantList).vals[key]
	}
	cmd, gotList, _ := splitAnswer(got)
	return []byte(cmd + "\t" + substitute(gotList, values) + "\n")
}

// fixtureNodeSpec is a profile's node: in one cluster with the other nodes of its capture
// ("three-stable/node-4000" with "three-stable/node-4010"...), with the node id its server answered
// (in any capture: a server is its port, "node-4000").
func fixtureNodeSpec(t *testing.T, profile string) NodeSpec {
	t.Helper()
	spec := NodeSpec{Cluster: "fixture/" + path.Dir(profile), Name: profile, Profile: profile}
	files, _ := fs.Glob(Fixtures(), "*/"+path.Base(profile)+"/node.body")
	for _, file := range append([]string{profile + "/node.body"}, files...) {
		if body, err := fs.ReadFile(Fixtures(), file); err == nil {
			_, spec.NodeID, _ = splitAnswer(body)
			break
		}
	}
	return spec
}

// fixturePin reads the simulated values from the profile's statistics fixture.
func fixturePin(t *testing.T, profile string) Pin {
	t.Helper()
	body, err := fs.ReadFile(Fixtures(), profile+"/statistics.body")
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := splitAnswer(body)
	stats := map[string]string{}
	for item := range strings.SplitSeq(list, ";") {
		k, v, _ := strings.Cut(item, "=")
		stats[k] = v
	}
	size, _ := strconv.Atoi(stats["cluster_size"])
	key := stats["cluster_key"]
	integrity, _ := strconv.ParseBool(stats["cluster_integrity"])
	uptime, _ := strconv.ParseInt(stats["uptime"], 10, 64)
	migrations, _ := strconv.ParseInt(stats["migrate_partitions_remaining"], 10, 64)
	return Pin{ClusterSize: &size, ClusterKey: &key, ClusterIntegrity: &integrity, UptimeSeconds: &uptime,
		MigratePartitionsRemaining: &migrations}
}

func TestClusterMoves(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	s := newSim(t, Options{Clock: clk, MigrationDuration: 10 * time.Second, RestartDowntime: 3 * time.Second})
	for _, name := range []string{"a", "b", "c"} {
		addNode(t, s, NodeSpec{Cluster: "c1", Name: name})
	}
	addNode(t, s, NodeSpec{Cluster: "other", Name: "z"})
	nodes := s.Nodes()
	a, b := nodes[0], nodes[1]
	if a.ClusterSize != 3 || a.ClusterKey != b.ClusterKey || a.MigratePartitionsRemaining == 0 {
		t.Fatalf("after 3 joins: %+v", a)
	}
	if z := nodes[3]; z.ClusterSize != 1 || z.MigratePartitionsRemaining != 0 || z.ClusterKey == a.ClusterKey {
		t.Fatalf("a single-node cluster must neither migrate nor share a key: %+v", z)
	}

	clk.Step(5 * time.Second)
	// Migrations finish one partition at a time, spread over MigrationDuration.
	if st := mustNode(t, s, "a"); st.MigratePartitionsRemaining != a.MigratePartitionsRemaining/2 || st.UptimeSeconds != 5 {
		t.Fatalf("half way: %d of %d: %+v", st.MigratePartitionsRemaining, a.MigratePartitionsRemaining, st)
	}
	clk.Step(5 * time.Second)
	if st := mustNode(t, s, "a"); st.MigratePartitionsRemaining != 0 {
		t.Fatalf("migrations must be done: %+v", st)
	}

	if err := s.RemoveNode("c"); err != nil {
		t.Fatal(err)
	}
	if st := mustNode(t, s, "a"); st.ClusterSize != 2 || st.ClusterKey == a.ClusterKey || st.MigratePartitionsRemaining == 0 {
		t.Fatalf("after a node left: %+v", st)
	}
}

func TestWarmRestart(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	s := newSim(t, Options{Clock: clk, RestartDowntime: 3 * time.Second})
	a := addNode(t, s, NodeSpec{Cluster: "c1", Name: "a"})
	addNode(t, s, NodeSpec{Cluster: "c1", Name: "b"})
	clk.Step(time.Minute)
	before := mustNode(t, s, "b")

	st, err := s.WarmRestart("a")
	if err != nil || st.Member || st.Restarts != 1 {
		t.Fatalf("restart: %+v, %v", st, err)
	}
	if _, err := s.WarmRestart("a"); !errors.Is(err, ErrConflict) {
		t.Fatalf("restart while restarting: %v", err)
	}
	if _, err := exchange(a.Addr, "node"); err == nil {
		t.Fatal("a restarting node answered")
	}
	if b := mustNode(t, s, "b"); b.ClusterSize != 1 || b.ClusterKey == before.ClusterKey {
		t.Fatalf("the other node must see a leave: %+v", b)
	}

	clk.Step(3 * time.Second)
	st = mustNode(t, s, "a")
	if !st.Member || st.UptimeSeconds != 0 || st.ClusterSize != 2 || st.Restarts != 1 {
		t.Fatalf("after the downtime: %+v", st)
	}
	if body, err := exchange(a.Addr, "node"); err != nil || string(body) != "node\t"+a.NodeID+"\n" {
		t.Fatalf("after the downtime: %q, %v", body, err)
	}
}

func mustNode(t *testing.T, s *Sim, name string) NodeState {
	t.Helper()
	st, err := s.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestCommandAnswers(t *testing.T) {
	s := newSim(t, Options{MigrationDuration: time.Hour})
	a := addNode(t, s, NodeSpec{Cluster: "c1", Name: "a"})
	addNode(t, s, NodeSpec{Cluster: "c1", Name: "b"})
	key := mustNode(t, s, "a").ClusterKey
	tests := map[string]string{
		"cluster-stable:size=2;ignore-migrations=false": errUnstable,
		"cluster-stable:size=2;ignore-migrations=true":  key,
		"cluster-stable:size=3;ignore-migrations=true":  errSizeMismatch,
		"cluster-stable:size=x":                         errBadParameter,
		"quiesce:":                                      errEnterpriseOnly,
		"racks:":                                        errEnterpriseOnly,
		"nosuchcommand":                                 errUnrecognized,
		"build":                                         "8.1.2.0",
	}
	for cmd, want := range tests {
		body, err := exchange(a.Addr, cmd)
		if err != nil || string(body) != cmd+"\t"+want+"\n" {
			t.Errorf("%s: got %q, %v; want %q", cmd, body, err, want)
		}
	}
	// Several commands in one request are answered in order.
	body, err := exchange(a.Addr, "node", "build")
	if want := "node\t" + a.NodeID + "\nbuild\t8.1.2.0\n"; err != nil || string(body) != want {
		t.Errorf("two commands: got %q, %v; want %q", body, err, want)
	}
}

func TestFaults(t *testing.T) {
	s := newSim(t, Options{})
	a := addNode(t, s, NodeSpec{Cluster: "c1", Name: "a"})
	tests := []struct {
		fault Fault
		check func([]byte, error) bool
	}{
		{FaultGarbage, func(_ []byte, err error) bool { return err != nil && err.Error() == "bad header" }},
		{FaultClose, func(_ []byte, err error) bool { return errors.Is(err, io.EOF) }},
		{FaultHang, func(_ []byte, err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }},
		{FaultOversized, func(b []byte, err error) bool { return err == nil && len(b) == oversizedBody }},
		{FaultNone, func(b []byte, err error) bool { return err == nil && string(b) == "build\t8.1.2.0\n" }},
	}
	for _, tt := range tests {
		if _, err := s.SetFault("a", tt.fault); err != nil {
			t.Fatal(err)
		}
		if body, err := exchange(a.Addr, "build"); !tt.check(body, err) {
			t.Errorf("fault %q: got %d bytes, %v", tt.fault, len(body), err)
		}
	}
	if _, err := s.SetFault("a", "bogus"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown fault: %v", err)
	}
}

func TestLatency(t *testing.T) {
	s := newSim(t, Options{})
	a := addNode(t, s, NodeSpec{Cluster: "c1", Name: "a"})
	if _, err := s.SetLatency("a", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := exchange(a.Addr, "build"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("answered after %v, want at least the latency", d)
	}
}

func TestLoopbackOnly(t *testing.T) {
	s := newSim(t, Options{})
	for _, ip := range []string{"10.0.0.1", "0.0.0.0", "::1", "localhost"} {
		if _, err := s.AddNode(NodeSpec{Cluster: "c1", Name: "n", IP: ip}); !errors.Is(err, ErrInvalid) {
			t.Errorf("ip %q: %v", ip, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.168.1.1:0"} {
		if ln, err := ListenLoopback(addr); err == nil {
			_ = ln.Close()
			t.Errorf("control address %q accepted", addr)
		}
	}
}
