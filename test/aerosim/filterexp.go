package aerosim

import (
	"encoding/binary"
	"errors"
)

// fieldFilterExp is the FILTER_EXP field: a msgpack expression the server applies to every record a
// scan or command reads, returning only those it holds true for.
const fieldFilterExp = 43

// The expression ops the simulator evaluates (the server's and the v7 client's exp codes): asbackup's
// --modified-after and --modified-before filters (as_exp_cmp_ge/lt of as_exp_last_update, and'ed).
const (
	expEQ         = 1
	expNE         = 2
	expGT         = 3
	expGE         = 4
	expLT         = 5
	expLE         = 6
	expAND        = 16
	expLastUpdate = 66
)

var errFilterExp = errors.New("filter expression the simulator does not know")

// recordFilter is a scan's FILTER_EXP as a test of a record; nil when the scan has none. An expression
// the simulator cannot evaluate is an error (the scan answers PARAMETER_ERROR): never a silent superset.
func recordFilter(m *message) (func(*record) bool, error) {
	data, ok := m.field(fieldFilterExp)
	if !ok {
		return nil, nil
	}
	exp, rest, err := unpack(data)
	if err != nil || len(rest) != 0 {
		return nil, errFilterExp
	}
	return boolExp(exp)
}

// boolExp compiles a boolean expression: a comparison of the last-update time with an integer, or an
// AND of such.
func boolExp(exp any) (func(*record) bool, error) {
	list, ok := exp.([]any)
	if !ok || len(list) == 0 {
		return nil, errFilterExp
	}
	op, ok := list[0].(int64)
	if !ok {
		return nil, errFilterExp
	}
	if op == expAND {
		var parts []func(*record) bool
		for _, e := range list[1:] {
			p, err := boolExp(e)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		}
		return func(r *record) bool {
			for _, p := range parts {
				if !p(r) {
					return false
				}
			}
			return true
		}, nil
	}
	if len(list) != 3 || !isLastUpdate(list[1]) {
		return nil, errFilterExp
	}
	v, ok := list[2].(int64)
	if !ok {
		return nil, errFilterExp
	}
	cmp := map[int64]func(a, b int64) bool{
		expEQ: func(a, b int64) bool { return a == b }, expNE: func(a, b int64) bool { return a != b },
		expGT: func(a, b int64) bool { return a > b }, expGE: func(a, b int64) bool { return a >= b },
		expLT: func(a, b int64) bool { return a < b }, expLE: func(a, b int64) bool { return a <= b },
	}[op]
	if cmp == nil {
		return nil, errFilterExp
	}
	return func(r *record) bool { return cmp(r.lut, v) }, nil
}

func isLastUpdate(e any) bool {
	l, ok := e.([]any)
	return ok && len(l) == 1 && l[0] == int64(expLastUpdate)
}

// unpack reads one msgpack value of the kinds expressions of these ops use: arrays and integers.
func unpack(b []byte) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, errFilterExp
	}
	c := b[0]
	switch {
	case c <= 0x7f:
		return int64(c), b[1:], nil
	case c >= 0xe0:
		return int64(int8(c)), b[1:], nil
	case c >= 0x90 && c <= 0x9f:
		return unpackArray(b[1:], int(c&0x0f))
	case c == 0xdc && len(b) >= 3:
		return unpackArray(b[3:], int(binary.BigEndian.Uint16(b[1:])))
	}
	size := map[byte]int{0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8}[c]
	if size == 0 || len(b) < 1+size {
		return nil, nil, errFilterExp
	}
	var u uint64
	for _, x := range b[1 : 1+size] {
		u = u<<8 | uint64(x)
	}
	if c >= 0xd0 { // signed: extend the sign of a narrower integer
		shift := 64 - 8*size
		return int64(u<<shift) >> shift, b[1+size:], nil
	}
	return int64(u), b[1+size:], nil
}

func unpackArray(b []byte, n int) (any, []byte, error) {
	out := make([]any, 0, n)
	for range n {
		v, rest, err := unpack(b)
		if err != nil {
			return nil, nil, err
		}
		out, b = append(out, v), rest
	}
	return out, b, nil
}
