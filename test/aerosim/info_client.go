package aerosim

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The data plane's fixtures: what a real asd 8.1.2.0 answered the v7 client (the shared facts'
// dataplane/ directory, copied with the manifest fixtures/aerospike-ce-8.1.2.0-dataplane.sha256).
const dataplaneRoot = "fixtures/aerospike-ce-8.1.2.0-dataplane"

// infoExchange is one entry of info/<node>.json.
type infoExchange struct {
	Name         string `json:"name"`
	RequestText  string `json:"request_text"`
	ResponseText string `json:"response_text"`
}

// loadClientAnswers reads the single node's answers (info/s0.json) by command.
func loadClientAnswers() (map[string]string, error) {
	data, err := fs.ReadFile(fixtureFS, dataplaneRoot+"/info/s0.json")
	if err != nil {
		return nil, err
	}
	var list []infoExchange
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("info/s0.json: %w", err)
	}
	out := map[string]string{}
	for _, e := range list {
		cmd, ok := strings.CutSuffix(e.RequestText, "\n")
		if !ok || strings.Contains(cmd, "\n") {
			continue
		}
		if _, value, ok := splitAnswer([]byte(e.ResponseText)); ok {
			out[cmd] = value
		}
	}
	return out, nil
}

// Static answers the client's commands get from every node, as the capture has them.
var clientStatic = []string{"features", "version", "edition", "partitions", "rebalance-generation",
	"peers-tls-std", "rack-ids", "bins"}

// clientAnswer answers the commands the v7 client sends to connect and tend (and truncate), from the
// node's cluster and partition map; ok is false for other commands. Callers hold s.mu.
func (s *Sim) clientAnswer(n *node, now time.Time, name, params, cmd string) (string, bool) {
	if slices.Contains(clientStatic, cmd) {
		return s.client[cmd], true
	}
	switch name {
	case "truncate", "truncate-namespace":
		return s.truncate(n, params), true
	case "namespaces":
		return strings.Join(n.namespaceNames(), ";"), true
	case "sets":
		return s.setsAnswer(n), true
	}
	if answer, ok := s.mapAnswer(n, cmd); ok {
		return answer, true
	}
	if ns, ok := strings.CutPrefix(cmd, "namespace/"); ok {
		return s.namespaceAnswer(n, ns, now)
	}
	return "", false
}

// mapAnswer answers the partition map and peer commands.
func (s *Sim) mapAnswer(n *node, cmd string) (string, bool) {
	v := n.view()
	switch cmd {
	case "partition-generation":
		if v == nil {
			return "-1", true
		}
		return strconv.FormatInt(n.partGen.Load(), 10), true
	case "peers-generation":
		return strconv.FormatInt(n.peersGen, 10), true
	case "peers-clear-std":
		return n.peersList(identity.clearStd), true
	case "peers-clear-alt":
		return n.peersList(identity.clearAlt), true
	case "service-clear-std":
		return n.ident.clearStd(), true
	case "service-clear-alt":
		return n.ident.clearAlt(), true
	case "service":
		return n.ident.serv(), true
	case "services":
		return n.services(true, identity.serv), true
	case "services-alternate":
		return n.services(true, identity.servAlt), true
	case "services-alumni":
		return n.services(false, identity.serv), true
	case "replicas", "replicas-all", "replicas-master":
		if v == nil {
			return "", true
		}
		positions := map[string]int{"replicas-master": 1}[cmd]
		return v.replicas(n, cmd == "replicas", positions), true
	}
	return "", false
}

func (n *node) view() *clusterView {
	if n.cluster == nil {
		return nil
	}
	return n.cluster.view
}

func (n *node) namespaceNames() []string {
	out := make([]string, len(n.asd.namespaces))
	for i, ns := range n.asd.namespaces {
		out[i] = ns.name
	}
	return out
}

// peer is a node of asd's service list (service_list.c): a member of the node's cluster (present), or
// one that was (an alumnus), with the addresses its asd sent.
type peer struct {
	present bool
	run     run // the peer's asd whose addresses this asd holds
	ident   identity
}

// run is one start of a node's asd.
type run struct {
	n   *node
	inc int
}

// learnPeers is asd's service list following a new cluster (handle_cluster_change and
// handle_fabric_message): peers-generation counts one for each node id that joins or leaves the
// other members, and one for each member whose running asd sent this one its addresses for the first
// time (a fresh asd on either side).
func (n *node) learnPeers(members []*node) {
	present := map[string]*node{}
	for _, m := range members {
		if m != n {
			present[m.ident.nodeID] = m
		}
	}
	for id, p := range n.peers {
		if p.present && present[id] == nil {
			p.present = false
			n.peersGen++
		}
	}
	for id, m := range present {
		p := n.peers[id]
		if p == nil {
			p = &peer{}
			n.peers[id] = p
		}
		if !p.present {
			p.present = true
			n.peersGen++
		}
		if r := (run{m, m.inc}); p.run != r {
			p.run, p.ident = r, m.ident
			n.peersGen++
		}
	}
}

// peerIdentities are the identities of the node's peers, by node id; presentOnly leaves out alumni.
func (n *node) peerIdentities(presentOnly bool) []identity {
	var out []identity
	for _, id := range slices.Sorted(maps.Keys(n.peers)) {
		if p := n.peers[id]; p.present || !presentOnly {
			out = append(out, p.ident)
		}
	}
	return out
}

// peersList answers peers-clear-std or peers-clear-alt (build_peers):
// <generation>,3000,[[<node id>,,[<address>,...]],...], over the present peers that have such
// addresses, each address without ":3000".
func (n *node) peersList(field func(identity) string) string {
	var items []string
	for _, p := range n.peerIdentities(true) {
		if v := field(p); v != "" {
			items = append(items, "["+p.nodeID+",,["+withoutDefaultPort(v)+"]]")
		}
	}
	return fmt.Sprintf("%d,%s,[%s]", n.peersGen, defaultPort, strings.Join(items, ","))
}

// services answers the deprecated services commands (build_services): the peers' addresses joined by ";".
func (n *node) services(presentOnly bool, field func(identity) string) string {
	var items []string
	for _, p := range n.peerIdentities(presentOnly) {
		if v := field(p); v != "" {
			items = append(items, v)
		}
	}
	return strings.Join(items, ";")
}

// namespaceAnswer is the fixture's namespace/test with this node's counts.
func (s *Sim) namespaceAnswer(n *node, ns string, now time.Time) (string, bool) {
	if !slices.Contains(n.namespaceNames(), ns) {
		return errNoNamespace, true
	}
	master, prole, other := n.objectsByRole(ns)
	f := s.facts(n, now)
	tmpl, ok := s.tmpl.lookup(n.spec.Profile, "namespace/"+ns)
	if !ok {
		tmpl = s.client["namespace/test"]
	}
	values := map[string]string{
		"ns_cluster_size":     strconv.Itoa(f.clusterSize),
		"objects":             strconv.FormatInt(master+prole+other, 10),
		"master_objects":      strconv.FormatInt(master, 10),
		"prole_objects":       strconv.FormatInt(prole, 10),
		"non_replica_objects": strconv.FormatInt(other, 10),
	}
	if n.asd.live != nil {
		// A node with a config: the factor it is configured with (set-config included), and the one
		// in effect since its cluster's last exchange.
		configured := factorOf(n.asd.namespaces, ns)
		effective := configured
		if v := n.view(); v != nil && v.ns[ns] != nil {
			effective = v.ns[ns].rf
		}
		values["replication-factor"] = strconv.Itoa(configured)
		values["effective_replication_factor"] = strconv.Itoa(effective)
	}
	return substitute(tmpl, values), true
}

// objectsByRole counts the node's records of ns in partitions it is master of, a replica of, or neither.
func (n *node) objectsByRole(ns string) (master, prole, other int64) {
	v := n.view()
	st := n.store()
	for pid := range nPartitions {
		c := st.copyOf(ns, pid)
		if c == nil {
			continue
		}
		count := int64(c.len())
		switch pos := position(v, ns, pid, n); {
		case pos == 0:
			master += count
		case pos > 0:
			prole += count
		default:
			other += count
		}
	}
	return master, prole, other
}

// position is n's index in the partition's replica list, or -1.
func position(v *clusterView, ns string, pid int, n *node) int {
	if v == nil || v.ns[ns] == nil {
		return -1
	}
	return slices.Index(v.ns[ns].reps[pid], n)
}

// setsAnswer lists the sets of the node's records in the fixture's format.
func (s *Sim) setsAnswer(n *node) string {
	st := n.store()
	items := make([]string, 0, len(n.asd.namespaces))
	for _, ns := range n.namespaceNames() {
		counts := map[string]int{}
		for pid := range nPartitions {
			if c := st.copyOf(ns, pid); c != nil {
				c.countSets(counts)
			}
		}
		for _, set := range slices.Sorted(maps.Keys(counts)) {
			items = append(items, fmt.Sprintf("ns=%s:set=%s:objects=%d:tombstones=0:truncate_lut=0", ns, set, counts[set]))
		}
	}
	return strings.Join(items, ";")
}

func (c *pcopy) countSets(counts map[string]int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, r := range c.recs {
		if r.set != "" {
			counts[r.set]++
		}
	}
}

// truncate answers truncate:namespace=N[;set=S] and truncate-namespace:namespace=N: asd spreads a
// truncate to the whole cluster (SMD), so every member's copies drop the records.
func (s *Sim) truncate(n *node, params string) string {
	var ns, set string
	for item := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(item, "=")
		switch k {
		case "namespace":
			ns = v
		case "set":
			set = v
		}
	}
	if !slices.Contains(n.namespaceNames(), ns) {
		return errNoNamespace
	}
	members := []*node{n}
	if n.cluster != nil {
		members = n.cluster.members
	}
	for _, m := range members {
		for pid := range nPartitions {
			if c := m.store().copyOf(ns, pid); c != nil {
				c.truncate(set)
			}
		}
	}
	return "ok"
}

func (c *pcopy) truncate(set string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d, r := range c.recs {
		if set == "" || r.set == set {
			delete(c.recs, d)
		}
	}
}
