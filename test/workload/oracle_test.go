package workload

import (
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"
)

func TestJudge(t *testing.T) {
	const run, key = 77, 5
	ours := func(seq int) value { return value{found: true, valid: true, run: run, key: key, seq: seq} }
	cases := []struct {
		name        string
		v           value
		floor, sent int
		want        string
	}{
		{"the newest acknowledged write", ours(3), 3, 3, ""},
		{"a newer write whose outcome was unknown", ours(4), 3, 4, ""},
		{"an older write", ours(2), 3, 4, reasonOlder},
		{"not found after an acknowledged write", value{}, 1, 1, reasonNotFound},
		{"not found, nothing acknowledged (unknown outcomes only)", value{}, 0, 2, ""},
		{"an unknown outcome read back, nothing acknowledged", ours(2), 0, 2, ""},
		{"another run's value is older than any of this run", value{found: true, valid: true, run: 1, key: key, seq: 9}, 1, 1,
			reasonOlder},
		{"another run's value, nothing acknowledged", value{found: true, valid: true, run: 1, key: key, seq: 9}, 0, 1, ""},
		{"a seq never sent", ours(5), 3, 4, reasonWrong},
		{"seq 0 was never sent", ours(0), 0, 1, reasonWrong},
		{"another key's value", value{found: true, valid: true, run: run, key: key + 1, seq: 3}, 3, 3, reasonWrong},
		{"bins missing", value{found: true}, 0, 1, reasonWrong},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := judge(c.v, run, key, c.floor, c.sent); got != c.want {
				t.Errorf("judge(%+v, floor %d, sent %d) = %q, want %q", c.v, c.floor, c.sent, got, c.want)
			}
		})
	}
}

// The verification's verdict for the split brain cases of the package doc: the floor decides
// which surviving value keeps a key.
func TestVerifyFloorAndSplitBrain(t *testing.T) {
	const run, key = 9, 0
	ours := func(seq int) value { return value{found: true, valid: true, run: run, key: key, seq: seq} }
	cases := []struct {
		name     string
		st       keyState
		tolerant bool
		read     value
		want     string
	}{
		{"strict: the newest acknowledged survives", keyState{sent: 5, acked: 5, ackedBeforeWindow: 3}, false, ours(5), ""},
		{"strict: the losing side's write won", keyState{sent: 5, acked: 5, ackedBeforeWindow: 3}, false, ours(4), reasonOlder},
		{"tolerant: a write of the split survived", keyState{sent: 5, acked: 5, ackedBeforeWindow: 3}, true, ours(4), ""},
		{"tolerant: the value before the window survived", keyState{sent: 5, acked: 5, ackedBeforeWindow: 3}, true, ours(3),
			""},
		{"tolerant: older than the window", keyState{sent: 5, acked: 5, ackedBeforeWindow: 3}, true, ours(2), reasonOlder},
		{"tolerant: no copy survived", keyState{sent: 5, acked: 5, ackedBeforeWindow: 3}, true, value{}, reasonNotFound},
		{"tolerant, first acknowledged in the window: not found is lost", keyState{sent: 2, acked: 2}, true, value{},
			reasonNotFound},
		{"tolerant, first acknowledged in the window: any write of it", keyState{sent: 2, acked: 2}, true, ours(1), ""},
		{"no window: tolerant is strict", keyState{sent: 4, acked: 4, ackedBeforeWindow: 4}, true, ours(3), reasonOlder},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := judge(c.read, run, key, verifyFloor(c.st, c.tolerant), c.st.sent)
			if got != c.want {
				t.Errorf("verdict = %q, want %q", got, c.want)
			}
		})
	}
}

func TestValueOf(t *testing.T) {
	cases := []struct {
		name string
		bins as.BinMap
		want value
	}{
		{"the workload's bins", as.BinMap{binRun: 7, binKey: 3, binSeq: 2},
			value{found: true, valid: true, run: 7, key: 3, seq: 2}},
		{"seq missing", as.BinMap{binRun: 7, binKey: 3}, value{found: true, run: 7, key: 3}},
		{"seq a string", as.BinMap{binRun: 7, binKey: 3, binSeq: "2"}, value{found: true, run: 7, key: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := valueOf(c.bins); got != c.want {
				t.Errorf("valueOf(%v) = %+v, want %+v", c.bins, got, c.want)
			}
		})
	}
}
