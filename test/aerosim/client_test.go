package aerosim

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// simpleCluster starts size simple nodes of one cluster (namespace test, replication-factor 2, memory).
func simpleCluster(t testing.TB, s *Sim, size int) []NodeState {
	t.Helper()
	out := make([]NodeState, size)
	for i := range out {
		st, err := s.AddNode(NodeSpec{Cluster: "c1", Name: fmt.Sprintf("n%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = st
	}
	return out
}

// connect opens the official client on the first node, the way an application would.
func connect(t testing.TB, seed NodeState) *as.Client {
	t.Helper()
	policy := as.NewClientPolicy()
	policy.Timeout = 5 * time.Second
	c, err := as.NewClientWithPolicyAndHost(policy, as.NewHost(seed.IP, 3000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func key(t testing.TB, set string, v any) *as.Key {
	t.Helper()
	k, err := as.NewKey("test", set, v)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func resultCode(err error) types.ResultCode {
	var ae *as.AerospikeError
	if errors.As(err, &ae) {
		return ae.ResultCode
	}
	return types.OK
}

// The official client runs every operation unchanged against clusters of 1, 3 and 8 nodes.
func TestOfficialClient(t *testing.T) {
	for _, size := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("%d nodes", size), func(t *testing.T) {
			s := newSim(t, Options{})
			nodes := simpleCluster(t, s, size)
			c := connect(t, nodes[0])
			if got := len(c.GetNodes()); got != size {
				t.Fatalf("the client sees %d nodes", got)
			}
			singleRecordOps(t, c)
			conditionalWrites(t, c)
			multiRecordOps(t, c)
		})
	}
}

func singleRecordOps(t *testing.T, c *as.Client) {
	k := key(t, "demo", "key1")
	bins := as.BinMap{"i": 7, "s": "hello", "f": 1.5, "b": []byte{1, 2, 3}, "l": []any{1, "a"}, "m": map[any]any{"k": 1}}
	if err := c.Put(nil, k, bins); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Get(nil, k)
	if err != nil || rec.Generation != 1 || rec.Bins["s"] != "hello" || rec.Bins["i"] != 7 || rec.Bins["f"] != 1.5 {
		t.Fatalf("get: %v %v", rec, err)
	}
	if rec, err = c.Get(nil, k, "s", "i"); err != nil || len(rec.Bins) != 2 {
		t.Fatalf("get bins s, i: %v %v", rec, err)
	}
	if rec, err = c.GetHeader(nil, k); err != nil || rec.Generation != 1 || len(rec.Bins) != 0 {
		t.Fatalf("getheader: %v %v", rec, err)
	}
	if ok, err := c.Exists(nil, k); !ok || err != nil {
		t.Fatalf("exists: %v %v", ok, err)
	}
	missingKey(t, c)
	touchAndOperate(t, c, k)
	deletes(t, c, k)
}

func missingKey(t *testing.T, c *as.Client) {
	missing := key(t, "demo", "missing")
	if ok, err := c.Exists(nil, missing); ok || err != nil {
		t.Fatalf("exists missing: %v %v", ok, err)
	}
	if _, err := c.Get(nil, missing); resultCode(err) != types.KEY_NOT_FOUND_ERROR {
		t.Fatalf("get missing: %v", err)
	}
}

func touchAndOperate(t *testing.T, c *as.Client, k *as.Key) {
	if err := c.Touch(nil, k); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Operate(nil, k, as.AddOp(as.NewBin("i", 3)), as.AppendOp(as.NewBin("s", " world")), as.GetOp())
	if err != nil || rec.Generation != 3 || rec.Bins["i"] != 10 || rec.Bins["s"] != "hello world" || len(rec.Bins) != 6 {
		t.Fatalf("operate: %v %v", rec, err)
	}
	if rec, err = c.Operate(nil, k, as.PutOp(as.NewBin("n", 1)), as.GetBinOp("n")); err != nil || rec.Bins["n"] != 1 {
		t.Fatalf("operate put+read: %v %v", rec, err)
	}
}

func deletes(t *testing.T, c *as.Client, k *as.Key) {
	if deleted, err := c.Delete(nil, k); !deleted || err != nil {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	if deleted, err := c.Delete(nil, k); deleted || err != nil {
		t.Fatalf("delete missing: %v %v", deleted, err)
	}
	if err := c.Touch(nil, k); resultCode(err) != types.KEY_NOT_FOUND_ERROR {
		t.Fatalf("touch missing: %v", err)
	}
}

func conditionalWrites(t *testing.T, c *as.Client) {
	k := key(t, "demo", "cond")
	if err := c.Put(nil, k, as.BinMap{"i": 1}); err != nil {
		t.Fatal(err)
	}
	gen := as.NewWritePolicy(99, 0)
	gen.GenerationPolicy = as.EXPECT_GEN_EQUAL
	if err := c.Put(gen, k, as.BinMap{"i": 2}); resultCode(err) != types.GENERATION_ERROR {
		t.Fatalf("generation 99: %v", err)
	}
	gen.Generation = 1
	if err := c.Put(gen, k, as.BinMap{"i": 2}); err != nil {
		t.Fatalf("generation 1: %v", err)
	}
	// Higher than the stored generation only (asrestore's default): 2 is not; a new record always is.
	gt := as.NewWritePolicy(2, 0)
	gt.GenerationPolicy = as.EXPECT_GEN_GT
	if err := c.Put(gt, k, as.BinMap{"i": 9}); resultCode(err) != types.GENERATION_ERROR {
		t.Fatalf("generation greater than 2: %v", err)
	}
	fresh := key(t, "demo", "cond-new")
	if err := c.Put(gt, fresh, as.BinMap{"i": 1}); err != nil {
		t.Fatalf("generation greater, a new record: %v", err)
	}
	if _, err := c.Delete(nil, fresh); err != nil {
		t.Fatal(err)
	}
	create := as.NewWritePolicy(0, 0)
	create.RecordExistsAction = as.CREATE_ONLY
	if err := c.Put(create, k, as.BinMap{"i": 3}); resultCode(err) != types.KEY_EXISTS_ERROR {
		t.Fatalf("create only: %v", err)
	}
	big := bytes.Repeat([]byte{7}, 2<<20)
	if err := c.Put(nil, k, as.BinMap{"big": big}); resultCode(err) != types.RECORD_TOO_BIG {
		t.Fatalf("2 MiB record: %v", err)
	}
	if rec, err := c.Get(nil, k); err != nil || rec.Generation != 2 || rec.Bins["i"] != 2 {
		t.Fatalf("after the refused writes: %v %v", rec, err)
	}
}

func multiRecordOps(t *testing.T, c *as.Client) {
	const n = 40
	keys := make([]*as.Key, n)
	for i := range keys {
		keys[i] = key(t, "other", i)
		if i%2 == 0 {
			if err := c.Put(nil, keys[i], as.BinMap{"n": i, "x": "v"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	recs, err := c.BatchGet(nil, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if (r != nil) != (i%2 == 0) || (r != nil && r.Bins["n"] != i) {
			t.Fatalf("batch key %d: %v", i, r)
		}
	}
	if recs, err = c.BatchGet(nil, keys, "n"); err != nil || recs[0] == nil || len(recs[0].Bins) != 1 {
		t.Fatalf("batch bins n: %v %v", recs, err)
	}
	exists, err := c.BatchExists(nil, keys)
	if err != nil || !exists[0] || exists[1] {
		t.Fatalf("batch exists: %v %v", exists, err)
	}
	scans(t, c, n/2)
}

// scans expects inSet records in set other and one more (key cond) in the namespace.
func scans(t *testing.T, c *as.Client, inSet int) {
	n := 2 * inSet
	if got := scanCount(t, c, "other"); got != n/2 {
		t.Fatalf("scan of set other: %d records", got)
	}
	if got := queryCount(t, c, "other"); got != n/2 {
		t.Fatalf("query of set other: %d records", got)
	}
	if got := scanCount(t, c, ""); got != n/2+1 { // and key cond in set demo
		t.Fatalf("scan of the namespace: %d records", got)
	}
	if err := c.Truncate(nil, "test", "other", nil); err != nil {
		t.Fatal(err)
	}
	if got := scanCount(t, c, "other"); got != 0 {
		t.Fatalf("after truncate: %d records", got)
	}
}

func scanCount(t *testing.T, c *as.Client, set string) int {
	t.Helper()
	rs, err := c.ScanPartitions(nil, as.NewPartitionFilterAll(), "test", set)
	if err != nil {
		t.Fatal(err)
	}
	return countRecords(t, rs)
}

func queryCount(t *testing.T, c *as.Client, set string) int {
	t.Helper()
	rs, err := c.Query(nil, as.NewStatement("test", set))
	if err != nil {
		t.Fatal(err)
	}
	return countRecords(t, rs)
}

func countRecords(t *testing.T, rs *as.Recordset) int {
	t.Helper()
	count := 0
	for res := range rs.Results() {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		count++
	}
	return count
}

// A request for a namespace the cluster does not run fails in the client (it is not in the partition
// map); the server's own answer is in TestReplayErrors.
func TestOfficialClientUnknownNamespace(t *testing.T) {
	s := newSim(t, Options{})
	c := connect(t, simpleCluster(t, s, 1)[0])
	k, err := as.NewKey("nosuch", "demo", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(nil, k); resultCode(err) != types.INVALID_NAMESPACE {
		t.Fatalf("unknown namespace: %v", err)
	}
}

// With UseCompression the client sends type-4 messages above its threshold and asks for compressed
// answers; both directions work.
func TestOfficialClientCompression(t *testing.T) {
	s := newSim(t, Options{})
	c := connect(t, simpleCluster(t, s, 1)[0])
	policy := as.NewWritePolicy(0, 0)
	policy.UseCompression = true
	k := key(t, "demo", "z")
	value := bytes.Repeat([]byte("compressible "), 1000)
	if err := c.Put(policy, k, as.BinMap{"v": value}); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Get(&policy.BasePolicy, k)
	if err != nil || !bytes.Equal(rec.Bins["v"].([]byte), value) {
		t.Fatalf("compressed get: %v", err)
	}
}

// Operations the simulator does not model fail loudly (rc 4) instead of answering wrongly.
func TestOfficialClientUnsupportedOperations(t *testing.T) {
	s := newSim(t, Options{})
	c := connect(t, simpleCluster(t, s, 1)[0])
	k := key(t, "demo", "cdt")
	if err := c.Put(nil, k, as.BinMap{"l": []any{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Operate(nil, k, as.ListSizeOp("l")); resultCode(err) != types.PARAMETER_ERROR {
		t.Fatalf("list size: %v", err)
	}
	if _, err := c.Operate(nil, k, as.ListAppendOp("l", 3)); resultCode(err) != types.PARAMETER_ERROR {
		t.Fatalf("list append: %v", err)
	}
}

// A scan's filter expression on the last-update time (asbackup --modified-after/--modified-before) is
// applied; one the simulator cannot evaluate is refused, never answered with every record.
func TestScanFilterExpression(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	s := newSim(t, Options{Clock: clk})
	c := connect(t, simpleCluster(t, s, 1)[0])
	for i := range 10 {
		if i == 6 {
			clk.Step(time.Minute)
		}
		if err := c.Put(nil, key(t, "demo", i), as.BinMap{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	cut := clk.Now().UnixNano()
	count := func(exp *as.Expression) (int, error) {
		policy := as.NewScanPolicy()
		policy.FilterExpression = exp
		rs, err := c.ScanPartitions(policy, as.NewPartitionFilterAll(), "test", "demo")
		if err != nil {
			return 0, err
		}
		n := 0
		for r := range rs.Results() {
			if r.Err != nil {
				return n, r.Err
			}
			n++
		}
		return n, nil
	}
	for name, tc := range map[string]struct {
		exp  *as.Expression
		want int
	}{
		"at or after": {as.ExpGreaterEq(as.ExpLastUpdate(), as.ExpIntVal(cut)), 4},
		"before":      {as.ExpLess(as.ExpLastUpdate(), as.ExpIntVal(cut)), 6},
		"a range": {as.ExpAnd(as.ExpGreaterEq(as.ExpLastUpdate(), as.ExpIntVal(cut-int64(time.Hour))),
			as.ExpLess(as.ExpLastUpdate(), as.ExpIntVal(cut))), 6},
	} {
		if n, err := count(tc.exp); err != nil || n != tc.want {
			t.Errorf("%s: %d records (%v), want %d", name, n, err, tc.want)
		}
	}
	if _, err := count(as.ExpEq(as.ExpIntBin("i"), as.ExpIntVal(1))); resultCode(err) != types.PARAMETER_ERROR {
		t.Fatalf("a filter on a bin: %v, want PARAMETER_ERROR", err)
	}
}
