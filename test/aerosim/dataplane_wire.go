package aerosim

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The data protocol as the v7 client and asd 8.1.2.0 speak it (dataplane fixtures README, "Framing").
const (
	msgInfo       = 1
	msgData       = 3 // AS_MSG
	msgCompressed = 4 // an 8-byte uncompressed size, then a zlib stream of a whole type-3 message
	msgHeaderSize = 22
	// maxMessage bounds an AS_MSG request: big enough that a 9 MiB write reaches the record size check.
	maxMessage = 64 << 20

	info1GetAll           = 0x02
	info1Batch            = 0x08
	info1NoBinData        = 0x20
	info1CompressResponse = 0x80
	info2Write            = 0x01
	info2Delete           = 0x02
	info2Generation       = 0x04
	info2GenerationGT     = 0x08 // write only if the request's generation is higher (asrestore's default)
	info2CreateOnly       = 0x20
	info3Last             = 0x01
	info3UpdateOnly       = 0x08
	info3CreateOrReplace  = 0x10
	info3ReplaceOnly      = 0x20

	fieldNamespace = 0
	fieldSet       = 1
	fieldDigest    = 4
	fieldPIDArray  = 11
	fieldBatchSet  = 42

	opRead    = 1
	opWrite   = 2
	opAdd     = 5
	opAppend  = 9
	opPrepend = 10
	opTouch   = 11

	particleNull    = 0
	particleInteger = 1
	particleFloat   = 2
)

var errShortMessage = errors.New("AS_MSG shorter than its counts")

// msgHeader is the 22-byte AS_MSG header.
type msgHeader struct {
	info1, info2, info3 byte
	resultCode          byte
	generation          uint32
	ttl                 uint32
	timeout             uint32 // a batch answer's key index
}

type field struct {
	typ  byte
	data []byte
}

type op struct {
	op, particle byte
	name         string
	value        []byte
}

// message is one parsed AS_MSG.
type message struct {
	msgHeader
	fields []field
	ops    []op
}

func (m *message) field(typ byte) ([]byte, bool) {
	for _, f := range m.fields {
		if f.typ == typ {
			return f.data, true
		}
	}
	return nil, false
}

// parseMessage parses an AS_MSG body (after the 8-byte proto header).
func parseMessage(b []byte) (*message, error) {
	if len(b) < msgHeaderSize || int(b[0]) < msgHeaderSize {
		return nil, errShortMessage
	}
	m := &message{msgHeader: msgHeader{info1: b[1], info2: b[2], info3: b[3], resultCode: b[5],
		generation: binary.BigEndian.Uint32(b[6:]), ttl: binary.BigEndian.Uint32(b[10:]),
		timeout: binary.BigEndian.Uint32(b[14:])}}
	nFields, nOps := int(binary.BigEndian.Uint16(b[18:])), int(binary.BigEndian.Uint16(b[20:]))
	r := reader{b: b[b[0]:]}
	var err error
	if m.fields, err = r.fields(nFields); err != nil {
		return nil, err
	}
	m.ops, err = r.ops(nOps)
	return m, err
}

// reader walks fields and ops.
type reader struct{ b []byte }

func (r *reader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.b) {
		return nil, errShortMessage
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, nil
}

func (r *reader) uint(n int) (uint64, error) {
	b, err := r.take(n)
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v, err
}

func (r *reader) fields(n int) ([]field, error) {
	out := make([]field, 0, n)
	for range n {
		size, err := r.uint(4)
		if err != nil || size < 1 {
			return nil, errShortMessage
		}
		b, err := r.take(int(size))
		if err != nil {
			return nil, err
		}
		out = append(out, field{typ: b[0], data: b[1:]})
	}
	return out, nil
}

func (r *reader) ops(n int) ([]op, error) {
	out := make([]op, 0, n)
	for range n {
		size, err := r.uint(4)
		if err != nil || size < 4 {
			return nil, errShortMessage
		}
		b, err := r.take(int(size))
		if err != nil {
			return nil, err
		}
		nameLen := int(b[3])
		if 4+nameLen > len(b) {
			return nil, errShortMessage
		}
		out = append(out, op{op: b[0], particle: b[1], name: string(b[4 : 4+nameLen]), value: b[4+nameLen:]})
	}
	return out, nil
}

// writer builds answers: a sequence of type-3 protos, each holding one or more messages.
type writer struct {
	buf   bytes.Buffer
	start int // offset of the open proto's header, or -1
}

func newWriter() *writer { return &writer{start: -1} }

// protoLimit is where the writer starts a new proto for multi-record answers.
const protoLimit = 128 << 10

// open starts a proto unless one is open and small enough.
func (w *writer) open() {
	if w.start >= 0 && w.buf.Len()-w.start < protoLimit {
		return
	}
	w.close()
	w.start = w.buf.Len()
	w.buf.Write(make([]byte, headerSize))
}

// close ends the open proto, writing its header.
func (w *writer) close() {
	if w.start < 0 {
		return
	}
	size := uint64(w.buf.Len() - w.start - headerSize)
	b := w.buf.Bytes()[w.start:]
	binary.BigEndian.PutUint64(b, size|2<<56|msgData<<48)
	w.start = -1
}

// message appends one message to the open proto (opening one if needed).
func (w *writer) message(h msgHeader, fields []field, ops []op) {
	w.open()
	var hb [msgHeaderSize]byte
	hb[0], hb[1], hb[2], hb[3], hb[5] = msgHeaderSize, h.info1, h.info2, h.info3, h.resultCode
	binary.BigEndian.PutUint32(hb[6:], h.generation)
	binary.BigEndian.PutUint32(hb[10:], h.ttl)
	binary.BigEndian.PutUint32(hb[14:], h.timeout)
	binary.BigEndian.PutUint16(hb[18:], uint16(len(fields)))
	binary.BigEndian.PutUint16(hb[20:], uint16(len(ops)))
	w.buf.Write(hb[:])
	var size [4]byte
	for _, f := range fields {
		binary.BigEndian.PutUint32(size[:], uint32(1+len(f.data)))
		w.buf.Write(size[:])
		w.buf.WriteByte(f.typ)
		w.buf.Write(f.data)
	}
	for _, o := range ops {
		binary.BigEndian.PutUint32(size[:], uint32(4+len(o.name)+len(o.value)))
		w.buf.Write(size[:])
		w.buf.Write([]byte{o.op, o.particle, 0, byte(len(o.name))})
		w.buf.WriteString(o.name)
		w.buf.Write(o.value)
	}
}

// single is a one-message proto: the answer to a single-record command.
func (w *writer) single(h msgHeader, ops []op) {
	w.close()
	w.message(h, nil, ops)
	w.close()
}

// last ends a multi-record answer with its own proto holding the LAST marker.
func (w *writer) last(rc byte) {
	w.close()
	w.message(msgHeader{info3: info3Last, resultCode: rc}, nil, nil)
	w.close()
}

func (w *writer) bytes() []byte {
	w.close()
	return w.buf.Bytes()
}

// compress wraps a whole answer (its protos) into one type-4 message, as asd does when the request
// asked for a compressed response.
func compress(plain []byte) []byte {
	var z bytes.Buffer
	z.Write(make([]byte, 2*headerSize))
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	b := z.Bytes()
	binary.BigEndian.PutUint64(b, uint64(len(b)-headerSize)|2<<56|msgCompressed<<48)
	binary.BigEndian.PutUint64(b[headerSize:], uint64(len(plain)))
	return b
}

// decompress returns the type-3 body inside a type-4 body.
func decompress(body []byte) ([]byte, error) {
	if len(body) < headerSize {
		return nil, errShortMessage
	}
	zr, err := zlib.NewReader(bytes.NewReader(body[headerSize:]))
	if err != nil {
		return nil, err
	}
	plain, err := io.ReadAll(io.LimitReader(zr, maxMessage+headerSize))
	if err != nil {
		return nil, err
	}
	if len(plain) < headerSize || plain[1] != msgData {
		return nil, fmt.Errorf("compressed message holds type %d", plain[1])
	}
	return plain[headerSize:], nil
}

// readFrame reads one proto: its type and body.
func readFrame(r io.Reader) (byte, []byte, error) {
	h := make([]byte, headerSize)
	if _, err := io.ReadFull(r, h); err != nil {
		return 0, nil, err
	}
	n := frameLength(h)
	limit := uint64(maxRequest)
	if h[1] != msgInfo {
		limit = maxMessage
	}
	if h[0] != 2 || n > limit || (h[1] != msgInfo && h[1] != msgData && h[1] != msgCompressed) {
		return 0, nil, errBadFrame
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return h[1], body, nil
}
