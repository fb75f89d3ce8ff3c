// Package aerosim simulates Aerospike CE 8.1 nodes for tests: each node speaks the info protocol
// over real TCP on its own loopback IP, answering with the bytes a real asd 8.1.2.0 sent (the
// embedded fixtures) with only node (and get-config's node-id), cluster_size, cluster_key,
// cluster_integrity, cluster_is_member, cluster_principal, cluster_duplicate_nodes, uptime and
// migrate_partitions_remaining (and the namespace's ns_cluster_size) filled in from the simulated
// cluster state. A node's id and the addresses it advertises are asd's (identity.go).
//
// Clusters form the way asd forms them (mesh.go): a node given a config reads its cluster-name and
// its mesh seeds, resolves the seeds' host names once through the simulator's DNS table (SetDNS),
// drops for good a seed that leads to itself, and joins the cluster of any live node it reaches;
// membership spreads through the mesh. A node given only a cluster name (simple mode) reaches every
// other simple node of that name. Timing follows the real server (Options): a started node reports
// cluster_size 0 for JoinDelay, the others drop a node that stopped after DropDelay (HangDropDelay
// for a hung one), and every membership change moves the copies of the partitions whose replicas
// change, over MigrationDuration. State is computed from Options.Clock when observed, so a fake clock
// drives it deterministically. Sim is the Go API; NewHandler exposes it over HTTP.
//
// Each node also stores records and answers the data protocol the official client speaks (dataplane*.go,
// partitions.go, info_client.go): partitions, copies and migrations as docs/development.md describes.
package aerosim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// Options configures a Sim. Durations are used as given: zero means instant. The comments give
// what a real CE 8.1.2.0 server showed (fixtures README, "How the same server behaves over time").
type Options struct {
	Port int // every node's info port; default 3000
	// MigrationDuration is how long the migrations after a membership change take: they finish one
	// partition at a time, spread over it (real: 20–50 s with 30,000 records).
	MigrationDuration time.Duration
	// RestartDowntime is how long a warm-restarted asd does not listen (real: 0.2–0.3 s).
	RestartDowntime time.Duration
	// JoinDelay is how long a started asd answers cluster_size 0 / cluster_key 0 before it joins
	// the nodes it reaches (real: about 2 s).
	JoinDelay time.Duration
	// DropDelay is how long the others keep counting a node that stopped (removed, or restarting
	// for longer than that) or that a mesh cut hides, before they drop it (real: 2 s).
	DropDelay time.Duration
	// HangDropDelay is the same for a hung node, which still accepts connections (real: about 3 s).
	HangDropDelay time.Duration
	// CrashLoopBackoff is how long a node whose config asd refused waits before it starts again,
	// reading its config file anew (a kubelet's crash-loop back-off; real: 10 s, doubling).
	CrashLoopBackoff time.Duration
	// LoadRate is how many records a second a starting asd reads back from its persistent namespaces
	// (Community Edition always cold starts: it rebuilds the index by reading the devices); 0 reads
	// them at once. Until it has read them all, asd does not listen, and its log ticks the progress
	// every LoadTick (real: every 5 s, "{ns} loaded: objects N device-pcts (P)", the first 5 s into the
	// load: a load shorter than that logs no progress at all).
	LoadRate int64
	// LoadTick is the period of the loading ticker; default 5 s, as asd 8.1.2.0's.
	LoadTick time.Duration
	// LogDir, when set, receives each node's log as a file in the CRI format a kubelet serves
	// (LogFile), for `kubectl logs`.
	LogDir string
	Clock  clock.PassiveClock // default clock.RealClock{}
}

// NodeSpec describes a node to add. A node is given either a cluster name (simple mode: it joins
// every other simple node of that name) or a config: Config, or ConfigFile, the path of the file
// in Files that asd reads at every start (a pod's own copy of aerospike.conf).
type NodeSpec struct {
	Cluster string `json:"cluster,omitempty"`
	Name    string `json:"name"`
	IP      string `json:"ip,omitempty"` // in 127.0.0.0/8; empty picks a free one
	// NodeID replaces the node id asd derives from the pod's MAC address (hex, not 0): a test's fixed
	// id. A node-id in the config still wins, as in asd. Empty: each node added gets a new MAC address,
	// so a new id, kept across restarts in place. In a NodeState, the id the node's asd runs with
	// (empty until it first started).
	NodeID  string `json:"nodeId,omitempty"`
	Profile string `json:"profile,omitempty"` // fixture directory used as templates; default "single"
	Config  string `json:"config,omitempty"`
	// Image is the container's image: its tag's server version picks the parameter table the
	// config is held to (the newest when it names none).
	Image      string            `json:"image,omitempty"`
	ConfigFile string            `json:"configFile,omitempty"`
	Files      map[string]string `json:"files,omitempty"` // path → content: the pod's files as asd sees them
	// Volume names the volume a persistent namespace (storage-engine device or file) keeps its records
	// on: a node added again with the same Volume finds them. Empty: they live and die with the pod.
	Volume string `json:"volume,omitempty"`
	// EraseVolumes are volumes (as named in Volume) the pod's init container erased before this start
	// (spec.storage.volumes initMethod): the records kept on them are gone. A node's persistent
	// namespaces are kept as one, so erasing one of its volumes erases them all.
	EraseVolumes []string `json:"eraseVolumes,omitempty"`
	// OpenFileLimit is the container's open-file limit (RLIMIT_NOFILE), which asd holds proto-fd-max
	// to at start and live, and /proc/1/limits reports; 0 is DefaultOpenFileLimit.
	OpenFileLimit int64 `json:"openFileLimit,omitempty"`
	// HostPassesBestPractices: the host passes asd's best-practices checks (kernel and memory
	// settings). By default it fails them, like the reference host (its statistics say
	// failed_best_practices=true): asd warns and reports it, or stops with enforce-best-practices true.
	HostPassesBestPractices bool `json:"hostPassesBestPractices,omitempty"`
	// LoadRate replaces Options.LoadRate for this node (records a second its cold start reads).
	LoadRate int64 `json:"loadRate,omitempty"`
}

// DefaultOpenFileLimit is the open-file limit containerd gives a container (soft and hard).
const DefaultOpenFileLimit = 1048576

// Fault makes a node misbehave on every request until cleared with FaultNone.
type Fault string

// Faults.
const (
	FaultNone        Fault = ""
	FaultGarbage     Fault = "garbage"      // answers bytes that are not the info protocol
	FaultBogusLength Fault = "bogus-length" // a valid header declaring 2^48-1 bytes, then junk
	FaultOversized   Fault = "oversized"    // a valid header and a 2 MiB body
	FaultClose       Fault = "close"        // closes the connection without answering
	// FaultHang is a stopped asd (SIGSTOP): it accepts connections, reads requests and never
	// answers, and sends no heartbeats, so the others drop it after HangDropDelay.
	FaultHang Fault = "hang"
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

// Phases of a node's asd.
const (
	PhaseRestarting = "restarting" // not listening (a warm restart's first moments)
	PhaseJoining    = "joining"    // answers, cluster_size 0: not a member yet
	PhaseMember     = "member"     // a member of a cluster (maybe alone)
	PhaseFailed     = "failed"     // asd refused its config and exited; it tries again after CrashLoopBackoff
	PhaseLoading    = "loading"    // started, reading its persistent namespaces back (not listening yet)
)

// NodeState is a node as seen now. The cluster fields are what the node answers (zero while it
// is not a member).
type NodeState struct {
	NodeSpec
	Addr        string `json:"addr"`
	ClusterName string `json:"clusterName"`
	Phase       string `json:"phase"`
	// Member is true while the node is a member of a cluster; it answers (unless hung) from
	// PhaseJoining on.
	Member                     bool   `json:"member"`
	Error                      string `json:"error,omitempty"` // why asd refused to start (PhaseFailed)
	UptimeSeconds              int64  `json:"uptimeSeconds"`
	Restarts                   int    `json:"restarts"` // warm restarts
	Crashes                    int    `json:"crashes"`  // starts asd refused
	ClusterSize                int    `json:"clusterSize"`
	ClusterKey                 string `json:"clusterKey"`
	ClusterIntegrity           bool   `json:"clusterIntegrity"`
	MigratePartitionsRemaining int64  `json:"migratePartitionsRemaining"`
	ConfigHash                 string `json:"configHash,omitempty"` // config.Hash of the file asd loaded
	// ConfigDiffers: set-config or log-set changed running values since asd loaded its file.
	ConfigDiffers bool        `json:"configDiffers,omitempty"`
	Seeds         []SeedState `json:"seeds,omitempty"`
	Latency       Duration    `json:"latency"`
	Fault         Fault       `json:"fault,omitempty"`
	Pin           Pin         `json:"pin"`
	// Objects counts the records the node holds per namespace (every copy: master, replica, or a
	// migration's source).
	Objects map[string]int64 `json:"objects,omitempty"`
}

// Sim is a set of simulated nodes and the mesh between them. It is safe for concurrent use.
type Sim struct {
	opts   Options
	tmpl   templates
	client map[string]string // the data plane fixtures' answers to the client's static commands
	wg     sync.WaitGroup    // accept loops and connections

	mu       sync.Mutex
	closed   bool
	nextID   uint64
	nodes    map[string]*node // by name
	ghosts   map[uint64]*node // removed nodes the others still count (until DropDelay)
	links    map[linkKey]*link
	clusters map[string]*cluster       // by membership identity
	stuck    map[string]*stuckExchange // exchanges that cannot commit, by membership identity
	gen      uint64                    // cluster generations, for fresh keys
	settled  time.Time                 // the simulation is computed up to here
	dns      resolver
	groups   map[string]int           // mesh cut: node name → group
	heard    map[*node]map[string]int // node → node id → how many nodes it hears with it (heardIDs)
	history  history
	disks    map[string]map[string]*nsStore // diskKey → persistent namespace → its records
}

type node struct {
	id      uint64 // unique per AddNode: a node re-added under a name is another node
	spec    NodeSpec
	mac     uint64   // the pod's interface's MAC address: a pod's own, gone with it
	ident   identity // as its asd last started
	addr    string
	ln      net.Listener
	conns   map[net.Conn]struct{}
	gone    chan struct{} // closed on removal: ends latency waits and hangs
	files   map[string]string
	removed bool

	asd       asd
	inc       int // incarnation: +1 at every start of asd
	restarts  int
	crashes   int
	memberInc int            // the incarnation the mesh counts as a member
	counted   bool           // the others still count memberInc (it may be restarting)
	cluster   *cluster       // frozen while stuck is set
	stuck     *stuckExchange // the exchange it is stuck in (nil: none)
	latency   time.Duration
	fault     Fault
	pin       Pin
	log       []string
	logFile   string // in Options.LogDir; "" when not set
	status    status // last recorded in the history

	data     atomic.Pointer[store] // the running asd's records (emptyStore while it is down)
	partGen  atomic.Int64          // partition-generation: +1 whenever this node's partition map changes
	peersGen int64                 // peers-generation (see learnPeers)
	peers    map[string]*peer      // by node id: the running asd's service list, alumni included
}

// store is the running asd's records; the data path reads it without s.mu.
func (n *node) store() *store {
	if st := n.data.Load(); st != nil {
		return st
	}
	return emptyStore
}

// New returns an empty simulator.
func New(opts Options) (*Sim, error) {
	if opts.Port == 0 {
		opts.Port = 3000
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.LoadTick <= 0 {
		opts.LoadTick = 5 * time.Second
	}
	tmpl, err := loadTemplates()
	if err != nil {
		return nil, err
	}
	client, err := loadClientAnswers()
	if err != nil {
		return nil, err
	}
	return &Sim{opts: opts, tmpl: tmpl, client: client, nodes: map[string]*node{}, ghosts: map[uint64]*node{},
		links: map[linkKey]*link{}, clusters: map[string]*cluster{}, stuck: map[string]*stuckExchange{}, dns: newResolver(),
		settled: opts.Clock.Now(), disks: map[string]map[string]*nsStore{}}, nil
}

// AddNode starts a node listening on spec.IP; its asd starts at once.
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
	s.eraseVolumes(spec.EraseVolumes)
	s.nextID++
	n := &node{id: s.nextID, spec: spec, mac: podMAC(s.nextID), addr: ln.Addr().String(), ln: ln,
		conns: map[net.Conn]struct{}{}, gone: make(chan struct{}), files: maps.Clone(spec.Files), memberInc: -1}
	if n.files == nil {
		n.files = map[string]string{}
	}
	if s.opts.LogDir != "" {
		n.logFile = filepath.Join(s.opts.LogDir, LogFile(spec.Name))
	}
	n.spec.Files = nil
	n.asd = asd{phase: phaseDown, downUntil: now}
	s.nodes[spec.Name] = n
	s.settle(now)
	s.wg.Go(func() { s.acceptLoop(n) })
	return s.state(n, now), nil
}

// RemoveNode stops a node for good (its pod is gone); the others drop it after DropDelay.
func (s *Sim) RemoveNode(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, now, err := s.find(name)
	if err != nil {
		return err
	}
	n.removed = true
	n.cluster, n.stuck = nil, nil
	n.data.Store(emptyStore)
	if n.spec.Volume == "" {
		delete(s.disks, n.diskKey()) // an emptyDir goes with its pod
	}
	delete(s.nodes, name)
	s.history.node(now, n, statusOf(n))
	if n.counted {
		s.ghosts[n.id] = n
	} else {
		s.unlink(n)
	}
	n.shutdown()
	s.settle(now)
	return nil
}

// WarmRestart is what SIGUSR1 to the image's tini does to asd: it stops (connections are reset),
// and starts again after RestartDowntime with uptime 0, reading its config anew.
func (s *Sim) WarmRestart(name string) (NodeState, error) {
	return s.update(name, func(n *node, now time.Time) error {
		if err := n.restartable(); err != nil {
			return err
		}
		s.warmRestart(n, now)
		return nil
	})
}

// WarmRestartNodes warm-restarts several nodes at the same instant, as if their asd were killed
// together (the negative control: two copies of a partition gone at once). Either every node
// restarts or, if one cannot, none does.
func (s *Sim) WarmRestartNodes(names []string) ([]NodeState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := make([]*node, 0, len(names))
	var now time.Time
	for _, name := range names {
		n, at, err := s.find(name)
		if err != nil {
			return nil, err
		}
		if err := n.restartable(); err != nil {
			return nil, err
		}
		nodes, now = append(nodes, n), at
	}
	for _, n := range nodes {
		s.warmRestart(n, now)
	}
	s.settle(now)
	out := make([]NodeState, len(nodes))
	for i, n := range nodes {
		out[i] = s.state(n, now)
	}
	return out, nil
}

func (n *node) restartable() error {
	switch n.asd.phase {
	case phaseDown:
		return fmt.Errorf("%w: node %q is already restarting", ErrConflict, n.spec.Name)
	case phaseFailed:
		return fmt.Errorf("%w: node %q has no running asd: %s", ErrConflict, n.spec.Name, n.asd.err)
	}
	return nil
}

// LogFile is the name of a node's log file in Options.LogDir.
func LogFile(name string) string { return strings.ReplaceAll(name, "/", "_") + ".log" }

func (s *Sim) warmRestart(n *node, now time.Time) {
	n.restarts++
	n.stop(now.Add(s.opts.RestartDowntime))
	n.logf(now, "INFO (as): SIGUSR1 to tini: restarting asd")
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

// Log returns what the node's asd logged that the simulator models (oldest first).
func (s *Sim) Log(name string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _, err := s.find(name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(n.log), nil
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

// update runs fn on the named node under the lock, lets the simulation follow, and returns the
// node's resulting state.
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
	s.settle(now)
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
	if spec.Name == "" {
		return fmt.Errorf("%w: name is required", ErrInvalid)
	}
	if spec.Cluster == "" && spec.Config == "" && spec.ConfigFile == "" {
		return fmt.Errorf("%w: a cluster name, a config or a config file is required", ErrInvalid)
	}
	if spec.Profile == "" {
		spec.Profile = DefaultProfile
	}
	if _, ok := s.tmpl[spec.Profile]; !ok {
		return fmt.Errorf("%w: unknown profile %q", ErrInvalid, spec.Profile)
	}
	if spec.NodeID != "" {
		id, ok := parseNodeID(spec.NodeID)
		if !ok {
			return fmt.Errorf("%w: nodeId %q is not a node id (hexadecimal, 64 bits, not 0)", ErrInvalid, spec.NodeID)
		}
		spec.NodeID = formatNodeID(id)
	}
	if spec.OpenFileLimit < 0 {
		return fmt.Errorf("%w: openFileLimit %d is negative", ErrInvalid, spec.OpenFileLimit)
	}
	if spec.OpenFileLimit == 0 {
		spec.OpenFileLimit = DefaultOpenFileLimit
	}
	return nil
}

// state is the node as the control API shows it. Callers hold s.mu.
func (s *Sim) state(n *node, now time.Time) NodeState {
	f := s.facts(n, now)
	spec := n.spec
	spec.NodeID = n.ident.nodeID
	return NodeState{
		NodeSpec: spec, Addr: n.addr, ClusterName: n.clusterName(), Phase: n.asd.phaseName(),
		Member: n.cluster != nil, Error: n.asd.err, UptimeSeconds: f.uptime, Restarts: n.restarts,
		Crashes: n.crashes, ClusterSize: f.clusterSize, ClusterKey: f.clusterKey, ClusterIntegrity: f.integrity,
		MigratePartitionsRemaining: f.migrations, ConfigHash: n.asd.configHash, Seeds: n.asd.seedStates(),
		ConfigDiffers: n.asd.live != nil && !n.asd.live.equal(n.asd.loaded),
		Latency:       Duration{n.latency}, Fault: n.fault, Pin: n.pin, Objects: n.store().objects(),
	}
}

// facts are the node's answers at now. Callers hold s.mu.
func (s *Sim) facts(n *node, now time.Time) nodeFacts {
	f := nodeFacts{nodeID: n.ident.nodeID, clusterKey: "0", principal: "0", duplicates: s.duplicateIDs(n),
		failedBestPractices: !n.spec.HostPassesBestPractices}
	if !n.asd.simple {
		f.clusterName = n.clusterName()
	}
	if n.asd.answering() {
		f.uptime = int64(now.Sub(n.asd.startedAt) / time.Second)
	}
	if c := n.cluster; c != nil {
		f.member, f.integrity = true, true
		f.clusterSize = len(c.members)
		f.clusterKey = c.key
		f.principal = c.principal().ident.nodeID
		f.migrations = c.migrationsOf(n)
	}
	f.stuck = n.stuck != nil
	return n.pin.apply(f)
}

// stop ends the running asd; it starts again at start.
func (n *node) stop(start time.Time) {
	n.asd = asd{phase: phaseDown, downUntil: start}
	n.cluster, n.stuck = nil, nil
	n.data.Store(emptyStore)
	n.closeConns()
}

// clusterName is the cluster-name asd runs with (set-config can change it).
func (n *node) clusterName() string {
	if n.asd.live != nil {
		return n.asd.live.contexts[ctxService].vals["cluster-name"]
	}
	if n.asd.simple || n.asd.conf.clusterName == "" {
		return n.spec.Cluster
	}
	return n.asd.conf.clusterName
}

// logf appends a line in asd's log format, and to the node's log file in the CRI format.
func (n *node) logf(at time.Time, format string, args ...any) {
	const keep = 500
	line := at.UTC().Format("Jan 02 2006 15:04:05 GMT: ") + fmt.Sprintf(format, args...)
	n.log = append(n.log, line)
	if len(n.log) > keep {
		n.log = slices.Delete(n.log, 0, len(n.log)-keep)
	}
	if n.logFile == "" {
		return
	}
	// Best effort, as a container's log is: a full disk loses lines, not the node.
	if f, err := os.OpenFile(n.logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		// asd writes its console log to stderr (seen on the real 8.1.2.0 under tini).
		_, _ = fmt.Fprintf(f, "%s stderr F %s\n", at.UTC().Format(time.RFC3339Nano), line)
		_ = f.Close()
	}
}

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

// hexID renders a stable 48-bit id the way asd prints cluster keys (%lX).
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
