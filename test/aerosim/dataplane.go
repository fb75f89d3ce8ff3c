package aerosim

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// Result codes asd answers (dataplane fixtures README, "Result codes seen"; the others are the
// client's names for asd's codes).
const (
	rcOK               = 0
	rcKeyNotFound      = 2
	rcGeneration       = 3
	rcParameter        = 4
	rcKeyExists        = 5
	rcPartitionUnavail = 11
	rcBinType          = 12
	rcRecordTooBig     = 13
	rcInvalidNamespace = 20
	// maxRecordSize is max-record-size's default (get-config: 1048576).
	maxRecordSize = 1 << 20
	maxGeneration = 0xFFFF // asd's generation is 16 bits and wraps to 1
)

// request is one record command as asd executes it.
type request struct {
	msgHeader
	ns, set string
	digest  digest
	ops     []op
}

// answer is a record command's result: the header and the bins it returns.
type answer struct {
	rc         byte
	generation uint32
	ops        []op
}

// execute answers one AS_MSG on a node running namespaces whose cluster has view v (nil while the
// node is not a member).
func (s *Sim) execute(namespaces []nsConfig, v *clusterView, m *message) []byte {
	w := newWriter()
	ns, _ := m.field(fieldNamespace)
	nv, rc := namespaceView(namespaces, v, string(ns))
	_, hasDigest := m.field(fieldDigest)
	switch {
	case rc != rcOK && m.info1&info1Batch == 0:
		w.single(msgHeader{resultCode: rc}, nil)
	case m.info1&info1Batch != 0:
		s.batch(namespaces, v, m, w)
	case !hasDigest:
		scan(v, nv, m, w)
	default:
		req, ok := newRequest(m)
		if !ok {
			w.single(msgHeader{resultCode: rcParameter}, nil)
			break
		}
		a := s.command(v, nv, req)
		w.single(msgHeader{resultCode: a.rc, generation: a.generation}, a.ops)
	}
	return w.bytes()
}

// namespaceView is the namespace's partition map, or the code asd answers without one.
func namespaceView(namespaces []nsConfig, v *clusterView, ns string) (*nsView, byte) {
	runs := slices.ContainsFunc(namespaces, func(c nsConfig) bool { return c.name == ns })
	switch {
	case !runs:
		return nil, rcInvalidNamespace
	case v == nil || v.ns[ns] == nil:
		return nil, rcPartitionUnavail
	}
	return v.ns[ns], rcOK
}

func newRequest(m *message) (request, bool) {
	ns, _ := m.field(fieldNamespace)
	set, _ := m.field(fieldSet)
	d, ok := m.field(fieldDigest)
	if !ok || len(d) != len(digest{}) {
		return request{}, false
	}
	return request{msgHeader: m.msgHeader, ns: string(ns), set: string(set), digest: digest(d), ops: m.ops}, true
}

// command runs one single-record command.
func (s *Sim) command(v *clusterView, nv *nsView, req request) answer {
	pid := partitionID(req.digest[:])
	if req.info2&(info2Write|info2Delete) == 0 {
		return readAnswer(req, v.lookup(nv.name, pid, req.digest))
	}
	nv.locks[pid].Lock()
	defer nv.locks[pid].Unlock()
	old := v.lookup(nv.name, pid, req.digest)
	if rc := checkWrite(req, old); rc != rcOK {
		return answer{rc: rc, generation: generationOf(old)}
	}
	if req.info2&info2Delete != 0 {
		v.storeAll(nv.name, pid, req.digest, nil)
		return answer{}
	}
	rec, a := applyOps(req, old, s.opts.Clock.Now().UnixNano())
	if a.rc != rcOK {
		return answer{rc: a.rc, generation: generationOf(old)}
	}
	v.storeAll(nv.name, pid, req.digest, rec)
	a.generation = rec.generation
	return a
}

func generationOf(r *record) uint32 {
	if r == nil {
		return 0
	}
	return r.generation
}

// checkWrite applies the write policy's conditions to the record as it is.
func checkWrite(req request, old *record) byte {
	switch {
	case old == nil && (req.info2&info2Delete != 0 || req.info3&(info3UpdateOnly|info3ReplaceOnly) != 0):
		return rcKeyNotFound
	case old == nil && onlyTouches(req.ops):
		return rcKeyNotFound
	case old != nil && req.info2&info2CreateOnly != 0:
		return rcKeyExists
	case req.info2&info2Generation != 0 && generationOf(old) != req.generation:
		return rcGeneration
	case req.info2&info2GenerationGT != 0 && old != nil && req.generation <= old.generation:
		return rcGeneration
	}
	return rcOK
}

func onlyTouches(ops []op) bool {
	return len(ops) > 0 && !slices.ContainsFunc(ops, func(o op) bool { return o.op != opTouch })
}

// readAnswer is what a read of rec returns: its generation and the bins asked for.
func readAnswer(req request, rec *record) answer {
	if rec == nil {
		return answer{rc: rcKeyNotFound}
	}
	a := answer{generation: rec.generation}
	if req.info1&info1NoBinData != 0 {
		return a
	}
	if req.info1&info1GetAll != 0 {
		a.ops = allBins(rec.bins)
		return a
	}
	for _, o := range req.ops {
		if o.op != opRead {
			return answer{rc: rcParameter, generation: rec.generation} // e.g. a CDT read: not simulated
		}
		a.ops = append(a.ops, readOp(rec.bins, o)...)
	}
	return a
}

func allBins(bins []bin) []op {
	out := make([]op, len(bins))
	for i, b := range bins {
		out[i] = op{op: opRead, particle: b.particle, name: b.name, value: b.value}
	}
	return out
}

// readOp answers a READ op: a named bin (nothing if absent), or every bin when it names none.
func readOp(bins []bin, o op) []op {
	if o.name == "" {
		return allBins(bins)
	}
	if i := binIndex(bins, o.name); i >= 0 {
		return allBins(bins[i : i+1])
	}
	return nil
}

func binIndex(bins []bin, name string) int {
	return slices.IndexFunc(bins, func(b bin) bool { return b.name == name })
}

// applyOps runs a write's ops in order on the record as it is and returns the new record.
func applyOps(req request, old *record, now int64) (*record, answer) {
	rec := &record{set: req.set, generation: 1, lut: now}
	replace := req.info3&(info3CreateOrReplace|info3ReplaceOnly) != 0
	if old != nil {
		rec.generation = old.generation%maxGeneration + 1
		if !replace {
			rec.bins = slices.Clone(old.bins)
		}
		if req.set == "" {
			rec.set = old.set
		}
	}
	var a answer
	for _, o := range req.ops {
		if o.op == opRead {
			a.ops = append(a.ops, readOp(rec.bins, o)...)
			continue
		}
		if rc := applyOp(rec, o); rc != rcOK {
			return nil, answer{rc: rc}
		}
	}
	if req.info1&info1GetAll != 0 {
		a.ops = allBins(rec.bins)
	}
	if size(rec.bins) > maxRecordSize {
		return nil, answer{rc: rcRecordTooBig}
	}
	return rec, a
}

func size(bins []bin) int {
	total := 0
	for _, b := range bins {
		total += len(b.name) + len(b.value)
	}
	return total
}

// applyOp changes rec's bins by one write op.
func applyOp(rec *record, o op) byte {
	i := binIndex(rec.bins, o.name)
	switch o.op {
	case opTouch:
		return rcOK
	case opWrite:
		if o.particle == particleNull {
			if i >= 0 {
				rec.bins = slices.Delete(rec.bins, i, i+1)
			}
			return rcOK
		}
		setBin(rec, i, bin{name: o.name, particle: o.particle, value: slices.Clone(o.value)})
		return rcOK
	case opAdd, opAppend, opPrepend:
		if i < 0 {
			setBin(rec, i, bin{name: o.name, particle: o.particle, value: slices.Clone(o.value)})
			return rcOK
		}
		b, rc := combine(rec.bins[i], o)
		if rc == rcOK {
			rec.bins[i] = b
		}
		return rc
	}
	return rcParameter
}

func setBin(rec *record, i int, b bin) {
	if i >= 0 {
		rec.bins[i] = b
		return
	}
	rec.bins = append(rec.bins, b)
}

// combine is ADD of integers, APPEND or PREPEND of strings and blobs.
func combine(b bin, o op) (bin, byte) {
	if b.particle != o.particle {
		return b, rcBinType
	}
	switch {
	case o.op == opAdd && b.particle == particleInteger && len(o.value) == 8 && len(b.value) == 8:
		sum := binary.BigEndian.Uint64(b.value) + binary.BigEndian.Uint64(o.value)
		b.value = binary.BigEndian.AppendUint64(nil, sum)
	case o.op == opAppend && b.particle != particleInteger && b.particle != particleFloat:
		b.value = bytes.Join([][]byte{b.value, o.value}, nil)
	case o.op == opPrepend && b.particle != particleInteger && b.particle != particleFloat:
		b.value = bytes.Join([][]byte{o.value, b.value}, nil)
	default:
		return b, rcBinType
	}
	return b, rcOK
}

// lookup reads a record the way the cluster serves it: from any member holding a complete copy of
// the partition (asd proxies to, or duplicate-resolves with, the node that has it); the newest wins.
func (v *clusterView) lookup(ns string, pid int, d digest) *record {
	var best *record
	for _, m := range v.members {
		c := m.store().copyOf(ns, pid)
		if c == nil {
			continue
		}
		if complete, _ := c.state(); !complete {
			continue
		}
		if r, ok := c.get(d); ok && (best == nil || r.newer(best)) {
			best = r
		}
	}
	return best
}

// storeAll writes a record (nil: deletes it) to every copy of the partition the cluster holds: the
// replicas, including those a migration is filling, and a migration's sources.
func (v *clusterView) storeAll(ns string, pid int, d digest, rec *record) {
	for _, m := range v.members {
		if c := m.store().copyOf(ns, pid); c != nil {
			c.put(d, rec)
		}
	}
}
