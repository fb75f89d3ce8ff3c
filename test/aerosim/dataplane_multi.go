package aerosim

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
)

// Batch entry types of BATCH_INDEX_WITH_SET (the v7 client's _BATCH_MSG_*).
const (
	batchRepeat = 0x1
	batchInfo   = 0x2
	batchGen    = 0x4
	batchTTL    = 0x8
)

// batch answers BATCH_INDEX_WITH_SET: one sub-record per key with its index in the header's timeout
// slot, then LAST.
func (s *Sim) batch(namespaces []nsConfig, v *clusterView, m *message, w *writer) {
	data, ok := m.field(fieldBatchSet)
	entries, err := parseBatch(data)
	if !ok || err != nil {
		w.last(rcParameter)
		return
	}
	for _, e := range entries {
		nv, rc := namespaceView(namespaces, v, e.ns)
		a := answer{rc: rc}
		if rc == rcOK {
			a = s.command(v, nv, e.request)
		}
		w.message(msgHeader{resultCode: a.rc, generation: a.generation, timeout: e.index}, nil, a.ops)
	}
	w.last(rcOK)
}

type batchEntry struct {
	request
	index uint32
}

// parseBatch reads field 42: n_keys(u32) flags(u8), then per key index(u32) digest(20) type(u8) and,
// unless the type repeats the previous key's, its attributes, fields (ns, set) and ops.
func parseBatch(data []byte) ([]batchEntry, error) {
	r := reader{b: data}
	count, err := r.uint(4)
	if err != nil {
		return nil, err
	}
	if _, err := r.take(1); err != nil {
		return nil, err
	}
	out := make([]batchEntry, 0, min(count, uint64(len(data))))
	var prev request
	for range count {
		e, err := parseBatchEntry(&r, prev)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		prev = e.request
	}
	return out, nil
}

func parseBatchEntry(r *reader, prev request) (batchEntry, error) {
	index, err := r.uint(4)
	if err != nil {
		return batchEntry{}, err
	}
	d, err := r.take(len(digest{}))
	if err != nil {
		return batchEntry{}, err
	}
	typ, err := r.uint(1)
	if err != nil {
		return batchEntry{}, err
	}
	e := batchEntry{index: uint32(index), request: prev}
	if typ&batchRepeat == 0 {
		if e.request, err = parseBatchRequest(r, byte(typ)); err != nil {
			return batchEntry{}, err
		}
	}
	e.digest = digest(d)
	return e, nil
}

func parseBatchRequest(r *reader, typ byte) (request, error) {
	attrs, err := r.take(1)
	if typ&batchInfo != 0 {
		attrs, err = r.take(3) // read, write, info attributes
	}
	if err != nil {
		return request{}, err
	}
	var req request
	req.info1 = attrs[0]
	if len(attrs) == 3 {
		req.info2, req.info3 = attrs[1], attrs[2]
	}
	if typ&batchGen != 0 {
		gen, err := r.uint(2)
		if err != nil {
			return request{}, err
		}
		req.generation = uint32(gen)
	}
	if typ&batchTTL != 0 {
		if _, err := r.take(4); err != nil {
			return request{}, err
		}
	}
	counts, err := r.take(4)
	if err != nil {
		return request{}, err
	}
	m := message{}
	if m.fields, err = r.fields(int(binary.BigEndian.Uint16(counts))); err != nil {
		return request{}, err
	}
	if m.ops, err = r.ops(int(binary.BigEndian.Uint16(counts[2:]))); err != nil {
		return request{}, err
	}
	ns, _ := m.field(fieldNamespace)
	set, _ := m.field(fieldSet)
	req.ns, req.set, req.ops = string(ns), string(set), m.ops
	return req, nil
}

// scan answers a partition scan or a query without filter: every record of the asked partitions
// (of the set, if one is named, and that its filter expression holds for), each with fields namespace,
// digest and set, then LAST.
func scan(v *clusterView, nv *nsView, m *message, w *writer) {
	set, _ := m.field(fieldSet)
	keep, err := recordFilter(m)
	if err != nil {
		w.last(rcParameter)
		return
	}
	for _, pid := range scanPartitions(m) {
		recs := v.partition(nv.name, pid)
		for _, d := range slices.SortedFunc(maps.Keys(recs), func(a, b digest) int { return bytes.Compare(a[:], b[:]) }) {
			rec := recs[d]
			if len(set) > 0 && rec.set != string(set) || keep != nil && !keep(rec) {
				continue
			}
			fields := []field{{typ: fieldNamespace, data: []byte(nv.name)}, {typ: fieldDigest, data: d[:]}}
			if rec.set != "" {
				fields = append(fields, field{typ: fieldSet, data: []byte(rec.set)})
			}
			var ops []op
			if m.info1&info1NoBinData == 0 {
				ops = allBins(rec.bins)
			}
			w.message(msgHeader{generation: rec.generation}, fields, ops)
		}
	}
	w.last(rcOK)
}

// scanPartitions is the PID_ARRAY (little-endian u16s), or every partition.
func scanPartitions(m *message) []int {
	data, ok := m.field(fieldPIDArray)
	if !ok {
		out := make([]int, nPartitions)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		out = append(out, int(binary.LittleEndian.Uint16(data[i:]))&(nPartitions-1))
	}
	return out
}

// partition is the partition's records as the cluster serves them: the newest of every complete copy.
func (v *clusterView) partition(ns string, pid int) map[digest]*record {
	merged := map[digest]*record{}
	for _, m := range v.members {
		if c := m.store().copyOf(ns, pid); c != nil {
			if complete, _ := c.state(); complete {
				c.mergeInto(merged)
			}
		}
	}
	return merged
}
