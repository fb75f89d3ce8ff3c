// Package aerosim simulates Aerospike CE 8.1 nodes for tests: each node speaks the info protocol
// over real TCP on its own loopback IP, answering with the bytes a real asd 8.1.2.0 sent (the
// embedded fixtures) with only node, cluster_size, cluster_key, cluster_integrity, uptime and
// migrate_partitions_remaining (and the namespace's ns_cluster_size) filled in from the simulated
// cluster state.
//
// Cluster state moves like a real cluster: a node joining or leaving gives every member a new
// cluster_key and cluster_size and starts migrations that count down to 0 over
// Options.MigrationDuration; a warm restart takes the node away for Options.RestartDowntime, then
// it comes back with uptime 0. State is computed from Options.Clock when observed, so a fake
// clock drives it deterministically. Sim is the Go API; NewHandler exposes it over HTTP.
package aerosim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Errors returned by Sim methods; the HTTP adapter maps them to status codes.
var (
	ErrNotFound = errors.New("no such node")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid request")
	ErrClosed   = errors.New("simulator closed")
)

// Options configures a Sim. Durations are used as given: zero means instant.
type Options struct {
	Port int // every node's info port; default 3000
	// MigrationDuration is how long migrate_partitions_remaining takes to reach 0 after a
	// membership change of a cluster of two nodes or more.
	MigrationDuration time.Duration
	// MigratePartitions is migrate_partitions_remaining right after a change; default 4096.
	MigratePartitions int64
	// RestartDowntime is how long a warm-restarted node is unreachable and out of its cluster.
	RestartDowntime time.Duration
	Clock           clock.PassiveClock // default clock.RealClock{}
}

// NodeSpec describes a node to add.
type NodeSpec struct {
	Cluster string `json:"cluster"`
	Name    string `json:"name"`
	IP      string `json:"ip,omitempty"`      // in 127.0.0.0/8; empty picks a free one
	NodeID  string `json:"nodeId,omitempty"`  // default derived from Name
	Profile string `json:"profile,omitempty"` // fixture directory used as templates; default "single"
}

// Fault makes a node misbehave on every request until cleared with FaultNone.
type Fault string

// Faults.
const (
	FaultNone        Fault = ""
	FaultGarbage     Fault = "garbage"      // answers bytes that are not the info protocol
	FaultBogusLength Fault = "bogus-length" // a valid header declaring 2^48-1 bytes, then junk
	FaultOversized   Fault = "oversized"    // a valid header and a 2 MiB body
	FaultClose       Fault = "close"        // closes the connection without answering
	FaultHang        Fault = "hang"         // reads the request and never answers
)

// Pin overrides simulated values (nil fields are simulated), e.g. to reproduce a fixture exactly
// or a state the simulation never reaches on its own, such as cluster_integrity=false.
type Pin struct {
	ClusterSize                *int    `json:"clusterSize,omitempty"`
	ClusterKey                 *string `json:"clusterKey,omitempty"`
	ClusterIntegrity           *bool   `json:"clusterIntegrity,omitempty"`
	UptimeSeconds              *int64  `json:"uptimeSeconds,omitempty"`
	MigratePartitionsRemaining *int64  `json:"migratePartitionsRemaining,omitempty"`
}

// NodeState is a node as seen now. The cluster fields are what the node answers (zero while it
// is not a member).
type NodeState struct {
	NodeSpec
	Addr string `json:"addr"`
	// Member is false while the node is restarting; it is then unreachable as well.
	Member                     bool     `json:"member"`
	UptimeSeconds              int64    `json:"uptimeSeconds"`
	Restarts                   int      `json:"restarts"`
	ClusterSize                int      `json:"clusterSize"`
	ClusterKey                 string   `json:"clusterKey"`
	ClusterIntegrity           bool     `json:"clusterIntegrity"`
	MigratePartitionsRemaining int64    `json:"migratePartitionsRemaining"`
	Latency                    Duration `json:"latency"`
	Fault                      Fault    `json:"fault,omitempty"`
	Pin                        Pin      `json:"pin"`
}

// Sim is a set of simulated nodes grouped in clusters by name. It is safe for concurrent use.
type Sim struct {
	opts Options
	tmpl templates
	wg   sync.WaitGroup // accept loops and connections

	mu       sync.Mutex
	closed   bool
	nodes    map[string]*node
	clusters map[string]*cluster
}

type node struct {
	spec      NodeSpec
	addr      string
	ln        net.Listener
	conns     map[net.Conn]struct{}
	gone      chan struct{} // closed on removal: ends latency waits and hangs
	startedAt time.Time
	downUntil time.Time // zero unless restarting
	restarts  int
	latency   time.Duration
	fault     Fault
	pin       Pin
}

type cluster struct {
	name      string
	members   map[string]bool
	gen       uint64
	key       string
	changedAt time.Time
	migrating bool
}

// New returns an empty simulator.
func New(opts Options) (*Sim, error) {
	if opts.Port == 0 {
		opts.Port = 3000
	}
	if opts.MigratePartitions == 0 {
		opts.MigratePartitions = 4096
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	tmpl, err := loadTemplates()
	if err != nil {
		return nil, err
	}
	return &Sim{opts: opts, tmpl: tmpl, nodes: map[string]*node{}, clusters: map[string]*cluster{}}, nil
}

// AddNode starts a node listening on spec.IP and joins it to spec.Cluster.
func (s *Sim) AddNode(spec NodeSpec) (NodeState, error) {
	if err := s.fillSpec(&spec); err != nil {
		return NodeState{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return NodeState{}, ErrClosed
	}
	if _, ok := s.nodes[spec.Name]; ok {
		return NodeState{}, fmt.Errorf("%w: node %q exists", ErrConflict, spec.Name)
	}
	ln, err := s.listen(&spec)
	if err != nil {
		return NodeState{}, err
	}
	now := s.advance()
	n := &node{spec: spec, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{},
		gone: make(chan struct{}), startedAt: now}
	s.nodes[spec.Name] = n
	s.join(n, now)
	s.wg.Go(func() { s.acceptLoop(n) })
	return s.state(n, now), nil
}

// RemoveNode stops a node for good; its cluster sees it leave.
func (s *Sim) RemoveNode(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, now, err := s.find(name)
	if err != nil {
		return err
	}
	if n.member() {
		s.leave(n, now)
	}
	delete(s.nodes, name)
	n.shutdown()
	return nil
}

// WarmRestart takes the node out of its cluster for RestartDowntime (connections are reset),
// then it rejoins with uptime 0: what SIGUSR1 to the image's tini does to asd.
func (s *Sim) WarmRestart(name string) (NodeState, error) {
	return s.update(name, func(n *node, now time.Time) error {
		if !n.member() {
			return fmt.Errorf("%w: node %q is already restarting", ErrConflict, name)
		}
		s.leave(n, now)
		n.downUntil = now.Add(s.opts.RestartDowntime)
		n.restarts++
		n.closeConns()
		return nil
	})
}

// SetLatency delays every answer of the node by d (wall-clock time, even with a fake Clock).
func (s *Sim) SetLatency(name string, d time.Duration) (NodeState, error) {
	if d < 0 {
		return NodeState{}, fmt.Errorf("%w: negative latency", ErrInvalid)
	}
	return s.update(name, func(n *node, _ time.Time) error { n.latency = d; return nil })
}

// SetFault makes the node misbehave; FaultNone restores normal answers.
func (s *Sim) SetFault(name string, f Fault) (NodeState, error) {
	switch f {
	case FaultNone, FaultGarbage, FaultBogusLength, FaultOversized, FaultClose, FaultHang:
	default:
		return NodeState{}, fmt.Errorf("%w: unknown fault %q", ErrInvalid, f)
	}
	return s.update(name, func(n *node, _ time.Time) error { n.fault = f; return nil })
}

// SetPin replaces the node's pinned values.
func (s *Sim) SetPin(name string, p Pin) (NodeState, error) {
	return s.update(name, func(n *node, _ time.Time) error { n.pin = p; return nil })
}

// Node returns the node's current state.
func (s *Sim) Node(name string) (NodeState, error) {
	return s.update(name, func(*node, time.Time) error { return nil })
}

// Nodes returns every node's state, sorted by name.
func (s *Sim) Nodes() []NodeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	out := make([]NodeState, 0, len(s.nodes))
	for _, name := range slices.Sorted(maps.Keys(s.nodes)) {
		out = append(out, s.state(s.nodes[name], now))
	}
	return out
}

// Close stops every node and waits for all connections to end.
func (s *Sim) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, n := range s.nodes {
		n.shutdown()
	}
	clear(s.nodes)
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// update runs fn on the named node under the lock and returns its resulting state.
func (s *Sim) update(name string, fn func(n *node, now time.Time) error) (NodeState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, now, err := s.find(name)
	if err != nil {
		return NodeState{}, err
	}
	if err := fn(n, now); err != nil {
		return NodeState{}, err
	}
	return s.state(n, now), nil
}

// find brings the simulation up to now and returns the node. Callers hold s.mu.
func (s *Sim) find(name string) (*node, time.Time, error) {
	if s.closed {
		return nil, time.Time{}, ErrClosed
	}
	now := s.advance()
	n, ok := s.nodes[name]
	if !ok {
		return nil, now, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return n, now, nil
}

func (s *Sim) fillSpec(spec *NodeSpec) error {
	if spec.Cluster == "" || spec.Name == "" {
		return fmt.Errorf("%w: cluster and name are required", ErrInvalid)
	}
	if spec.Profile == "" {
		spec.Profile = DefaultProfile
	}
	if _, ok := s.tmpl[spec.Profile]; !ok {
		return fmt.Errorf("%w: unknown profile %q", ErrInvalid, spec.Profile)
	}
	if spec.NodeID == "" {
		spec.NodeID = hexID(spec.Name)
	}
	return nil
}

// advance applies what happened since the last observation: restarted nodes whose downtime is
// over rejoin, in the order they came back. Callers hold s.mu.
func (s *Sim) advance() time.Time {
	now := s.opts.Clock.Now()
	var back []*node
	for _, n := range s.nodes {
		if !n.member() && !n.downUntil.After(now) {
			back = append(back, n)
		}
	}
	slices.SortFunc(back, func(a, b *node) int { return a.downUntil.Compare(b.downUntil) })
	for _, n := range back {
		n.startedAt, n.downUntil = n.downUntil, time.Time{}
		s.join(n, n.startedAt)
	}
	return now
}

func (s *Sim) join(n *node, at time.Time) {
	c, ok := s.clusters[n.spec.Cluster]
	if !ok {
		c = &cluster{name: n.spec.Cluster, members: map[string]bool{}}
		s.clusters[c.name] = c
	}
	c.members[n.spec.Name] = true
	c.changed(at)
}

func (s *Sim) leave(n *node, at time.Time) {
	c := s.clusters[n.spec.Cluster]
	delete(c.members, n.spec.Name)
	c.changed(at)
}

// changed starts a new cluster generation: new key, and migrations when there is someone to
// migrate to.
func (c *cluster) changed(at time.Time) {
	c.gen++
	c.key = hexID(c.name + "/" + strconv.FormatUint(c.gen, 10))
	c.changedAt = at
	c.migrating = len(c.members) >= 2
}

// migrationsLeft counts down linearly from total to 0 over d.
func (c *cluster) migrationsLeft(now time.Time, d time.Duration, total int64) int64 {
	left := c.changedAt.Add(d).Sub(now)
	if !c.migrating || left <= 0 {
		return 0
	}
	return int64(math.Ceil(float64(total) * float64(left) / float64(d)))
}

// facts are the node's answers at now. Callers hold s.mu.
func (s *Sim) facts(n *node, now time.Time) nodeFacts {
	f := nodeFacts{nodeID: n.spec.NodeID, integrity: true}
	if n.member() {
		c := s.clusters[n.spec.Cluster]
		f.clusterSize = len(c.members)
		f.clusterKey = c.key
		f.uptime = int64(now.Sub(n.startedAt) / time.Second)
		f.migrations = c.migrationsLeft(now, s.opts.MigrationDuration, s.opts.MigratePartitions)
	}
	return n.pin.apply(f)
}

func (s *Sim) state(n *node, now time.Time) NodeState {
	f := s.facts(n, now)
	return NodeState{
		NodeSpec: n.spec, Addr: n.addr, Member: n.member(), UptimeSeconds: f.uptime, Restarts: n.restarts,
		ClusterSize: f.clusterSize, ClusterKey: f.clusterKey, ClusterIntegrity: f.integrity,
		MigratePartitionsRemaining: f.migrations, Latency: Duration{n.latency}, Fault: n.fault, Pin: n.pin,
	}
}

func (n *node) member() bool { return n.downUntil.IsZero() }

// shutdown closes the listener and every connection. Callers hold s.mu.
func (n *node) shutdown() {
	_ = n.ln.Close()
	close(n.gone)
	n.closeConns()
}

func (n *node) closeConns() {
	for c := range n.conns {
		resetConn(c)
	}
	clear(n.conns)
}

func (p Pin) apply(f nodeFacts) nodeFacts {
	if p.ClusterSize != nil {
		f.clusterSize = *p.ClusterSize
	}
	if p.ClusterKey != nil {
		f.clusterKey = *p.ClusterKey
	}
	if p.ClusterIntegrity != nil {
		f.integrity = *p.ClusterIntegrity
	}
	if p.UptimeSeconds != nil {
		f.uptime = *p.UptimeSeconds
	}
	if p.MigratePartitionsRemaining != nil {
		f.migrations = *p.MigratePartitionsRemaining
	}
	return f
}

// hexID renders a stable 48-bit id the way asd prints node ids and cluster keys (%lX).
func hexID(s string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%X", h.Sum64()&(1<<48-1))
}

// Duration is a time.Duration that reads and writes JSON as "250ms".
type Duration struct{ time.Duration }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	d.Duration = v
	return err
}
