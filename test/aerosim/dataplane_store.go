package aerosim

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type digest [20]byte

// bin is one bin of a record, in the order asd keeps them (the order they were first written).
type bin struct {
	name     string
	particle byte
	value    []byte
}

// record is immutable once stored: a write stores a new one, so copies on several nodes share it.
type record struct {
	set        string
	generation uint32
	lut        int64 // last-update time, ns
	bins       []bin
}

// newer: the record that wins a merge (higher generation, then later last-update time, asd's default).
func (r *record) newer(o *record) bool {
	if r.generation != o.generation {
		return r.generation > o.generation
	}
	return r.lut > o.lut
}

// pcopy is a node's copy of one partition. complete is false while a migration fills it.
type pcopy struct {
	mu       sync.RWMutex
	recs     map[digest]*record
	complete bool
	version  uint64 // the cluster formation it was last in sync in
}

func newCopy(complete bool, version uint64) *pcopy {
	return &pcopy{recs: map[digest]*record{}, complete: complete, version: version}
}

func (c *pcopy) get(d digest) (*record, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.recs[d]
	return r, ok
}

func (c *pcopy) put(d digest, r *record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r == nil {
		delete(c.recs, d)
		return
	}
	c.recs[d] = r
}

func (c *pcopy) state() (complete bool, version uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.complete, c.version
}

func (c *pcopy) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.recs)
}

// mergeInto adds c's records to into where they win.
func (c *pcopy) mergeInto(into map[digest]*record) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for d, r := range c.recs {
		if o, ok := into[d]; !ok || r.newer(o) {
			into[d] = r
		}
	}
}

// fill makes c a complete copy holding recs, in sync at version.
func (c *pcopy) fill(recs map[digest]*record, version uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = make(map[digest]*record, len(recs))
	for d, r := range recs {
		c.recs[d] = r
	}
	c.complete, c.version = true, version
}

// nsStore is a node's copies of a namespace's partitions (nil: no copy).
type nsStore struct {
	parts [nPartitions]atomic.Pointer[pcopy]
}

// store is what a running asd holds: its namespaces' partitions. The map is fixed at start.
type store struct {
	ns map[string]*nsStore
}

var emptyStore = &store{}

func (st *store) copyOf(ns string, pid int) *pcopy {
	if nss := st.ns[ns]; nss != nil {
		return nss.parts[pid].Load()
	}
	return nil
}

func (st *store) setCopy(ns string, pid int, c *pcopy) {
	if nss := st.ns[ns]; nss != nil {
		nss.parts[pid].Store(c)
	}
}

// objects counts the records of each namespace the node holds, in any copy.
func (st *store) objects() map[string]int64 {
	out := map[string]int64{}
	for name, nss := range st.ns {
		var total int64
		for i := range nss.parts {
			if c := nss.parts[i].Load(); c != nil {
				total += int64(c.len())
			}
		}
		out[name] = total
	}
	return out
}

// diskKey names where a node's persistent namespaces live: its volume, or (without one) the pod.
func (n *node) diskKey() string {
	if n.spec.Volume != "" {
		return "volume/" + n.spec.Volume
	}
	return "pod/" + strconv.FormatUint(n.id, 10)
}

// eraseVolumes drops the records kept on the volumes. Callers hold s.mu.
func (s *Sim) eraseVolumes(volumes []string) {
	for key := range s.disks {
		list, ok := strings.CutPrefix(key, "volume/")
		if ok && slices.ContainsFunc(strings.Split(list, ","), func(v string) bool { return slices.Contains(volumes, v) }) {
			delete(s.disks, key)
		}
	}
}

// openStore is the store an asd starts with: memory namespaces empty, persistent ones as they were on
// the node's disk. Callers hold s.mu.
func (s *Sim) openStore(n *node) *store {
	st := &store{ns: map[string]*nsStore{}}
	disk := s.disks[n.diskKey()]
	for _, ns := range n.asd.namespaces {
		if !ns.persistent {
			st.ns[ns.name] = &nsStore{}
			continue
		}
		if disk == nil {
			disk = map[string]*nsStore{}
			s.disks[n.diskKey()] = disk
		}
		if disk[ns.name] == nil {
			disk[ns.name] = &nsStore{}
		}
		st.ns[ns.name] = disk[ns.name]
	}
	return st
}

// migration fills the copies a cluster's new partition map gives to nodes that lack them.
type migration struct {
	ns    string
	pid   int
	dests []*node
	// involved are the nodes that send or receive: their migrate_partitions_remaining counts it.
	involved []*node
	due      time.Time
}

// plan brings every partition of the view to its replicas: copies in sync stay, others migrate;
// a partition no member holds starts empty on its replicas. Callers hold s.mu.
func (s *Sim) plan(v *clusterView, t time.Time) []migration {
	var out []migration
	for name, nv := range v.ns {
		for pid := range nPartitions {
			if m, ok := planPartition(v, nv, name, pid); ok {
				out = append(out, m)
			}
		}
	}
	for i := range out {
		out[i].due = t.Add(s.opts.MigrationDuration * time.Duration(i+1) / time.Duration(len(out)))
	}
	return out
}

func planPartition(v *clusterView, nv *nsView, ns string, pid int) (migration, bool) {
	var sources []*node
	versions := map[uint64]bool{}
	for _, m := range v.members {
		if c := m.store().copyOf(ns, pid); c != nil {
			if complete, version := c.state(); complete {
				sources = append(sources, m)
				versions[version] = true
			}
		}
	}
	reps := nv.reps[pid]
	if len(sources) == 0 {
		for _, r := range reps {
			r.store().setCopy(ns, pid, newCopy(true, v.gen))
		}
		return migration{}, false
	}
	mig := migration{ns: ns, pid: pid, involved: sources}
	for _, r := range reps {
		c := r.store().copyOf(ns, pid)
		if c == nil {
			c = newCopy(false, 0)
			r.store().setCopy(ns, pid, c)
		}
		if complete, _ := c.state(); complete && len(versions) == 1 {
			c.mu.Lock()
			c.version = v.gen
			c.mu.Unlock()
			continue
		}
		mig.dests = append(mig.dests, r)
		mig.involved = appendNew(mig.involved, r)
	}
	if len(mig.dests) == 0 {
		dropNonReplicas(v, ns, pid, reps)
		return migration{}, false
	}
	return mig, true
}

func appendNew(list []*node, n *node) []*node {
	for _, m := range list {
		if m == n {
			return list
		}
	}
	return append(list, n)
}

// finish completes a migration: each destination gets the merge of every complete copy the cluster
// still holds (a source that restarted meanwhile lost its copy), and copies off the replicas go.
func (v *clusterView) finish(m migration) {
	nv := v.ns[m.ns]
	nv.locks[m.pid].Lock()
	defer nv.locks[m.pid].Unlock()
	merged := map[digest]*record{}
	for _, member := range v.members {
		if c := member.store().copyOf(m.ns, m.pid); c != nil {
			if complete, _ := c.state(); complete || isIn(m.dests, member) {
				c.mergeInto(merged)
			}
		}
	}
	for _, d := range m.dests {
		if c := d.store().copyOf(m.ns, m.pid); c != nil {
			c.fill(merged, v.gen)
			d.partGen.Add(1)
		}
	}
	dropNonReplicas(v, m.ns, m.pid, nv.reps[m.pid])
}

func isIn(list []*node, n *node) bool {
	for _, m := range list {
		if m == n {
			return true
		}
	}
	return false
}

// dropNonReplicas removes the copies members hold off the partition's replicas.
func dropNonReplicas(v *clusterView, ns string, pid int, reps []*node) {
	for _, m := range v.members {
		if !isIn(reps, m) && m.store().copyOf(ns, pid) != nil {
			m.store().setCopy(ns, pid, nil)
			m.partGen.Add(1)
		}
	}
}

// migrate finishes the migrations of every cluster due by t. Callers hold s.mu.
func (s *Sim) migrate(t time.Time) {
	for _, c := range s.clusters {
		for c.done < len(c.pending) && !c.pending[c.done].due.After(t) {
			c.view.finish(c.pending[c.done])
			c.done++
		}
	}
}

// migrationsOf counts the partitions n still sends or receives in its cluster.
func (c *cluster) migrationsOf(n *node) int64 {
	var left int64
	for _, m := range c.pending[c.done:] {
		if isIn(m.involved, n) {
			left++
		}
	}
	return left
}
