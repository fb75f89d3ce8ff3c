package live

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/acko-io/acko/internal/config/params"
)

// The facts of a real 8.1.2.0 server (testdata, copied from ../shared/fixtures/aerospike-ce-8.1.2.0/dynamic):
// the file it ran, the requests it took, and its answers.

func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// request is the request a fixture answered: the text before the tab.
func request(t *testing.T, name string) string {
	t.Helper()
	req, answer, _ := strings.Cut(fixture(t, name), "\t")
	if strings.TrimSpace(answer) != "ok" {
		t.Fatalf("%s: the server did not take %q: %q", name, req, answer)
	}
	return req
}

func table812(t *testing.T) *params.Table {
	t.Helper()
	v, _ := params.ParseVersion("8.1.2")
	tb, _, err := params.Select(v)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// edit changes the fixture's file: each pair replaces old by new.
func edit(t *testing.T, conf string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(conf, pairs[i]) {
			t.Fatalf("no %q in the file", pairs[i])
		}
		conf = strings.Replace(conf, pairs[i], pairs[i+1], 1)
	}
	return conf
}

func commands(p Plan) []string {
	out := make([]string, 0, len(p.Steps))
	for _, s := range p.Steps {
		out = append(out, s.Command)
	}
	return out
}

// assertConfirmed holds every read of the plan's steps to the answer the server gave afterwards.
func assertConfirmed(t *testing.T, p Plan, answers map[string]string) {
	t.Helper()
	for _, s := range p.Steps {
		for _, r := range s.Confirm {
			answer, ok := answers[r.Command]
			if !ok {
				t.Fatalf("no answer to %s in the fixtures", r.Command)
			}
			if !r.Confirmed(answer) {
				t.Errorf("%s: %s=%s not in the server's answer %q", s.Command, r.Name, r.Value, answer)
			}
		}
	}
}

func TestLiveChangesAsTheServerTookThem(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	tb := table812(t)
	final := map[string]string{
		"get-config:context=service":           fixture(t, "get-config-service-final.txt"),
		"get-config:context=namespace;id=test": fixture(t, "get-config-namespace-test-final.txt"),
		"get-config:context=network":           fixture(t, "get-config-network-after-sets.txt"),
	}
	tests := []struct {
		name    string
		desired string
		want    []string
		answers map[string]string
	}{
		{"a service parameter", edit(t, running, "proto-fd-max 15000", "proto-fd-max 20000"),
			[]string{request(t, "set-service-proto-fd-max-20000.txt")},
			map[string]string{"get-config:context=service": fixture(t, "get-config-service-after-set.txt")}},
		{"two parameters of one context, in one request", edit(t, running,
			"proto-fd-max 15000", "proto-fd-max 20000\n\tmigrate-threads 3"),
			[]string{"set-config:context=service;migrate-threads=3;proto-fd-max=20000"}, final},
		{"default-ttl after nsup-period, each on its own", edit(t, running,
			"replication-factor 2", "replication-factor 2\n\tdefault-ttl 100\n\tnsup-period 2m"),
			[]string{request(t, "set-namespace-test-nsup-period-120.txt"),
				request(t, "set-namespace-test-default-ttl-100-after-nsup.txt")},
			map[string]string{"get-config:context=namespace;id=test": fixture(t, "get-config-namespace-test-after-sets.txt")}},
		{"storage-engine parameters without their prefix, read back with it", edit(t, running,
			"data-size 1G", "data-size 1G\n\t\tdefrag-lwm-pct 60\n\t\tstop-writes-used-pct 80"),
			[]string{"set-config:context=namespace;id=test;defrag-lwm-pct=60;stop-writes-used-pct=80"}, final},
		{"a network parameter with its sub-context", edit(t, running, "port 3001", "port 3001\n\t\tchannel-bulk-recv-threads 6"),
			[]string{request(t, "set-network-fabric-channel-bulk-recv-threads.txt")}, final},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compute(running, tt.desired, tb)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Live() || len(p.Logging) > 0 {
				t.Fatalf("plan = %+v, want live steps only", p)
			}
			if got := commands(p); !slices.Equal(got, tt.want) {
				t.Errorf("commands:\n got  %q\n want %q", got, tt.want)
			}
			assertConfirmed(t, p, tt.answers)
		})
	}
}

// Logging goes through log-set on the sink "logs" names, and is confirmed by log/<id>.
func TestLogLevels(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	p, err := Compute(running, edit(t, running, "context any info", "context any info\n\t\tcontext misc info"), table812(t))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Live() || len(p.Steps) > 0 || len(p.Logging) != 1 {
		t.Fatalf("plan = %+v, want one log level", p)
	}
	l := p.Logging[0]
	if !reflect.DeepEqual(l, LogLevel{Sink: "stderr", Context: "misc", Level: "info"}) {
		t.Fatalf("log level = %+v", l)
	}
	id, ok := SinkID(fixture(t, "logs.txt"), l.Sink)
	if !ok || id != "0" {
		t.Fatalf("SinkID = %q, %v; want 0", id, ok)
	}
	step := l.Step(id)
	if want := request(t, "log-set-id0-misc-info.txt"); step.Command != want {
		t.Errorf("command %q, want %q", step.Command, want)
	}
	if r := step.Confirm[0]; r.Command != "log/0" || !r.Confirmed(fixture(t, "log-0.txt")) {
		t.Errorf("read %+v not confirmed by %s", r, "log-0.txt")
	}
	if _, ok := SinkID(fixture(t, "logs.txt"), "/var/log/aerospike.log"); ok {
		t.Error("a sink the server does not have has an id")
	}
}

// warning is the fixture's log/0 answer with every context at WARNING but those set.
func warning(t *testing.T, set map[string]string) string {
	t.Helper()
	answer := strings.ReplaceAll(fixture(t, "log-0.txt"), ":INFO", ":WARNING")
	for ctx, level := range set {
		answer = strings.Replace(answer, ";"+ctx+":WARNING;", ";"+ctx+":"+level+";", 1)
	}
	return answer
}

// "any" sets every context of the sink, live as at start: a changed "any" is set, then the contexts
// the file sets after it again (a real server's hb debug became WARNING when any was set to warning
// alone), and it is confirmed by every context log/<id> lists, since it never lists "any".
func TestLogContextAny(t *testing.T) {
	running := edit(t, fixture(t, "aerospike.conf"), "context any info", "context any info\n\t\tcontext hb debug")
	desired := edit(t, running, "context any info", "context any warning")
	p, err := Compute(running, desired, table812(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []LogLevel{{Sink: "stderr", Context: "any", Level: "warning", Later: []string{"hb"}},
		{Sink: "stderr", Context: "hb", Level: "debug"}}
	if !p.Live() || !reflect.DeepEqual(p.Logging, want) {
		t.Fatalf("logging = %+v, want %+v", p.Logging, want)
	}
	anyRead := p.Logging[0].Step("0").Confirm[0]
	if anyRead.Command != "log/0" || p.Logging[0].Step("0").Command != "log-set:id=0;any=warning" {
		t.Fatalf("step %+v", p.Logging[0].Step("0"))
	}
	for name, tc := range map[string]struct {
		answer string
		want   bool
	}{
		"every context at the new level":             {warning(t, nil), true},
		"hb, set again next, still at the old level": {warning(t, map[string]string{"hb": "DEBUG"}), true},
		"one context left at the old level":          {warning(t, map[string]string{"migrate": "INFO"}), false},
		"the answer before the change":               {fixture(t, "log-0.txt"), false},
		"a refusal":                                  {"ERROR::bad-id", false},
	} {
		if got := anyRead.Confirmed(tc.answer); got != tc.want {
			t.Errorf("%s: Confirmed = %v, want %v", name, got, tc.want)
		}
	}
	hbRead := p.Logging[1].Step("0").Confirm[0]
	if !hbRead.Confirmed(warning(t, map[string]string{"hb": "DEBUG"})) || hbRead.Confirmed(warning(t, nil)) {
		t.Errorf("hb read %+v", hbRead)
	}
}

// A context set before "any" is overridden by it at start; changed, the sink is set again in the
// file's order, so that the node ends as a restart would leave it.
func TestLogContextBeforeAny(t *testing.T) {
	running := edit(t, fixture(t, "aerospike.conf"), "context any info", "context misc debug\n\t\tcontext any info")
	p, err := Compute(running, edit(t, running, "context misc debug", "context misc detail"), table812(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []LogLevel{{Sink: "stderr", Context: "misc", Level: "detail"}, {Sink: "stderr", Context: "any", Level: "info"}}
	if !reflect.DeepEqual(p.Logging, want) {
		t.Errorf("logging = %+v, want %+v", p.Logging, want)
	}
	// after "any": only the changed context
	running = edit(t, fixture(t, "aerospike.conf"), "context any info", "context any info\n\t\tcontext misc debug\n\t\tcontext hb debug")
	p, err = Compute(running, edit(t, running, "context misc debug", "context misc detail"), table812(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := []LogLevel{{Sink: "stderr", Context: "misc", Level: "detail"}}; !reflect.DeepEqual(p.Logging, want) {
		t.Errorf("logging = %+v, want %+v", p.Logging, want)
	}
}

// replication-factor, static in the table, is what a real server took live (set-config answered ok,
// get-config reported 3): it goes to every node together, beside the changes each node takes on its own.
func TestReplicationFactorGoesToEveryNodeTogether(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	desired := edit(t, running, "replication-factor 2", "replication-factor 3", "proto-fd-max 15000", "proto-fd-max 20000")
	p, err := Compute(running, desired, table812(t))
	if err != nil {
		t.Fatal(err)
	}
	sent := strings.TrimSuffix(fixture(t, "set-namespace-test-replication-factor-3.txt"), "\tok\n")
	if len(p.Together) != 1 || p.Together[0].Command != sent || p.Live() || !slices.Equal(commands(p),
		[]string{"set-config:context=service;proto-fd-max=20000"}) {
		t.Fatalf("plan %+v: want %q together and proto-fd-max on its own", p, sent)
	}
	after := fixture(t, "get-config-namespace-test-after-sets.txt")
	before := strings.Replace(after, "replication-factor=3", "replication-factor=2", 1)
	if confirm := p.Together[0].Confirm; len(confirm) != 1 || !confirm[0].Confirmed(after) || confirm[0].Confirmed(before) {
		t.Errorf("confirm %+v: want replication-factor=3 read back", confirm)
	}
	if back, err := Compute(desired, running, table812(t)); err != nil || !maps.Equal(back.Factors, map[string]string{"test": "2"}) {
		t.Errorf("3 back to 2: plan %+v, %v; want replication-factor=2 together", back, err)
	}
}

// The geo2dsphere-within parameters a real server takes live: set with a hyphen, read with a dot.
func TestGeo2dsphereWithin(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	desired := edit(t, running, "replication-factor 2", "replication-factor 2\n\tgeo2dsphere-within {\n\t\tmax-cells 13\n\t\tmin-level 2\n\t}")
	p, err := Compute(running, desired, table812(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"set-config:context=namespace;id=test;geo2dsphere-within-max-cells=13;geo2dsphere-within-min-level=2"}
	if got := commands(p); !p.Live() || !slices.Equal(got, want) {
		t.Fatalf("plan %+v, want %q", p, want)
	}
	after := strings.Replace(fixture(t, "get-config-namespace-test-final.txt"), "geo2dsphere-within.max-cells=12",
		"geo2dsphere-within.max-cells=13", 1)
	after = strings.Replace(after, "geo2dsphere-within.min-level=1", "geo2dsphere-within.min-level=2", 1)
	assertConfirmed(t, p, map[string]string{"get-config:context=namespace;id=test": after})
	strict := edit(t, desired, "max-cells 13", "strict false")
	if p, err := Compute(running, strict, table812(t)); err != nil || p.Live() {
		t.Errorf("a static geo2dsphere-within parameter: plan %+v, %v; want a restart", p, err)
	}
	if p, err := Compute(desired, running, table812(t)); err != nil || p.Live() {
		t.Errorf("the block removed: plan %+v, %v; want a restart (the defaults come back at start)", p, err)
	}
}

func TestRestarts(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	tests := []struct{ name, desired, want string }{
		{"a static parameter", edit(t, running, "work-directory /opt/aerospike", "work-directory /var/aerospike"),
			"service/work-directory changes from /opt/aerospike to /var/aerospike: the server reads it only at start"},
		{"a static change with a dynamic one: nothing applies live", edit(t, running,
			"proto-fd-max 15000", "proto-fd-max 20000", "work-directory /opt/aerospike", "work-directory /var/aerospike"),
			"service/work-directory changes from /opt/aerospike to /var/aerospike: the server reads it only at start"},
		{"a static storage parameter", edit(t, running, "data-size 1G", "data-size 2G"),
			"namespace test/storage-engine memory/data-size changes from 1073741824 to 2147483648: the server reads it " +
				"only at start"},
		{"replication-factor with a static change", edit(t, running, "replication-factor 2", "replication-factor 3",
			"work-directory /opt/aerospike", "work-directory /var/aerospike"),
			"namespace test/replication-factor changes with a change that needs a restart: a node restarted with " +
				"another replication-factor does not rejoin the others, so it must change alone"},
		{"a dynamic parameter removed", edit(t, running, "\tproto-fd-max 15000\n", ""),
			"service/proto-fd-max is removed: a restart restores its default (a running server keeps the value it has, " +
				"and the table's default is not always the server's)"},
		{"cluster-name", edit(t, running, "cluster-name fixtures", "cluster-name other"),
			"service/cluster-name changes from fixtures to other: nodes join by cluster name (the webhook refuses the change)"},
		{"the heartbeat interval", edit(t, running, "interval 150", "interval 200"),
			"network/heartbeat/interval changes from 150 to 200: every node of the cluster must change it at once, which " +
				"a node-by-node change cannot do"},
		{"a namespace added", running + "\nnamespace bar {\n\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n}\n",
			"namespace bar is added: the server builds it only at start"},
		{"a storage engine changed", edit(t, running, "storage-engine memory {\n\t\tdata-size 1G",
			"storage-engine device {\n\t\tfile /opt/aerospike/data/test.dat\n\t\tfilesize 1G"),
			"namespace test/storage-engine memory is removed: the server builds it only at start"},
		{"a set's parameter (no live form known)", edit(t, running, "replication-factor 2",
			"replication-factor 2\n\tset users {\n\t}"), "namespace test/set users is added: the server builds it only at start"},
		{"a log sink added", edit(t, running, "logging {", "logging {\n\tfile /var/log/aerospike.log {\n\t\tcontext any info\n\t}"),
			"logging/file /var/log/aerospike.log is added: the server builds it only at start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compute(running, tt.desired, table812(t))
			if err != nil {
				t.Fatal(err)
			}
			if p.Live() || len(p.Steps) > 0 || len(p.Logging) > 0 || !slices.Contains(p.Restart, tt.want) {
				t.Errorf("plan = %+v\nwant a restart for %q", p, tt.want)
			}
		})
	}
}

func TestNoChange(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	for name, desired := range map[string]string{
		"the same file":                 running,
		"the same value in other units": edit(t, running, "data-size 1G", "data-size 1024M"),
		"other mesh seeds":              edit(t, running, "mode mesh", "mode mesh\n\t\tmesh-seed-address-port a-1.x 3002"),
		"comments and spacing":          "# a comment\n" + strings.ReplaceAll(running, "\t", "    "),
	} {
		p, err := Compute(running, desired, table812(t))
		if err != nil || !p.Empty() || !p.Live() {
			t.Errorf("%s: plan %+v, %v; want no change", name, p, err)
		}
	}
}

func TestRefusesWhatTheServerRefuses(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	if _, err := Compute(running, edit(t, running, "proto-fd-max 15000", "proto-fd-max 100"), table812(t)); err == nil ||
		err.Error() != "the server refuses the desired config: line 4 :: proto-fd-max must be >= 1024 and <= 2147483647, not 100" {
		t.Errorf("err = %v", err)
	}
	if _, err := Compute("service {", running, table812(t)); err == nil ||
		!strings.HasPrefix(err.Error(), "the running config: line 1 :: block 'service' is not closed") {
		t.Errorf("err = %v", err)
	}
}

func TestConfirmed(t *testing.T) {
	r := Read{Command: "get-config:context=service", Name: "proto-fd-max", Value: "20000"}
	for answer, want := range map[string]bool{
		"proto-fd-max=20000": true,
		"get-config:context=service\tmigrate-threads=1;proto-fd-max=20000\n": true,
		"proto-fd-max=15000":      false,
		"proto-fd-max-x=20000":    false,
		"ERROR:4:invalid context": false,
		"":                        false,
	} {
		if got := r.Confirmed(answer); got != want {
			t.Errorf("Confirmed(%q) = %v, want %v", answer, got, want)
		}
	}
}

// A real 8.1.2.0 server refuses to change microsecond-histograms while any enable-benchmarks-* is on: the
// benchmark histograms go off before it goes on, and it goes off before they go on, whatever the contexts'
// own order (the service comes first otherwise).
func TestHistogramSwitchesAroundTheBenchmarks(t *testing.T) {
	running := fixture(t, "aerospike.conf")
	benchmarks := edit(t, edit(t, running, "replication-factor 2", "replication-factor 2\n\tenable-benchmarks-read true"),
		"proto-fd-max 15000", "proto-fd-max 15000\n\tmicrosecond-histograms false")
	histograms := edit(t, edit(t, benchmarks, "enable-benchmarks-read true", "enable-benchmarks-read false"),
		"microsecond-histograms false", "microsecond-histograms true")
	for _, tt := range []struct {
		name, from, to string
		want           []string
	}{
		{"benchmarks off, then microsecond-histograms on", benchmarks, histograms, []string{
			"set-config:context=namespace;id=test;enable-benchmarks-read=false",
			"set-config:context=service;microsecond-histograms=true"}},
		{"microsecond-histograms off, then benchmarks on", histograms, benchmarks, []string{
			"set-config:context=service;microsecond-histograms=false",
			"set-config:context=namespace;id=test;enable-benchmarks-read=true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compute(tt.from, tt.to, table812(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := commands(p); !p.Live() || !slices.Equal(got, tt.want) {
				t.Errorf("plan %+v, commands:\n got  %q\n want %q", p, got, tt.want)
			}
		})
	}
}
