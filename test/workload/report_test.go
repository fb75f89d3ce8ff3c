package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestAvailability(t *testing.T) {
	cases := []struct {
		succeeded, failed int
		want              float64
	}{
		{100, 0, 100},
		{99, 1, 99},
		{0, 5, 0},
		{0, 0, 0}, // nothing ran: never available
		{1, 3, 25},
	}
	for _, c := range cases {
		if got := availability(c.succeeded, c.failed); got != c.want {
			t.Errorf("availability(%d, %d) = %v, want %v", c.succeeded, c.failed, got, c.want)
		}
	}
}

func TestLongestWriteGap(t *testing.T) {
	s := time.Second
	cases := []struct {
		name    string
		written []time.Duration // successful writes, since the start
		end     time.Duration
		want    time.Duration
	}{
		{"no write at all: the whole run", nil, 10 * s, 10 * s},
		{"before the first write", []time.Duration{3 * s, 4 * s}, 5 * s, 3 * s},
		{"between two writes", []time.Duration{1 * s, 2 * s, 6 * s, 7 * s}, 8 * s, 4 * s},
		{"after the last write", []time.Duration{1 * s, 2 * s}, 9 * s, 7 * s},
		{"writes ending out of order (concurrent workers)", []time.Duration{1 * s, 5 * s, 4 * s, 6 * s}, 6 * s, 4 * s},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gapTracker{last: t0}
			for _, w := range c.written {
				g.written(at(w))
			}
			if got := g.longestUpTo(at(c.end)); got != c.want {
				t.Errorf("longest gap = %s, want %s", got, c.want)
			}
		})
	}
}

// A node is unreachable from its first failed probe to its first passed one, to the last probe
// that still found it among the client's nodes, or, while it lasts, to the report.
func TestMaxUnreachableNode(t *testing.T) {
	s := time.Second
	o := outageTracker{since: map[string]time.Time{}}
	o.probed(map[string]bool{"A": true, "B": true, "C": true}, at(1*s))
	o.probed(map[string]bool{"A": false, "B": true, "C": false}, at(2*s))
	o.probed(map[string]bool{"A": false, "B": false, "C": false}, at(3*s))
	o.probed(map[string]bool{"A": true, "B": false, "C": false}, at(5*s)) // A: 3 s
	o.probed(map[string]bool{"A": true, "B": false}, at(6*s))             // C dropped by the client: 4 s
	if got := o.longestUpTo(at(6 * s)); got != 4*s {
		t.Errorf("longest = %s, want 4s", got)
	}
	if got := o.longestUpTo(at(10 * s)); got != 7*s {
		t.Errorf("with B still down at the report: %s, want 7s", got)
	}
}

func TestTallyReport(t *testing.T) {
	tl := newTally(t0)
	outcomes := []outcome{
		{op: opWrite, key: 1, at: at(time.Second), firstAck: true},
		{op: opRead, key: 1, at: at(2 * time.Second)},
		{op: opWrite, key: 2, at: at(3 * time.Second), code: "TIMEOUT"},
		{op: opRead, key: 1, at: at(4 * time.Second), code: reasonStale},
		{op: opWrite, key: 1, at: at(5 * time.Second)}, // acknowledged again: still one key
		{op: opWrite, key: 2, at: at(6 * time.Second), code: "TIMEOUT"},
		{op: opWrite, key: 2, at: at(9 * time.Second), firstAck: true},
		{op: opRead, key: 2, at: at(9 * time.Second)},
	}
	for _, o := range outcomes {
		tl.add(o)
	}
	got := tl.report(at(10 * time.Second))
	want := Report{Duration: 10 * time.Second, Writes: 5, Reads: 3, Succeeded: 5, Failed: 3, OpsPerSec: 0.8,
		ErrorsByCode: map[string]int{"TIMEOUT": 2, reasonStale: 1}, Availability: 62.5,
		LongestWriteGap: 4 * time.Second, Acknowledged: 2, LostByReason: map[string]int{},
		Errors: []ErrorAt{{3 * time.Second, opWrite, 2, "TIMEOUT"}, {4 * time.Second, opRead, 1, reasonStale},
			{6 * time.Second, opWrite, 2, "TIMEOUT"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report =\n%+v\nwant\n%+v", got, want)
	}
}

func TestTallyKeepsTheFirstErrors(t *testing.T) {
	tl := newTally(t0)
	for i := range maxErrors + 10 {
		tl.add(outcome{op: opRead, key: i, at: at(time.Duration(i) * time.Millisecond), code: "TIMEOUT"})
	}
	r := tl.report(at(time.Second))
	if len(r.Errors) != maxErrors || r.Errors[0].Key != 0 || r.Errors[maxErrors-1].Key != maxErrors-1 {
		t.Errorf("errors kept: %d, first %v, last %v; want the first %d", len(r.Errors), r.Errors[0], r.Errors[len(r.Errors)-1],
			maxErrors)
	}
	if r.Failed != maxErrors+10 || r.ErrorsByCode["TIMEOUT"] != maxErrors+10 {
		t.Errorf("failed %d, by code %v: every error counts", r.Failed, r.ErrorsByCode)
	}
}

func TestSetLost(t *testing.T) {
	lost := map[int]string{}
	for k := range 30 {
		lost[100-k] = reasonNotFound
	}
	lost[3] = reasonOlder
	r := Report{Acknowledged: 124}
	r.setLost(lost, 4, 2*time.Second)
	wantKeys := []int{3}
	for k := 71; len(wantKeys) < maxLostKeys; k++ {
		wantKeys = append(wantKeys, k)
	}
	if !r.Verified || r.Lost != 31 || r.SplitOverwritten != 4 || !reflect.DeepEqual(r.LostKeys, wantKeys) || r.VerifyDuration != 2*time.Second ||
		!reflect.DeepEqual(r.LostByReason, map[string]int{reasonNotFound: 30, reasonOlder: 1}) {
		t.Errorf("after setLost: %+v", r)
	}
	if got := r.LostPercent(); got != 25 {
		t.Errorf("LostPercent = %v, want 25", got)
	}
}

func sampleReport() Report {
	return Report{Duration: 60 * time.Second, Writes: 15000, Reads: 15000, Succeeded: 29990, Failed: 10,
		OpsPerSec: 500, ErrorsByCode: map[string]int{"TIMEOUT": 7, "KEY_NOT_FOUND_ERROR": 3}, Availability: 99.9667,
		LongestWriteGap: 1234 * time.Millisecond, Acknowledged: 2000, Verified: true, VerifyDuration: 3 * time.Second,
		Lost: 2, LostKeys: []int{17, 1999}, LostByReason: map[string]int{reasonNotFound: 2}, SplitOverwritten: 3,
		Errors: []ErrorAt{{At: 12300 * time.Millisecond, Op: opWrite, Key: 17, Code: "TIMEOUT"}}}
}

func TestTable(t *testing.T) {
	table := sampleReport().Table()
	for _, want := range []string{
		"duration           1m0s\n",
		"operations         15000 writes, 15000 reads: 500.0 ops/s\n",
		"availability       99.97% (29990 succeeded, 10 failed)\n",
		"errors by code     TIMEOUT 7, KEY_NOT_FOUND_ERROR 3\n",
		"longest write gap  1.234s\n",
		"acknowledged keys  2000\n",
		"lost               2 (0.10%) KEY_NOT_FOUND_ERROR 2, verified in 3s\n",
		"lost keys          [17 1999]\n",
		"split overwritten  3 kept keys lost their newest acknowledged write to a split's conflict resolution\n",
		"first errors       +12.3s write key 17 TIMEOUT\n                   (9 more)\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	many := sampleReport()
	many.Errors = nil
	for i := range maxErrors {
		many.Errors = append(many.Errors, ErrorAt{At: time.Duration(i) * time.Second, Op: opRead, Key: i, Code: "TIMEOUT"})
	}
	many.Failed = 70
	table = many.Table()
	if !strings.Contains(table, "+9s read key 9 TIMEOUT\n                   (60 more)\n") || strings.Contains(table, "key 10 ") {
		t.Errorf("a table shows the first %d errors, then how many more:\n%s", tableErrors, table)
	}
	unverified := Report{Duration: time.Second}.Table()
	if !strings.Contains(unverified, "lost               not verified\n") ||
		!strings.Contains(unverified, "errors by code     none\n") {
		t.Errorf("a snapshot's table:\n%s", unverified)
	}
	probed := Report{MaxUnreachableNode: 2500 * time.Millisecond}.Table()
	if !strings.Contains(probed, "longest node unreachable  2.5s\n") {
		t.Errorf("a table of a run that probed its nodes:\n%s", probed)
	}
}

func TestReportJSON(t *testing.T) {
	sample := sampleReport()
	sample.MaxUnreachableNode = 2500 * time.Millisecond
	b, err := json.Marshal(sample)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]any{"duration": "1m0s", "longestWriteGap": "1.234s", "verifyDuration": "3s",
		"maxUnreachableNode": "2.5s",
		"opsPerSec":          500.0, "acknowledged": 2000.0, "lost": 2.0, "splitOverwritten": 3.0, "errorsByCode": map[string]any{"TIMEOUT": 7.0,
			"KEY_NOT_FOUND_ERROR": 3.0},
		"errors": []any{map[string]any{"at": "12.3s", "op": "write", "key": 17.0, "code": "TIMEOUT"}}} {
		if !reflect.DeepEqual(fields[name], want) {
			t.Errorf("JSON %s = %#v, want %#v", name, fields[name], want)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sample) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", back, sample)
	}
}

// maxRetries is the error the client returns when it gave up retrying after inner: its
// chainErrors sets the unexported field wrapped, which only reflection reaches from here.
func maxRetries(inner error) error {
	outer := &as.AerospikeError{ResultCode: types.MAX_RETRIES_EXCEEDED}
	field := reflect.ValueOf(outer).Elem().FieldByName("wrapped")
	reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Set(reflect.ValueOf(&inner).Elem())
	return outer
}

func TestResultCode(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&as.AerospikeError{ResultCode: types.TIMEOUT}, "TIMEOUT"},
		{&as.AerospikeError{ResultCode: types.KEY_NOT_FOUND_ERROR}, "KEY_NOT_FOUND_ERROR"},
		{fmt.Errorf("put: %w", &as.AerospikeError{ResultCode: types.NETWORK_ERROR}), "NETWORK_ERROR"},
		{errors.New("not the client's"), "COMMON_ERROR"},
		{maxRetries(&as.AerospikeError{ResultCode: types.NETWORK_ERROR}), "NETWORK_ERROR"},
		{maxRetries(maxRetries(&as.AerospikeError{ResultCode: types.TIMEOUT})), "TIMEOUT"},
		{maxRetries(errors.New("dial tcp: connection refused")), "MAX_RETRIES_EXCEEDED"},
	}
	for _, c := range cases {
		if got := resultCode(c.err); got != c.want {
			t.Errorf("resultCode(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestStatistic(t *testing.T) {
	answer := "cluster_size=3;migrate_partitions_remaining=1234;uptime=5"
	cases := []struct {
		answer, name string
		want         int64
		ok           bool
	}{
		{answer, "migrate_partitions_remaining", 1234, true},
		{answer, "uptime", 5, true},
		{answer, "migrate", 0, false},
		{"migrate_partitions_remaining=x", "migrate_partitions_remaining", 0, false},
		{"", "uptime", 0, false},
	}
	for _, c := range cases {
		if got, ok := statistic(c.answer, c.name); got != c.want || ok != c.ok {
			t.Errorf("statistic(%q, %q) = %d, %v; want %d, %v", c.answer, c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{Seeds: []string{"a:3000"}}.withDefaults()
	if got.Namespace != "test" || got.Set != "workload" || got.Keys != 2000 || got.Rate != 500 || got.Workers != 8 ||
		got.OpTimeout != time.Second || got.VerifyTimeout != 2*time.Minute || got.Log == nil {
		t.Errorf("defaults: %+v", got)
	}
	if got := (Config{Keys: 3, Workers: 8}).withDefaults(); got.Workers != 3 {
		t.Errorf("workers with 3 keys = %d, want 3 (one key per worker at most)", got.Workers)
	}
}
