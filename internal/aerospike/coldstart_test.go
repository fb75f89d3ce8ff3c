package aerospike

import (
	"reflect"
	"testing"
)

func TestParseColdStart(t *testing.T) {
	const ts = "Dec 03 2026 07:00:00 GMT: "
	for _, tc := range []struct {
		name    string
		lines   []string
		want    ColdStart
		loading bool
	}{
		{"no start in the lines", []string{ts + "INFO (info): some other line"}, nil, false},
		{"began, no ticker yet", []string{ts + "INFO (namespace): {test} beginning cold start"},
			ColdStart{{Namespace: "test", Percent: -1}}, true},
		{"ticker lines of two namespaces, the latest wins", []string{
			ts + "INFO (namespace): {test} beginning cold start",
			ts + "INFO (namespace): {bar} beginning cold start",
			ts + "INFO (drv_ssd): {test} loaded: objects 1000 device-pcts (10,12)",
			ts + "INFO (drv_ssd): {bar} loaded: objects 5 device-pcts (1)",
			ts + "INFO (drv_ssd): {test} loaded: objects 2000 device-pcts (33,20)",
		}, ColdStart{{Namespace: "bar", Records: 5, Percent: 1}, {Namespace: "test", Records: 2000, Percent: 20}}, true},
		// As a real asd 8.1.2.0 logs a cold start of 4 000 000 records from a file (measured; the {bar} line is
		// the ticker's other format in its drv_ssd.c, with tombstones): its ticker writes every 5 s.
		{"a real asd 8.1.2.0's lines", []string{
			"Dec 06 2026 16:50:34 GMT: INFO (namespace): (namespace_ce.c:85) {test} beginning cold start",
			"Dec 06 2026 16:50:34 GMT: INFO (drv_ssd): (drv_ssd.c:3721) opened file /opt/aerospike/data/test.dat: usable size 4294967296",
			"Dec 06 2026 16:50:34 GMT: INFO (drv_ssd): (drv_ssd.c:1058) /opt/aerospike/data/test.dat has 512 wblocks of size 8388608",
			"Dec 06 2026 16:50:34 GMT: INFO (drv_ssd): (drv_ssd.c:2900) device /opt/aerospike/data/test.dat: reading device to load index",
			"Dec 06 2026 16:50:39 GMT: INFO (drv_ssd): (drv_ssd.c:4001) {test} loaded: objects 2919774 device-pcts (7)",
			"Dec 06 2026 16:50:44 GMT: INFO (drv_ssd): {bar} loaded: objects 10 tombstones 2 device-pcts (3,4)",
		}, ColdStart{{Namespace: "bar", Records: 10, Percent: 3}, {Namespace: "test", Records: 2919774, Percent: 7}}, true},
		{"a real asd 8.1.2.0's load that ended", []string{
			"Dec 06 2026 16:50:39 GMT: INFO (drv_ssd): (drv_ssd.c:4001) {test} loaded: objects 2919774 device-pcts (7)",
			"Dec 06 2026 16:50:42 GMT: INFO (drv_ssd): (drv_ssd.c:3003) device /opt/aerospike/data/test.dat: read complete: UNIQUE 4000000 (REPLACED 0) (OLDER 0) (EXPIRED 0) (EVICTED 0) (UNOWNED 0) (DROPPED 0) (UNPARSABLE 0) records",
			"Dec 06 2026 16:50:42 GMT: INFO (drv_ssd): (drv_ssd.c:1026) {test} loading free & defrag queues",
			"Dec 06 2026 16:50:42 GMT: INFO (as): (as.c:464) service ready: soon there will be cake!",
		}, nil, false},
		{"the older form in Aerospike's docs", []string{
			"Jul 26 2016 23:43:17 GMT-0400: INFO (drv_ssd): (drv_ssd.c:3974) {ns1} loaded 790764 records, 0 subrecords, /dev/sdb 0%",
			"Dec 25 2014 14:10:12 GMT: INFO (drv_ssd): (drv_ssd.c::4109) {cm} loaded 1476631870 records, /dev/sdb1 69%, /dev/sdc1 68%",
		}, ColdStart{{Namespace: "cm", Records: 1476631870, Percent: 68}, {Namespace: "ns1", Records: 790764, Percent: 0}}, true},
		{"ended: the ports are open", []string{
			ts + "INFO (drv_ssd): {test} loaded: objects 2000 device-pcts (66)",
			ts + "INFO (drv_ssd): {test} read complete: UNIQUE 3000 (REPLACED 0) (OLDER 0) (EXPIRED 0) (EVICTED 0) records",
			ts + "INFO (as): service ready: soon there will be cake!",
		}, nil, false},
		{"a new start after an earlier one ended", []string{
			ts + "INFO (drv_ssd): {test} loaded: objects 2000 device-pcts (66)",
			ts + "INFO (as): service ready: soon there will be cake!",
			ts + "INFO (as): SIGUSR1 to tini: restarting asd",
			ts + "INFO (namespace): {test} beginning cold start",
		}, ColdStart{{Namespace: "test", Percent: -1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, loading := ParseColdStart(tc.lines)
			if loading != tc.loading || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v loading=%v, want %+v loading=%v", got, loading, tc.want, tc.loading)
			}
		})
	}
	cs := ColdStart{{Namespace: "bar", Records: 5, Percent: -1}, {Namespace: "test", Records: 2000, Percent: 33}}
	if got, want := cs.String(), "loading data: bar 5 records; test 2000 records, 33 of 100 % of its devices read"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if cs.Records() != 2005 {
		t.Fatalf("Records() = %d", cs.Records())
	}
}
