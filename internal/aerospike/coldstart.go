package aerospike

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A Community Edition asd always cold starts: it rebuilds each persistent namespace's index by reading
// its devices back before it opens its info and service ports, which takes minutes to hours on large
// devices. It answers nothing meanwhile; the only account of its progress is its log:
//
//	{test} beginning cold start
//	{test} loaded: objects 1200000 device-pcts (45)            (asd 5 and later)
//	{test} loaded 1200000 records, 0 subrecords, /dev/sdb 45%  (earlier releases, in Aerospike's own docs)
//	service ready: soon there will be cake!                    (the ports are open)

var (
	coldStartBegins = regexp.MustCompile(`\{([^}]+)\} beginning cold start`)
	coldStartTicker = regexp.MustCompile(`\{([^}]+)\} loaded:? (?:objects )?(\d+)(.*)$`)
	devicePercents  = regexp.MustCompile(`device-pcts \(([\d,]+)\)|(\d+)%`)
)

// serviceReady ends a start in asd's log: the ports are open.
const serviceReady = "service ready: soon there will be cake!"

// NamespaceLoad is one namespace's progress in a cold start.
type NamespaceLoad struct {
	Namespace string
	Records   int64 // records read back so far
	// Percent is how far the least advanced of its devices has been read (of the whole device: the
	// read ends where the data ends), -1 before the first ticker line.
	Percent int
}

// ColdStart is the progress of the cold start asd's log shows last, per namespace (sorted by name).
type ColdStart []NamespaceLoad

// ParseColdStart reads the cold start under way from asd's latest log lines (oldest first): ok is
// false when the lines show none (none began, or the last one ended with the ports open).
func ParseColdStart(lines []string) (ColdStart, bool) {
	var cs ColdStart
	loading := false
	for _, line := range lines {
		switch {
		case strings.Contains(line, serviceReady):
			cs, loading = nil, false
		case coldStartBegins.MatchString(line):
			if !loading {
				cs, loading = nil, true // a new start
			}
			cs = cs.with(NamespaceLoad{Namespace: coldStartBegins.FindStringSubmatch(line)[1], Percent: -1})
		default:
			if m := coldStartTicker.FindStringSubmatch(line); m != nil {
				records, _ := strconv.ParseInt(m[2], 10, 64)
				cs, loading = cs.with(NamespaceLoad{Namespace: m[1], Records: records, Percent: lowestPercent(m[3])}), true
			}
		}
	}
	return cs, loading
}

// with records a namespace's progress, replacing what was known of it.
func (cs ColdStart) with(l NamespaceLoad) ColdStart {
	i := slices.IndexFunc(cs, func(x NamespaceLoad) bool { return x.Namespace == l.Namespace })
	if i < 0 {
		cs = append(cs, l)
		slices.SortFunc(cs, func(a, b NamespaceLoad) int { return strings.Compare(a.Namespace, b.Namespace) })
		return cs
	}
	cs[i] = l
	return cs
}

// lowestPercent is the least advanced device's percentage in the rest of a ticker line (-1: none).
func lowestPercent(rest string) int {
	lowest := -1
	for _, m := range devicePercents.FindAllStringSubmatch(rest, -1) {
		for _, p := range strings.Split(m[1]+m[2], ",") {
			if v, err := strconv.Atoi(p); err == nil && (lowest < 0 || v < lowest) {
				lowest = v
			}
		}
	}
	return lowest
}

// Records is the number of records read back so far, over every namespace.
func (cs ColdStart) Records() int64 {
	var n int64
	for _, l := range cs {
		n += l.Records
	}
	return n
}

// String says it for a user: "loading data: test 1200000 records, 45 of 100 % of its devices read".
func (cs ColdStart) String() string {
	parts := make([]string, 0, len(cs))
	for _, l := range cs {
		p := fmt.Sprintf("%s %d records", l.Namespace, l.Records)
		if l.Percent >= 0 {
			p += fmt.Sprintf(", %d of 100 %% of its devices read", l.Percent)
		}
		parts = append(parts, p)
	}
	return "loading data: " + strings.Join(parts, "; ")
}
