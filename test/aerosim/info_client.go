package aerosim

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net"
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
	"service-clear-alt", "services-alternate", "peers-tls-std", "rack-ids", "bins"}

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
	case "peers-clear-std", "peers-clear-alt":
		return s.peers(n, cmd == "peers-clear-std"), true
	case "service-clear-std":
		return net.JoinHostPort(n.spec.IP, strconv.Itoa(s.opts.Port)), true
	case "services", "services-alumni":
		return strings.Join(s.peerAddrs(n), ";"), true
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

// otherMembers are the node's cluster's other members, by node id.
func (s *Sim) otherMembers(n *node) []*node {
	if n.cluster == nil {
		return nil
	}
	out := make([]*node, 0, len(n.cluster.members))
	for _, m := range n.cluster.members {
		if m != n && !m.removed {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *node) int { return strings.Compare(a.spec.NodeID, b.spec.NodeID) })
	return out
}

// peers answers peers-clear-std: generation,default port,[[id,,[ip]],...] (the alternate list is empty).
func (s *Sim) peers(n *node, std bool) string {
	var items []string
	if std {
		for _, m := range s.otherMembers(n) {
			items = append(items, "["+m.spec.NodeID+",,["+m.spec.IP+"]]")
		}
	}
	return fmt.Sprintf("%d,%d,[%s]", n.peersGen, s.opts.Port, strings.Join(items, ","))
}

func (s *Sim) peerAddrs(n *node) []string {
	members := s.otherMembers(n)
	out := make([]string, 0, len(members))
	for _, m := range members {
		out = append(out, net.JoinHostPort(m.spec.IP, strconv.Itoa(s.opts.Port)))
	}
	return out
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
