package aerosim

import (
	"encoding/base64"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// nPartitions is asd's partition count per namespace.
const nPartitions = 4096

// Simple nodes (no config) run one namespace like the fixtures' clusters: test, replication-factor 2,
// in memory.
const (
	simpleNamespace = "test"
	simpleRF        = 2
)

// nsConfig is what the data plane needs of a namespace of a node's config.
type nsConfig struct {
	name       string
	rf         int
	persistent bool // storage-engine device or file: records survive an asd restart
}

// namespacesOf reads the namespaces of a running config.
func namespacesOf(live *liveConfig) []nsConfig {
	if live == nil {
		return []nsConfig{{name: simpleNamespace, rf: simpleRF}}
	}
	out := make([]nsConfig, 0, len(live.namespaces))
	for _, ns := range live.namespaces {
		rf, err := strconv.Atoi(live.contexts[namespaceKey(ns)].vals["replication-factor"])
		if err != nil || rf < 1 {
			rf = simpleRF
		}
		engine := live.engines[ns]
		out = append(out, nsConfig{name: ns, rf: rf, persistent: engine == "device" || engine == "file"})
	}
	return out
}

// factorOf is the node's replication-factor of a namespace (0 when it has none).
func factorOf(list []nsConfig, name string) int {
	for _, ns := range list {
		if ns.name == name {
			return ns.rf
		}
	}
	return 0
}

// clusterView is a cluster's partition map: every member computes the same one from the member list.
type clusterView struct {
	gen     uint64 // the formation: copies that are in sync in this cluster carry it as their version
	members []*node
	ns      map[string]*nsView
}

type nsView struct {
	name string
	rf   int       // copies per partition: min(replication-factor, members running the namespace)
	reps [][]*node // per partition, master first
	// locks serialize the writes to a partition, so that every copy applies them in one order.
	locks []sync.Mutex
}

// newView computes the partition map of members. Callers hold s.mu.
func newView(gen uint64, members []*node) *clusterView {
	v := &clusterView{gen: gen, members: members, ns: map[string]*nsView{}}
	eligible := map[string][]*node{}
	rfs := map[string]int{}
	for _, m := range members {
		for _, ns := range m.asd.namespaces {
			eligible[ns.name] = append(eligible[ns.name], m)
			rfs[ns.name] = ns.rf
		}
	}
	for name, nodes := range eligible {
		v.ns[name] = newNSView(name, min(rfs[name], len(nodes)), nodes)
	}
	return v
}

func newNSView(name string, rf int, nodes []*node) *nsView {
	nv := &nsView{name: name, rf: rf, reps: make([][]*node, nPartitions), locks: make([]sync.Mutex, nPartitions)}
	bases := make([]uint64, len(nodes))
	for i, n := range nodes {
		bases[i] = nodeHash(n.ident.nodeID)
	}
	order := make([]int, len(nodes))
	scores := make([]uint64, len(nodes))
	for p := range nPartitions {
		for i := range nodes {
			order[i], scores[i] = i, mix(bases[i]^uint64(p+1)*0x9E3779B97F4A7C15)
		}
		slices.SortFunc(order, func(a, b int) int { return compareDesc(scores[a], scores[b]) })
		reps := make([]*node, rf)
		for i := range rf {
			reps[i] = nodes[order[i]]
		}
		nv.reps[p] = reps
	}
	return nv
}

func compareDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func nodeHash(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
}

// mix is splitmix64's finalizer: the rendezvous score of a (node, partition) pair.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

// partitionID is the client's rule (Key.PartitionId): the digest's first bytes little-endian, mod 4096.
func partitionID(digest []byte) int {
	return (int(digest[0]) | int(digest[1])<<8) & (nPartitions - 1)
}

// bitmap is the base64 of the 4096-bit map of the partitions where n holds replica position pos
// (bit p = byte p>>3, mask 0x80>>(p&7)).
func (nv *nsView) bitmap(n *node, pos int) string {
	bits := make([]byte, nPartitions/8)
	for p, reps := range nv.reps {
		if pos < len(reps) && reps[pos] == n {
			bits[p>>3] |= 0x80 >> (p & 7)
		}
	}
	return base64.StdEncoding.EncodeToString(bits)
}

// replicas answers "replicas": ns:regime,count,<bitmap per position>;...
func (v *clusterView) replicas(n *node, withRegime bool, positions int) string {
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range v.ns {
			if !yield(name) {
				return
			}
		}
	})
	items := make([]string, 0, len(names))
	for _, name := range names {
		nv := v.ns[name]
		count := nv.rf
		if positions > 0 {
			count = min(count, positions)
		}
		parts := make([]string, 0, count+2)
		if withRegime {
			parts = append(parts, "0")
		}
		if positions == 0 {
			parts = append(parts, strconv.Itoa(nv.rf))
		}
		for pos := range count {
			parts = append(parts, nv.bitmap(n, pos))
		}
		items = append(items, name+":"+strings.Join(parts, ","))
	}
	return strings.Join(items, ";")
}
