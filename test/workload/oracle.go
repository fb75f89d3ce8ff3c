package workload

// Reasons a value read back is not acceptable, beside the client's result codes.
const (
	reasonNotFound = "KEY_NOT_FOUND_ERROR" // the client's name for result code 2
	reasonOlder    = "OLDER_VALUE"         // at the verification: an older write's value (or another run's)
	reasonStale    = "STALE_READ"          // the same during the run
	reasonWrong    = "WRONG_VALUE"         // a value this key never had: another key's, or a seq never sent
)

// keyState is what the run knows of one key. Its writes are numbered 1, 2, ... and issued one
// at a time by the key's worker, so a higher seq is a newer write.
type keyState struct {
	sent  int // the highest seq sent, acknowledged or not
	acked int // the highest seq acknowledged
	// ackedBeforeWindow is the highest seq acknowledged before the split window opened.
	ackedBeforeWindow int
}

// value is a record as read back.
type value struct {
	found bool
	valid bool // the bins run, key and seq are there, as integers
	run   int64
	key   int
	seq   int
}

// judge says why v is not an acceptable read of key (of run) whose writes up to floor must be
// there and up to sent may be: "" when it is. Another run's value is older than any of this run.
func judge(v value, run int64, key, floor, sent int) string {
	if !v.found {
		if floor > 0 {
			return reasonNotFound
		}
		return ""
	}
	if !v.valid || v.run == run && (v.key != key || v.seq > sent || v.seq < 1) {
		return reasonWrong
	}
	seq := v.seq
	if v.run != run {
		seq = 0
	}
	if seq < floor {
		return reasonOlder
	}
	return ""
}

// verifyFloor is the oldest write of a key the verification accepts: the newest acknowledged
// one, or with split tolerance the newest acknowledged before the window (at least the first).
func verifyFloor(st keyState, splitTolerant bool) int {
	if splitTolerant {
		return max(st.ackedBeforeWindow, 1)
	}
	return st.acked
}
