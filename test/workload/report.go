package workload

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Sizes of a report's lists.
const (
	maxErrors   = 50 // Report.Errors
	maxLostKeys = 20 // Report.LostKeys
	tableErrors = 10 // the first errors a table shows
)

// Report is what a run measured. Durations are Go duration strings in JSON ("1.5s").
type Report struct {
	Duration  time.Duration `json:"duration"` // of the load, without the verification
	Writes    int           `json:"writes"`
	Reads     int           `json:"reads"`
	Succeeded int           `json:"succeeded"`
	Failed    int           `json:"failed"`
	OpsPerSec float64       `json:"opsPerSec"`
	// ErrorsByCode counts the failed operations by result code name (types.ResultCode.String)
	// or the workload's own STALE_READ and WRONG_VALUE.
	ErrorsByCode    map[string]int `json:"errorsByCode"`
	Availability    float64        `json:"availability"`    // % of the operations that succeeded
	LongestWriteGap time.Duration  `json:"longestWriteGap"` // the longest time without a successful write
	// MaxUnreachableNode (Config.ProbeNodes) is the longest time a node the client held did not
	// answer a TCP dial, from the first probe it failed to the first it passed (or to the end).
	MaxUnreachableNode time.Duration `json:"maxUnreachableNode"`
	Acknowledged       int           `json:"acknowledged"` // keys with at least one acknowledged write
	// Verified is true in Stop's report: Lost, LostKeys and LostByReason are then counted.
	Verified       bool           `json:"verified"`
	VerifyDuration time.Duration  `json:"verifyDuration"`
	Lost           int            `json:"lost"`
	LostKeys       []int          `json:"lostKeys"`     // the first maxLostKeys lost keys, in order
	LostByReason   map[string]int `json:"lostByReason"` // KEY_NOT_FOUND_ERROR, OLDER_VALUE, WRONG_VALUE or a read's result code
	// SplitOverwritten (SplitTolerant) counts the kept keys whose newest acknowledged write did not
	// survive: a split's conflict resolution chose another copy. Without the flag they are lost.
	SplitOverwritten int       `json:"splitOverwritten"`
	Errors           []ErrorAt `json:"errors"` // the first maxErrors failed operations
}

// ErrorAt is one failed operation.
type ErrorAt struct {
	At   time.Duration `json:"at"` // since the load began, when the operation ended
	Op   string        `json:"op"` // "write" or "read"
	Key  int           `json:"key"`
	Code string        `json:"code"`
}

// Operations.
const (
	opWrite = "write"
	opRead  = "read"
)

// outcome is one operation's result; code "" is a success.
type outcome struct {
	op       string
	key      int
	at       time.Time // when it ended
	code     string
	firstAck bool // a write that is its key's first acknowledged one
}

// tally adds up outcomes. Not safe for concurrent use.
type tally struct {
	start        time.Time
	writes       int
	reads        int
	succeeded    int
	failed       int
	byCode       map[string]int
	errors       []ErrorAt
	gap          gapTracker
	outages      outageTracker
	acknowledged int
}

func newTally(start time.Time) *tally {
	return &tally{start: start, byCode: map[string]int{}, gap: gapTracker{last: start},
		outages: outageTracker{since: map[string]time.Time{}}}
}

func (t *tally) add(o outcome) {
	if o.op == opWrite {
		t.writes++
	} else {
		t.reads++
	}
	if o.code == "" {
		t.succeeded++
		if o.op == opWrite {
			t.gap.written(o.at)
		}
		if o.firstAck {
			t.acknowledged++
		}
		return
	}
	t.failed++
	t.byCode[o.code]++
	if len(t.errors) < maxErrors {
		t.errors = append(t.errors, ErrorAt{At: o.at.Sub(t.start), Op: o.op, Key: o.key, Code: o.code})
	}
}

// report is the figures up to end.
func (t *tally) report(end time.Time) Report {
	d := end.Sub(t.start)
	r := Report{Duration: d, Writes: t.writes, Reads: t.reads, Succeeded: t.succeeded, Failed: t.failed,
		ErrorsByCode: maps.Clone(t.byCode), LongestWriteGap: t.gap.longestUpTo(end),
		MaxUnreachableNode: t.outages.longestUpTo(end),
		Acknowledged:       t.acknowledged, Errors: slices.Clone(t.errors), LostByReason: map[string]int{}}
	if d > 0 {
		r.OpsPerSec = float64(t.writes+t.reads) / d.Seconds()
	}
	r.Availability = availability(t.succeeded, t.failed)
	return r
}

// availability is the % of operations that succeeded; 0 when there were none, so that a run that
// did nothing never looks available.
func availability(succeeded, failed int) float64 {
	if succeeded+failed == 0 {
		return 0
	}
	return 100 * float64(succeeded) / float64(succeeded+failed)
}

// gapTracker measures the longest time without a successful write, from the start of the load:
// the time before the first success and after the last one count too.
type gapTracker struct {
	last    time.Time
	longest time.Duration
}

func (g *gapTracker) written(at time.Time) {
	if d := at.Sub(g.last); d > g.longest {
		g.longest = d
	}
	if at.After(g.last) {
		g.last = at
	}
}

func (g gapTracker) longestUpTo(end time.Time) time.Duration {
	return max(g.longest, end.Sub(g.last))
}

// outageTracker measures the longest time a node stayed unreachable, by the probes' results: from
// its first failed probe to its first passed one, or to the last probe that still found it among
// the client's nodes, or (while it lasts) to the report.
type outageTracker struct {
	since   map[string]time.Time // node name → its first failed probe of the outage going on
	longest time.Duration
}

// probed records one round of probes (node name → reached) made at.
func (o *outageTracker) probed(reached map[string]bool, at time.Time) {
	for name, since := range o.since {
		if ok, held := reached[name]; ok || !held {
			o.longest = max(o.longest, at.Sub(since))
			delete(o.since, name)
		}
	}
	for name, ok := range reached {
		if _, down := o.since[name]; !ok && !down {
			o.since[name] = at
		}
	}
}

func (o outageTracker) longestUpTo(end time.Time) time.Duration {
	longest := o.longest
	for _, since := range o.since {
		longest = max(longest, end.Sub(since))
	}
	return longest
}

// setLost fills in the verification's figures from the reason each lost key was lost for.
func (r *Report) setLost(lost map[int]string, overwritten int, took time.Duration) {
	r.Verified, r.VerifyDuration, r.Lost, r.SplitOverwritten = true, took, len(lost), overwritten
	keys := slices.Sorted(maps.Keys(lost))
	r.LostKeys = keys[:min(len(keys), maxLostKeys)]
	r.LostByReason = countBy(lost, func(reason string) string { return reason })
}

// LostPercent is the share of the acknowledged keys that were lost.
func (r Report) LostPercent() float64 {
	if r.Acknowledged == 0 {
		return 0
	}
	return 100 * float64(r.Lost) / float64(r.Acknowledged)
}

// Table is the report for people.
func (r Report) Table() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		_, _ = fmt.Fprintf(w, "%s\t"+format+"\n", append([]any{name}, args...)...)
	}
	row("duration", "%s", r.Duration.Round(time.Millisecond))
	row("operations", "%d writes, %d reads: %.1f ops/s", r.Writes, r.Reads, r.OpsPerSec)
	row("availability", "%.2f%% (%d succeeded, %d failed)", r.Availability, r.Succeeded, r.Failed)
	row("errors by code", "%s", counts(r.ErrorsByCode))
	row("longest write gap", "%s", r.LongestWriteGap.Round(time.Millisecond))
	if r.MaxUnreachableNode > 0 {
		row("longest node unreachable", "%s", r.MaxUnreachableNode.Round(time.Millisecond))
	}
	row("acknowledged keys", "%d", r.Acknowledged)
	if r.Verified {
		row("lost", "%d (%.2f%%) %s, verified in %s", r.Lost, r.LostPercent(), counts(r.LostByReason),
			r.VerifyDuration.Round(time.Millisecond))
		if r.Lost > 0 {
			row("lost keys", "%v", r.LostKeys)
		}
		if r.SplitOverwritten > 0 {
			row("split overwritten", "%d kept keys lost their newest acknowledged write to a split's conflict resolution",
				r.SplitOverwritten)
		}
	} else {
		row("lost", "not verified")
	}
	for i, e := range r.Errors[:min(len(r.Errors), tableErrors)] {
		name := ""
		if i == 0 {
			name = "first errors"
		}
		row(name, "+%s %s key %d %s", e.At.Round(time.Millisecond), e.Op, e.Key, e.Code)
	}
	if more := r.Failed - min(len(r.Errors), tableErrors); more > 0 && len(r.Errors) > 0 {
		row("", "(%d more)", more)
	}
	_ = w.Flush()
	return b.String()
}

// counts renders a count map as "A 3, B 1", the largest first.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	names := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(parts, ", ")
}

// The JSON forms carry durations as Go duration strings; their fields shadow the durations.
type (
	reportFields  Report
	errorAtFields ErrorAt
	reportJSON    struct {
		reportFields
		Duration           jsonDuration `json:"duration"`
		LongestWriteGap    jsonDuration `json:"longestWriteGap"`
		MaxUnreachableNode jsonDuration `json:"maxUnreachableNode"`
		VerifyDuration     jsonDuration `json:"verifyDuration"`
	}
	errorAtJSON struct {
		errorAtFields
		At jsonDuration `json:"at"`
	}
	jsonDuration time.Duration
)

func (d jsonDuration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *jsonDuration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = jsonDuration(v)
	return err
}

// MarshalJSON writes durations as "1.5s".
func (r Report) MarshalJSON() ([]byte, error) {
	return json.Marshal(reportJSON{reportFields: reportFields(r), Duration: jsonDuration(r.Duration),
		LongestWriteGap: jsonDuration(r.LongestWriteGap), MaxUnreachableNode: jsonDuration(r.MaxUnreachableNode),
		VerifyDuration: jsonDuration(r.VerifyDuration)})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (r *Report) UnmarshalJSON(b []byte) error {
	var v reportJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Report(v.reportFields)
	r.Duration, r.LongestWriteGap, r.VerifyDuration = time.Duration(v.Duration), time.Duration(v.LongestWriteGap),
		time.Duration(v.VerifyDuration)
	r.MaxUnreachableNode = time.Duration(v.MaxUnreachableNode)
	return nil
}

// MarshalJSON writes At as "1.5s".
func (e ErrorAt) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorAtJSON{errorAtFields: errorAtFields(e), At: jsonDuration(e.At)})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *ErrorAt) UnmarshalJSON(b []byte) error {
	var v errorAtJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = ErrorAt(v.errorAtFields)
	e.At = time.Duration(v.At)
	return nil
}
