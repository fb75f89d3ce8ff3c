// Package workload drives an Aerospike cluster with the official client
// (github.com/aerospike/aerospike-client-go/v7, used unchanged) and counts what it loses: the
// oracle of the fault tests. It is test code, not part of the operator's image.
//
// # The load
//
// Start connects (retrying until its context ends) and runs Config.Workers goroutines that
// together issue Config.Rate operations per second, alternately a write and a read. Worker w owns
// the keys k of [0, Config.Keys) with k mod Workers = w, so the writes of one key are issued one
// at a time, in order: the n-th write of key k puts the bins run (the Run's random id), key (k)
// and seq (n). Writes go round-robin through the worker's keys; reads pick one of them already
// written. Every operation has the total timeout Config.OpTimeout and the client's default
// retries (reads 2, writes 0).
//
// A write is acknowledged when Put returns no error. A write that failed in any way (timeout,
// in doubt, refused) has an unknown outcome: a later read may show it or not, and both are fine.
//
// A read during the run must return, for a key whose newest acknowledged write before the read
// began is n, a value of this run with seq ≥ n (seq may be higher: a write whose outcome was
// unknown). A not-found answer then counts as KEY_NOT_FOUND_ERROR, an older value (or another
// run's) as STALE_READ, a value nobody wrote (another key's, or a seq never sent) as WRONG_VALUE.
// A not-found answer for a key with no acknowledged write is a success. Errors are counted by
// the client's result code name (types.ResultCode.String: TIMEOUT, KEY_NOT_FOUND_ERROR, ...),
// except MAX_RETRIES_EXCEEDED, which says only that the client gave up: it is named by its last
// attempt's code (NETWORK_ERROR, PARTITION_UNAVAILABLE, ...).
//
// # The verification
//
// Stop ends the load, then reads back with a fresh client every key that has at least one
// acknowledged write. A key is lost when it cannot be read back, or reads back with a value
// older than its newest acknowledged write (or a value nobody wrote). Until the cluster is
// settled a migration or a split's merge may still change what a key reads back, so the
// verification first waits until every node the client sees reports migrate_partitions_remaining
// 0 in its statistics, and at least settleTime after it began (the server counts a node that
// just stopped for 2 s); then it reads every key, and reads those that failed again, one second
// apart, until a whole pass ran on a settled cluster. Config.VerifyTimeout (or the end of Stop's
// context) ends the waiting: the keys still failing then are lost, by their last reason:
// KEY_NOT_FOUND_ERROR, OLDER_VALUE, WRONG_VALUE or the read's result code.
//
// # Split brain
//
// After a split brain heals, the server keeps, of two copies of a record, the one with the higher
// generation, then the later last-update time: a write acknowledged on the losing side is gone
// although no node failed. With Config.SplitTolerant, the run opens a split window at the first
// failed operation or at Run.MarkSplit, whichever comes first; a key's floor is then its newest
// write acknowledged before the window opened (or its first write if none was). At the
// verification, the key is kept if it reads back with any value of this run at or above that
// floor: a write acknowledged on either side (or one with an unknown outcome) survived. A key
// that reads back not found is lost even so: no copy of it survived. Without a window (no error,
// no MarkSplit) the floor is the newest acknowledged write, as without the flag. The kept keys
// whose newest acknowledged write did not survive (the strict rule would count them lost) are
// Report.SplitOverwritten. Reads during the run are judged as always, so the stale reads of the
// split show up as STALE_READ.
//
// # Limits
//
// One run per namespace and set at a time: two runs would overwrite each other's keys. A write
// whose outcome was unknown could in principle still be applied by the server after a later
// write of the same key was acknowledged (a request that sat in a socket); the workload would
// then count that key lost, as OLDER_VALUE, right after a TIMEOUT of that key in Errors.
package workload
