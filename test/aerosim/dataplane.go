package aerosim

import (
	"bytes"
	"encoding/binary"
	"slices"
	"time"
)

// Result codes asd answers (dataplane fixtures README, "Result codes seen"; the others are the
// client's names for asd's codes).
const (
	rcOK               = 0
	rcKeyNotFound      = 2
	rcGeneration       = 3
	rcParameter        = 4
	rcKeyExists        = 5
	rcTimeout          = 9
	rcPartitionUnavail = 11
	rcBinType          = 12
	rcRecordTooBig     = 13
	rcInvalidNamespace = 20
	// maxRecordSize is max-record-size's default (get-config: 1048576).
	maxRecordSize = 1 << 20
	maxGeneration = 0xFFFF // asd's generation is 16 bits and wraps to 1
	// transactionMaxMS is transaction-max-ms's default (get-config): the deadline of a request whose
	// header gives none.
	transactionMaxMS = 1000
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
	// stalled: the command waits for a hung node until its deadline, when asd answers rc 9.
	stalled bool
}

var timedOut = answer{rc: rcTimeout, stalled: true}

// execute answers one AS_MSG on a node running namespaces whose cluster has view v (nil while the
// node is not a member) and hung members; stalled: the answer is sent at the request's deadline.
func (s *Sim) execute(namespaces []nsConfig, v *clusterView, hung []*node, m *message) (body []byte, stalled bool) {
	w := newWriter()
	ns, _ := m.field(fieldNamespace)
	nv, rc := namespaceView(namespaces, v, string(ns))
	_, hasDigest := m.field(fieldDigest)
	switch {
	case rc != rcOK && m.info1&info1Batch == 0:
		w.single(msgHeader{resultCode: rc}, nil)
	case m.info1&info1Batch != 0:
		stalled = s.batch(namespaces, v, hung, m, w)
	case !hasDigest:
		scan(v, nv, m, w)
	default:
		req, ok := newRequest(m)
		if !ok {
			w.single(msgHeader{resultCode: rcParameter}, nil)
			break
		}
		a := s.command(v, nv, hung, req)
		stalled = a.stalled
		w.single(msgHeader{resultCode: a.rc, generation: a.generation}, a.ops)
	}
	return w.bytes(), stalled
}

// deadline is how long asd lets a request wait: the timeout its header gives (the client's time left).
func transactionDeadline(m *message) time.Duration {
	if m.timeout == 0 {
		return transactionMaxMS * time.Millisecond
	}
	return time.Duration(m.timeout) * time.Millisecond
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

// command runs one single-record command. A hung member (a stopped asd) applies nothing and never
// answers: a command that needs it waits until its deadline, as asd's does (write.c, write_timeout_cb:
// rc 9). A write whose master is hung, or that only a hung member's copy could resolve, is applied
// nowhere; one whose master is live is applied to the live copies first (asd's write_master runs
// before the replica writes), then waits for the hung replica's ack that never comes.
func (s *Sim) command(v *clusterView, nv *nsView, hung []*node, req request) answer {
	pid := partitionID(req.digest[:])
	if req.info2&(info2Write|info2Delete) == 0 {
		rec, stalled := v.lookup(nv.name, pid, req.digest, hung)
		if stalled {
			return timedOut
		}
		return readAnswer(req, rec)
	}
	nv.locks[pid].Lock()
	defer nv.locks[pid].Unlock()
	old, stalled := v.lookup(nv.name, pid, req.digest, hung)
	if stalled || isIn(hung, nv.reps[pid][0]) {
		return timedOut
	}
	if rc := checkWrite(req, old); rc != rcOK {
		return answer{rc: rc, generation: generationOf(old)}
	}
	var a answer
	if req.info2&info2Delete != 0 {
		v.storeAll(nv.name, pid, req.digest, nil, hung)
	} else {
		var rec *record
		if rec, a = applyOps(req, old, s.opts.Clock.Now().UnixNano()); a.rc != rcOK {
			return answer{rc: a.rc, generation: generationOf(old)}
		}
		v.storeAll(nv.name, pid, req.digest, rec, hung)
		a.generation = rec.generation
	}
	if slices.ContainsFunc(nv.reps[pid], func(r *node) bool { return isIn(hung, r) }) {
		return timedOut
	}
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

// lookup reads a record the way the cluster serves it: from any live member holding a complete copy
// of the partition (asd proxies to, or duplicate-resolves with, the node that has it); the newest
// wins. stalled: only hung members hold one, so asd would wait for them.
func (v *clusterView) lookup(ns string, pid int, d digest, hung []*node) (best *record, stalled bool) {
	served := false
	for _, m := range v.members {
		c := m.store().copyOf(ns, pid)
		if c == nil {
			continue
		}
		if complete, _ := c.state(); !complete {
			continue
		}
		if isIn(hung, m) {
			stalled = true
			continue
		}
		served = true
		if r, ok := c.get(d); ok && (best == nil || r.newer(best)) {
			best = r
		}
	}
	return best, stalled && !served
}

// storeAll writes a record (nil: deletes it) to every copy of the partition the cluster's live
// members hold: the replicas, including those a migration is filling, and a migration's sources.
func (v *clusterView) storeAll(ns string, pid int, d digest, rec *record, hung []*node) {
	for _, m := range v.members {
		if c := m.store().copyOf(ns, pid); c != nil && !isIn(hung, m) {
			c.put(d, rec)
		}
	}
}

// hungMembers are the members that hang (FaultHang) now. Callers hold s.mu.
func (v *clusterView) hungMembers() []*node {
	if v == nil {
		return nil
	}
	var out []*node
	for _, m := range v.members {
		if m.fault == FaultHang {
			out = append(out, m)
		}
	}
	return out
}
