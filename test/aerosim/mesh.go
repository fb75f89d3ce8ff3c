package aerosim

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/conffile"
)

// How the mesh is simulated. Every change (a node added, removed, restarted, hung; a DNS update; a
// mesh cut; a tip) and every deadline (a restart's downtime ending, a node joining, a drop delay
// running out) settles the simulation at that time, in time order:
//
//  1. asd processes move on: a restarting node starts (reading its config) and a joining node
//     becomes a member;
//  2. every heartbeating node tries the seeds it has not connected yet, as asd's mesh tender does:
//     a seed's host name is resolved once (retried while it does not resolve), and the first of its
//     addresses where a node listens is the one it connects to; if that node is itself, the seed
//     is removed for good; simple nodes reach every other simple node of their cluster name;
//  3. nodes learn of each other through the mesh: everyone in a connected group of nodes that hear
//     each other (both heartbeating, same cluster-name, no mesh cut) knows everyone else;
//  4. a pair that stops hearing each other stays adjacent for DropDelay (HangDropDelay when one
//     side hung), as heartbeats time out;
//  5. clusters are the connected groups of adjacent nodes with a live member among them (a group of
//     only nodes that stopped or hung is forgotten); a group whose membership (node and
//     incarnation) is new gets a new cluster key and starts migrations.

type asdPhase int

const (
	phaseDown    asdPhase = iota // not listening; starts at downUntil
	phaseJoining                 // listening, heartbeating, cluster_size 0 until joinAt
	phaseActive                  // a member
	phaseFailed                  // refused its config; starts again at retryAt
	phaseLoading                 // reading its persistent namespaces back until loadUntil; not listening
)

// asd is one run of a node's asd process, from start to stop.
type asd struct {
	phase      asdPhase
	downUntil  time.Time
	joinAt     time.Time
	retryAt    time.Time
	startedAt  time.Time
	loadUntil  time.Time
	nextTick   time.Time        // the loading ticker's next line
	loading    map[string]int64 // records each persistent namespace reads back at start
	simple     bool
	conf       nodeConfig
	live       *liveConfig // running values (nil for a simple node)
	loaded     *liveConfig // as the file gave them
	configHash string
	err        string
	seeds      []*seed
	namespaces []nsConfig
}

type seed struct {
	seedAddr
	addrs   []string // resolved once, as asd does
	removed bool     // led to the node itself
	peer    *node    // connected
}

// SeedState is a mesh seed as a node holds it.
type SeedState struct {
	Host  string   `json:"host"`
	Port  int      `json:"port"`
	Addrs []string `json:"addrs,omitempty"`
	// State is "unresolved", "connecting" (resolved, no node reached yet), "connected" or
	// "removed" (it led to the node itself).
	State string `json:"state"`
}

func (a *asd) answering() bool { return a.phase == phaseJoining || a.phase == phaseActive }

func (a *asd) phaseName() string {
	return [...]string{PhaseRestarting, PhaseJoining, PhaseMember, PhaseFailed, PhaseLoading}[a.phase]
}

// deadline is when the process moves on by itself (zero: never).
func (a *asd) deadline() time.Time {
	switch a.phase {
	case phaseDown:
		return a.downUntil
	case phaseJoining:
		return a.joinAt
	case phaseFailed:
		return a.retryAt
	case phaseLoading:
		if a.nextTick.Before(a.loadUntil) {
			return a.nextTick
		}
		return a.loadUntil
	}
	return time.Time{}
}

func (a *asd) seedStates() []SeedState {
	out := make([]SeedState, 0, len(a.seeds))
	for _, sd := range a.seeds {
		st := SeedState{Host: sd.host, Port: sd.port, Addrs: sd.addrs, State: "connecting"}
		switch {
		case sd.removed:
			st.State = "removed"
		case sd.addrs == nil:
			st.State = "unresolved"
		case sd.peer != nil:
			st.State = "connected"
		}
		out = append(out, st)
	}
	return out
}

// addSeed adds a seed unless the node holds one with that host and port (asd keys seeds so).
func (a *asd) addSeed(addr seedAddr) {
	for _, sd := range a.seeds {
		if sd.seedAddr == addr {
			return
		}
	}
	a.seeds = append(a.seeds, &seed{seedAddr: addr})
}

// listening: connections to the node's ports succeed (a hung asd still accepts them).
func (n *node) listening() bool { return !n.removed && n.asd.answering() }

// heartbeating: the node sends heartbeats, so the others hear it.
func (n *node) heartbeating() bool { return n.listening() && n.fault != FaultHang }

// linkKey identifies a pair of nodes, lower id first.
type linkKey struct{ lo, hi uint64 }

// link is what two nodes know of each other: once connected, they keep each other's address, and
// hear each other while both heartbeat.
type link struct {
	a, b    *node
	hearing bool
	since   time.Time     // when they stopped hearing each other
	delay   time.Duration // how long they still count each other after since
	// duplicate: they hear each other, but their node ids keep them apart (see duplicate).
	duplicate bool
}

func keyOf(a, b *node) linkKey {
	if a.id > b.id {
		a, b = b, a
	}
	return linkKey{a.id, b.id}
}

// adjacent: each still counts the other at t.
func (l *link) adjacent(t time.Time) bool { return l.hearing || t.Before(l.since.Add(l.delay)) }

// cluster is a group of nodes that agree on a key, and their partition map.
type cluster struct {
	members   []*node
	key       string
	changedAt time.Time
	view      *clusterView
	pending   []migration // in due order
	done      int         // pending[:done] are finished
}

// advance settles the simulation at every deadline up to now, in order, and returns now. Callers
// hold s.mu.
func (s *Sim) advance() time.Time {
	now := s.opts.Clock.Now()
	for {
		next, ok := s.nextDeadline(now)
		if !ok {
			s.migrate(now)
			return now
		}
		s.migrate(next)
		s.settle(next)
	}
}

// nextDeadline is the earliest deadline after the last settle and not after now.
func (s *Sim) nextDeadline(now time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	consider := func(d time.Time) {
		if d.After(s.settled) && !d.After(now) && (!found || d.Before(next)) {
			next, found = d, true
		}
	}
	for _, n := range s.nodes {
		consider(n.asd.deadline())
	}
	for _, l := range s.links {
		if !l.hearing {
			consider(l.since.Add(l.delay))
		}
	}
	return next, found
}

// settle brings the mesh and the clusters to their state at t (see the top of this file).
// Callers hold s.mu.
func (s *Sim) settle(t time.Time) {
	if t.Before(s.settled) {
		t = s.settled
	}
	s.settled = t
	nodes := s.sortedNodes()
	for _, n := range nodes {
		s.step(n, t)
	}
	for _, n := range nodes {
		if n.heartbeating() {
			s.trySeeds(n, t)
		}
	}
	s.linkSimple(nodes)
	s.discover(nodes)
	s.updateHearing(t)
	s.form(t)
	s.record(t, nodes)
}

func (s *Sim) sortedNodes() []*node {
	out := make([]*node, 0, len(s.nodes))
	for _, name := range slices.Sorted(maps.Keys(s.nodes)) {
		out = append(out, s.nodes[name])
	}
	return out
}

// step moves the node's asd on to where its deadlines put it at t.
func (s *Sim) step(n *node, t time.Time) {
	a := &n.asd
	switch {
	case a.phase == phaseDown && !a.downUntil.After(t):
		s.start(n, a.downUntil)
	case a.phase == phaseFailed && !a.retryAt.After(t):
		s.start(n, a.retryAt)
	case a.phase == phaseLoading:
		s.load(n, t)
	}
	joined := a.phase == phaseJoining && !a.joinAt.After(t)
	// A member the others forgot (it hung) is counted again once it heartbeats.
	back := a.phase == phaseActive && !n.counted && n.heartbeating()
	if joined || back {
		a.phase = phaseActive
		n.memberInc, n.counted = n.inc, true
	}
}

// start runs asd on the node's config: it refuses a config it cannot read, and otherwise listens
// and heartbeats at once, joining after JoinDelay.
func (s *Sim) start(n *node, at time.Time) {
	n.inc++
	text, simple, err := n.configText()
	host := s.podHost(n)
	conf := nodeConfig{hbPort: heartbeatPort}
	var live *liveConfig
	var warnings []string
	switch {
	case err != nil:
	case simple:
		conf.ident, err = host.identity(nil)
	default:
		conf, live, warnings, err = loadConfig(text, n.spec, host)
	}
	if err != nil {
		n.crashes++
		msg := "CRITICAL (config): " + err.Error()
		if p, isProblem := errors.AsType[conffile.Problem](err); isProblem {
			msg = p.LogLine() // the checks after the file's own name their log context
		}
		n.asd = asd{phase: phaseFailed, retryAt: at.Add(s.opts.CrashLoopBackoff), err: msg}
		n.logf(at, "%s", msg)
		return
	}
	a := asd{phase: phaseJoining, startedAt: at, joinAt: at.Add(s.opts.JoinDelay), simple: simple, conf: conf,
		live: live, namespaces: namespacesOf(live)}
	if !simple {
		a.configHash, a.loaded = config.Hash(text), live.clone()
	}
	for _, sd := range conf.seeds {
		a.addSeed(sd)
	}
	n.asd, n.ident = a, conf.ident
	for _, w := range warnings {
		n.logf(at, "%s", w)
	}
	n.data.Store(s.openStore(n))
	n.partGen.Store(-1)
	n.peersGen, n.peers = 0, map[string]*peer{}
	if s.startLoading(n, at) {
		return
	}
	n.logf(at, "INFO (as): service ready: soon there will be cake!")
}

// startLoading begins the cold start of the node's persistent namespaces when they hold records and
// reading them takes time (LoadRate): asd listens only once it has read them all, as in asd, where the
// info and service ports open after the storage is loaded.
func (s *Sim) startLoading(n *node, at time.Time) bool {
	rate := cmp.Or(n.spec.LoadRate, s.opts.LoadRate)
	a := &n.asd
	a.loading = map[string]int64{}
	var total int64
	objects := n.store().objects()
	for _, ns := range a.namespaces {
		if ns.persistent {
			a.loading[ns.name] = objects[ns.name]
			total += objects[ns.name]
		}
	}
	if rate <= 0 || total == 0 {
		return false
	}
	a.phase = phaseLoading
	a.loadUntil = at.Add(time.Duration(float64(total) / float64(rate) * float64(time.Second)))
	a.joinAt = a.loadUntil.Add(s.opts.JoinDelay)
	a.nextTick = at.Add(s.opts.LoadTick)
	for _, name := range slices.Sorted(maps.Keys(a.loading)) {
		n.logf(at, "INFO (namespace): {%s} beginning cold start", name)
	}
	return true
}

// load moves a cold start on to t: a ticker line per namespace at each tick, then, once every record
// is read, the end of the load and the ports open.
func (s *Sim) load(n *node, t time.Time) {
	a := &n.asd
	for !a.nextTick.After(t) && a.nextTick.Before(a.loadUntil) {
		done := float64(a.nextTick.Sub(a.startedAt)) / float64(a.loadUntil.Sub(a.startedAt))
		for _, name := range slices.Sorted(maps.Keys(a.loading)) {
			n.logf(a.nextTick, "INFO (drv_ssd): {%s} loaded: objects %d device-pcts (%d)", name,
				int64(done*float64(a.loading[name])), int(done*100))
		}
		a.nextTick = a.nextTick.Add(s.opts.LoadTick)
	}
	if a.loadUntil.After(t) {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(a.loading)) {
		n.logf(a.loadUntil, "INFO (drv_ssd): {%s} read complete: UNIQUE %d (REPLACED 0) (OLDER 0) (EXPIRED 0) (EVICTED 0) records",
			name, a.loading[name])
	}
	a.phase = phaseJoining
	n.logf(a.loadUntil, "INFO (as): service ready: soon there will be cake!")
}

// podHost is the node's pod as its asd finds it at start.
func (s *Sim) podHost(n *node) podHost {
	override, _ := parseNodeID(n.spec.NodeID)
	return podHost{ip: n.spec.IP, mac: n.mac, port: s.opts.Port, override: override, resolves: s.dns.resolves}
}

// configText is the config asd reads at start; simple is true for a node without one.
func (n *node) configText() (text string, simple bool, err error) {
	switch {
	case n.spec.ConfigFile != "":
		text, ok := n.files[n.spec.ConfigFile]
		if !ok {
			return "", false, fmt.Errorf("couldn't open configuration file %s: No such file or directory",
				n.spec.ConfigFile)
		}
		return text, false, nil
	case n.spec.Config != "":
		return n.spec.Config, false, nil
	}
	return "", true, nil
}

// trySeeds connects the seeds of n that lead nowhere yet.
func (s *Sim) trySeeds(n *node, t time.Time) {
	for _, sd := range n.asd.seeds {
		if sd.removed || (sd.peer != nil && !sd.peer.removed) {
			continue
		}
		sd.peer = nil
		if sd.addrs == nil {
			sd.addrs = s.dns.lookup(sd.host)
		}
		target := s.firstListening(sd.addrs, sd.port)
		switch {
		case target == nil:
		case target == n:
			sd.removed = true
			n.logf(t, "INFO (hb): removing self seed entry host:%s port:%d", sd.host, sd.port)
			n.logf(t, "INFO (hb): removed mesh seed host:%s port %d", sd.host, sd.port)
		case target.heartbeating():
			sd.peer = target
			s.link(n, target)
		}
	}
}

// firstListening is the node a connection to the first reachable of addrs reaches.
func (s *Sim) firstListening(addrs []string, port int) *node {
	for _, addr := range addrs {
		for _, n := range s.nodes {
			if n.spec.IP == addr && n.listening() && n.asd.conf.hbPort == port {
				return n
			}
		}
	}
	return nil
}

func (s *Sim) link(a, b *node) {
	if a == b {
		return
	}
	k := keyOf(a, b)
	if _, ok := s.links[k]; !ok {
		s.links[k] = &link{a: a, b: b}
	}
}

func (s *Sim) unlink(n *node) {
	for k, l := range s.links {
		if l.a == n || l.b == n {
			delete(s.links, k)
		}
	}
}

// linkSimple connects the simple nodes of each cluster name with each other.
func (s *Sim) linkSimple(nodes []*node) {
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if a.asd.simple && b.asd.simple && a.heartbeating() && b.heartbeating() && a.spec.Cluster == b.spec.Cluster {
				s.link(a, b)
			}
		}
	}
}

// hears: the link's nodes exchange heartbeats now.
func (s *Sim) hears(l *link) bool {
	a, b := l.a, l.b
	return a.heartbeating() && b.heartbeating() && a.clusterName() == b.clusterName() && !s.cut(a, b)
}

// discover lets everyone in a group of nodes that hear each other know everyone else, as asd's
// heartbeats publish each node's adjacency.
func (s *Sim) discover(nodes []*node) {
	u := newUnion()
	for _, l := range s.links {
		if s.hears(l) {
			u.join(l.a, l.b)
		}
	}
	for _, group := range u.groups(nodes) {
		for i, a := range group {
			for _, b := range group[i+1:] {
				s.link(a, b)
			}
		}
	}
}

func (s *Sim) updateHearing(t time.Time) {
	s.heard = s.heardIDs()
	for _, l := range s.links {
		h := s.hears(l) && !s.duplicate(l, s.heard, t)
		switch {
		case l.hearing && !h:
			l.hearing, l.since, l.delay = false, t, s.opts.DropDelay
			if l.a.fault == FaultHang || l.b.fault == FaultHang {
				l.delay = s.opts.HangDropDelay
			}
		case !l.hearing && h:
			l.hearing = true
		}
	}
}

// heardIDs counts, for each node, the nodes it hears under each node id.
func (s *Sim) heardIDs() map[*node]map[string]int {
	out := map[*node]map[string]int{}
	for _, l := range s.links {
		if !s.hears(l) {
			continue
		}
		for _, pair := range [][2]*node{{l.a, l.b}, {l.b, l.a}} {
			if out[pair[0]] == nil {
				out[pair[0]] = map[string]int{}
			}
			out[pair[0]][pair[1].ident.nodeID]++
		}
	}
	return out
}

// duplicate: the link's nodes hear each other, but their node ids keep them from counting each other
// (as/src/fabric/hb.c): a node ignores the heartbeats that carry its own node id
// (hb_channel_on_self_pulse), and a node that hears one node id from two nodes, whose fabric
// endpoints then keep changing, puts that id on probation (hb_adjacent_node_update, hb_channel_on_pulse).
// As a link becomes one, its nodes log asd's warnings.
func (s *Sim) duplicate(l *link, heard map[*node]map[string]int, t time.Time) bool {
	a, b := l.a, l.b
	same := a.ident.nodeID == b.ident.nodeID
	dup := same || heard[a][b.ident.nodeID] > 1 || heard[b][a.ident.nodeID] > 1
	if dup && !l.duplicate {
		for _, pair := range [][2]*node{{a, b}, {b, a}} {
			self, other := pair[0], pair[1]
			id := strings.ToLower(other.ident.nodeID)
			switch {
			case same:
				self.logf(t, "WARNING (hb): duplicate node-id: %s with fabric endpoints {%s}", id, other.ident.fabric)
			case heard[self][other.ident.nodeID] > 1 && l.hearing:
				self.logf(t, "WARNING (hb): node expired %s - potentially duplicate node-id", id)
			}
		}
	}
	l.duplicate = dup
	return dup
}

// form groups the counted nodes (members, and nodes the others still count) by adjacency into
// clusters. A new membership runs an exchange; one that cannot commit (stuckExchange) leaves its nodes
// in the cluster they had, frozen, or in none.
func (s *Sim) form(t time.Time) {
	var verts []*node
	before := map[*node]*cluster{}
	for _, n := range s.nodes {
		before[n], n.cluster, n.stuck = n.cluster, nil, nil
		if n.counted {
			verts = append(verts, n)
		}
	}
	verts = s.dropSuperseded(append(verts, slices.Collect(maps.Values(s.ghosts))...))
	slices.SortFunc(verts, func(a, b *node) int { return cmp.Compare(a.id, b.id) })
	u := newUnion()
	for _, l := range s.links {
		if l.a.counted && l.b.counted && l.adjacent(t) {
			u.join(l.a, l.b)
		}
	}
	clusters, stuck := map[string]*cluster{}, map[string]*stuckExchange{}
	for _, group := range u.groups(verts) {
		if !slices.ContainsFunc(group, func(n *node) bool { return n.heartbeating() && n.asd.phase == phaseActive }) {
			s.forget(group)
			continue
		}
		id := membership(group)
		c, kept := s.clusters[id]
		x, stays := s.stuck[id]
		switch {
		case kept:
		case stays:
		default:
			if x = s.exchange(group, t); x == nil {
				c = s.newCluster(group, t)
			}
		}
		if x != nil {
			stuck[id] = x
		} else {
			clusters[id] = c
		}
		for _, n := range group {
			if n.removed || n.asd.phase != phaseActive {
				continue
			}
			n.cluster, n.stuck = c, x
			if x != nil {
				n.cluster = before[n] // frozen: the last exchange it committed, if any
			}
		}
	}
	s.clusters, s.stuck = clusters, stuck
}

// dropSuperseded forgets the counted nodes that stopped (or hung) under a node id that another counted
// node runs with: the others' heartbeat entry for that id is the live node's now.
func (s *Sim) dropSuperseded(counted []*node) []*node {
	live := map[string]bool{}
	for _, n := range counted {
		if n.heartbeating() {
			live[n.ident.nodeID] = true
		}
	}
	return slices.DeleteFunc(counted, func(n *node) bool {
		if n.heartbeating() || !live[n.ident.nodeID] {
			return false
		}
		s.forget([]*node{n})
		return true
	})
}

// stuckExchange is the exchange of a membership whose nodes run a namespace with different
// replication factors (the configured ones, set-config included). asd checks it before it commits
// (as/src/fabric/exchange.c, exchange_data_pre_commit_repl_factor_check): every node logs "{test} has
// unmatched replication factors from 2 to 3" (lowest to highest) and "abandoned exchange - fix
// configuration conflict", once, and the exchange never commits. Its nodes stay where they were: one
// that had a cluster keeps that cluster's key, size and partition map, frozen (no migration moves,
// cluster-stable answers "unstable cluster" since migrations are not allowed, writes time out), one
// that had none (it just started) serves nothing. Changing a factor does not restart the exchange, nor
// does recluster: (the principal skips it, "redundant"); only a new membership does: a node of it
// stopping, or another joining. A real 8.1.2.0 cluster of three stayed so for good.
type stuckExchange struct {
	members []*node
	since   time.Time
}

// principal is the node the clustering elected for the stuck membership: its highest node id.
func (x *stuckExchange) principal() *node { return highestID(x.members) }

// exchange is the exchange of a new membership: nil when every node runs each namespace with the same
// replication-factor, else the stuck exchange, logged as asd logs it.
func (s *Sim) exchange(group []*node, t time.Time) *stuckExchange {
	for _, ns := range group[0].asd.namespaces {
		lo, hi := ns.rf, ns.rf
		for _, n := range group[1:] {
			if rf := factorOf(n.asd.namespaces, ns.name); rf != 0 {
				lo, hi = min(lo, rf), max(hi, rf)
			}
		}
		if lo == hi {
			continue
		}
		for _, n := range group {
			if n.removed || !n.listening() {
				continue
			}
			n.logf(t, "WARNING (exchange): {%s} has unmatched replication factors from %d to %d", ns.name, lo, hi)
			n.logf(t, "WARNING (exchange): abandoned exchange - fix configuration conflict")
		}
		return &stuckExchange{members: group, since: t}
	}
	return nil
}

// recluster is asd's recluster: (as/src/fabric/clustering.c, clustering_cluster_reform; the answers
// are cmd_recluster's in as/src/base/thr_info.c). A node that is not the principal (a member below the
// highest node id, a node in no cluster) answers "ignored-by-non-principal". The principal of a stuck
// exchange skips it, migrations not being allowed ("recluster: skipped - principal true redundant
// true ..."), and answers "ERROR::unknown". Otherwise the principal starts a new exchange of the same
// members with the values each runs now. Callers hold s.mu.
func (s *Sim) recluster(n *node, now time.Time) string {
	if x := n.stuck; x != nil {
		if x.principal() != n {
			return reclusterIgnored
		}
		n.logf(now, "INFO (clustering): recluster: skipped - principal true redundant true dead_nodes 0 faulty_nodes 0 new_nodes 0")
		return errRecluster
	}
	c := n.cluster
	if c == nil || c.principal() != n {
		return reclusterIgnored
	}
	if slices.ContainsFunc(c.members, func(m *node) bool { return !m.heartbeating() }) {
		n.logf(now, "INFO (clustering): recluster: skipped - principal true redundant false dead_nodes 1 faulty_nodes 0 new_nodes 0")
		return errRecluster
	}
	for id, other := range s.clusters {
		if other == c {
			delete(s.clusters, id)
		}
	}
	n.logf(now, "INFO (clustering): recluster: triggered...")
	s.settle(now)
	return answerOK
}

// principal is the member with the highest node id, first of asd's succession list.
func (c *cluster) principal() *node { return highestID(c.members) }

// highestID is the node with the highest node id.
func highestID(nodes []*node) *node {
	return slices.MaxFunc(nodes, func(a, b *node) int {
		if nodeIDAbove(a, b) {
			return 1
		}
		return -1
	})
}

// duplicateIDs answers cluster_duplicate_nodes (hb.c as_hb_info_duplicates_get): the node ids the
// node hears from two nodes, and its own if another node has it, highest first; "null" if none.
func (s *Sim) duplicateIDs(n *node) string {
	var ids []uint64
	for id, count := range s.heard[n] {
		if count > 1 || id == n.ident.nodeID {
			v, _ := parseNodeID(id)
			ids = append(ids, v)
		}
	}
	if len(ids) == 0 {
		return "null"
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = formatNodeID(id)
	}
	return strings.Join(out, ",")
}

// nodeIDAbove compares node ids as the hex numbers they are.
func nodeIDAbove(a, b *node) bool {
	x, _ := parseNodeID(a.ident.nodeID)
	y, _ := parseNodeID(b.ident.nodeID)
	return x > y
}

// forget: nobody counts these nodes any more.
func (s *Sim) forget(group []*node) {
	for _, n := range group {
		n.counted = false
		if n.removed {
			delete(s.ghosts, n.id)
			s.unlink(n)
		}
	}
}

func (s *Sim) newCluster(members []*node, t time.Time) *cluster {
	s.gen++
	c := &cluster{members: members, key: hexID("cluster/" + strconv.FormatUint(s.gen, 10)), changedAt: t,
		view: newView(s.gen, members)}
	for _, m := range members {
		m.partGen.Add(1)
		m.learnPeers(members)
	}
	c.pending = s.plan(c.view, t)
	s.history.cluster(t, c)
	return c
}

// membership names a group of counted nodes: each node with the incarnation that is counted.
func membership(group []*node) string {
	parts := make([]string, len(group))
	for i, n := range group {
		parts[i] = strconv.FormatUint(n.id, 10) + ":" + strconv.Itoa(n.memberInc)
	}
	return strings.Join(parts, ",")
}

// union is a disjoint-set of nodes.
type union map[*node]*node

func newUnion() union { return union{} }

func (u union) find(n *node) *node {
	for {
		p, ok := u[n]
		if !ok {
			return n
		}
		if gp, ok := u[p]; ok {
			u[n] = gp // halve the path
		}
		n = p
	}
}

func (u union) join(a, b *node) {
	if ra, rb := u.find(a), u.find(b); ra != rb {
		u[ra] = rb
	}
}

// groups partitions nodes (in their order) by set.
func (u union) groups(nodes []*node) [][]*node {
	index := map[*node]int{}
	var out [][]*node
	for _, n := range nodes {
		root := u.find(n)
		i, ok := index[root]
		if !ok {
			i = len(out)
			index[root] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], n)
	}
	return out
}
