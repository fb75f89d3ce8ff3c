package aerosim

import (
	"bytes"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acko-io/acko/internal/config/conffile"
)

// readmeOrder is the order dynamic/README.md lists the requests in: the server's state carries over
// from one to the next.
func readmeOrder(t *testing.T) []string {
	t.Helper()
	readme, err := fs.ReadFile(Fixtures(), "dynamic/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(readme)) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| file") {
			continue
		}
		for name := range strings.SplitSeq(strings.TrimSpace(cells[1]), ", ") {
			out = append(out, name+".txt")
		}
	}
	return out
}

// A node started on the real server's file, asked what the real server was asked in the same order,
// answers every file byte for byte.
func TestReplayDynamicFixtures(t *testing.T) {
	order := readmeOrder(t)
	all, _ := fs.Glob(Fixtures(), "dynamic/*.txt")
	if len(order) != len(all) {
		t.Fatalf("README lists %d requests, %d files exist", len(order), len(all))
	}
	conf, _ := fs.ReadFile(Fixtures(), "dynamic/aerospike.conf")
	s := newSim(t, Options{})
	st := addNode(t, s, NodeSpec{Name: "fixture", Config: string(conf), Image: "aerospike:ce-8.1.2.0"})
	for _, name := range order {
		want, err := fs.ReadFile(Fixtures(), path.Join("dynamic", name))
		if err != nil {
			t.Fatal(err)
		}
		cmd, _, _ := strings.Cut(string(want), "\t")
		got, err := exchange(st.Addr, cmd)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	if st := mustNode(t, s, "fixture"); !st.ConfigDiffers || st.ClusterName != "fixtures2" {
		t.Errorf("after the sets: %+v", st)
	}
}

// set-config changes the running values only: a restart reloads the file.
func TestRestartReloadsTheFile(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	st := addNode(t, s, NodeSpec{Name: "a", Config: conf("db")})
	cmd := "set-config:context=service;proto-fd-max=20000"
	if body, err := exchange(st.Addr, cmd); err != nil || string(body) != cmd+"\tok\n" {
		t.Fatalf("%q, %v", body, err)
	}
	if !mustNode(t, s, "a").ConfigDiffers {
		t.Fatal("running values differ from the file")
	}
	if _, err := s.WarmRestart("a"); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	body, err := exchange(st.Addr, "get-config:context=service")
	if err != nil || !strings.Contains(string(body), ";proto-fd-max=15000;") {
		t.Fatalf("after a restart: %q, %v", body, err)
	}
	if mustNode(t, s, "a").ConfigDiffers {
		t.Error("a restart loads the file: nothing differs")
	}
}

// get-config of another node's file: its own values in the server's units, its namespaces, the
// defaults where the real server's file set something it does not.
func TestGetConfigFollowsTheFile(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	text := strings.Replace(conf("db"), "\treplication-factor 2\n", "\treplication-factor 1\n\tdefault-ttl 0\n", 1) +
		"namespace cache {\n\tstorage-engine memory {\n\t\tdata-size 2G\n\t}\n}\n"
	st := addNode(t, s, NodeSpec{Name: "a", Config: text})
	for cmd, want := range map[string][]string{
		"get-config:context=service": {"cluster-name=db", "node-id=" + st.NodeID, "proto-fd-max=15000"},
		"get-config:context=network": {"heartbeat.port=3002", "service.port=3000"},
		"get-config:context=namespace;id=test": {"replication-factor=1", "storage-engine=memory",
			"storage-engine.data-size=1073741824"},
		"get-config:context=namespace;id=cache": {"replication-factor=2", "storage-engine.data-size=2147483648"},
	} {
		body, err := exchange(st.Addr, cmd)
		if err != nil {
			t.Fatal(err)
		}
		items := strings.Split(strings.TrimSuffix(strings.SplitN(string(body), "\t", 2)[1], "\n"), ";")
		for _, w := range want {
			if !slices.Contains(items, w) {
				t.Errorf("%s lacks %s: %s", cmd, w, body)
			}
		}
	}
	for cmd, want := range map[string]string{
		"get-config:context=namespace":         errMissingID,
		"get-config:context=namespace;id=nope": errNoNamespace,
		"get-config:context=logging":           errInvalidContext,
		"log/1":                                errBadSinkID,
		"log-set:id=0;nope=info":               errInvalidLogSet,
		"log-set:id=0;misc=loud":               errInvalidLogSet,
		"log-set:id=3;misc=info":               errInvalidLogSet,
		"set-config:context=namespace;id=test": errInvalidSetConfig,
	} {
		if body, err := exchange(st.Addr, cmd); err != nil || string(body) != cmd+"\t"+want+"\n" {
			t.Errorf("%s: %q, %v", cmd, body, err)
		}
	}
}

// A new cluster-name set live takes the node out of its cluster, as on a real server.
func TestClusterNameSetLive(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	threeNodes(t, s, clk)
	st := mustNode(t, s, "db-0")
	cmd := "set-config:context=service;cluster-name=other"
	if body, err := exchange(st.Addr, cmd); err != nil || string(body) != cmd+"\tok\n" {
		t.Fatalf("%q, %v", body, err)
	}
	clk.Step(2 * time.Second)
	if got := clusterOf(t, s, "db-0", "db-1"); !strings.HasPrefix(got[0], "1/") || !strings.HasPrefix(got[1], "2/") {
		t.Fatalf("after a live rename: %v", got)
	}
}

// asd refuses at start what the real server refuses, with its message and line.
func TestServerRefusesAtStart(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	rackID := strings.Replace(conf("db"), "\treplication-factor 2\n", "\treplication-factor 2\n\track-id 1\n", 1)
	line := strconv.Itoa(1 + strings.Count(rackID[:strings.Index(rackID, "rack-id")], "\n"))
	for i, tc := range []struct{ text, want string }{
		{rackID, "CRITICAL (config): line " + line + " :: 'rack-id' is enterprise-only"},
		{strings.Replace(conf("db"), "cluster-name db", "cluster-name db\n\tproto-fd-max lots", 1), "CRITICAL (config): line 3 :: "},
		{"service {\n\tcluster-name db\n", "CRITICAL (config): line 1 :: "},
		{strings.Replace(conf("db"), "data-size 1G", "data-size 1G\n\t\tflush-size 1M", 1),
			"CRITICAL (config): line 21 :: {test} can't configure 'flush-size' if not using storage backing"},
		{strings.Replace(conf("db"), "\treplication-factor 2\n", "\treplication-factor 2\n\tindex-stage-size 2G\n", 1),
			"CRITICAL (config): line 18 :: index-stage-size must be >= 134217728 and <= 1073741824, not 2147483648"},
		{strings.Replace(strings.Replace(conf("db"), "cluster-name db", "cluster-name db\n\tauto-pin cpu", 1),
			"port 3000", "address any\n\t\tport 3000", 1),
			`CRITICAL (hardware): auto-pinning requires binding the service to network interfaces; "any" isn't a ` +
				`network interface`},
	} {
		st := addNode(t, s, NodeSpec{Name: strconv.Itoa(i), Config: tc.text})
		if st.Phase != PhaseFailed || !strings.HasPrefix(st.Error, tc.want) {
			t.Errorf("%q: %+v", tc.want, st.Error)
		}
	}
}

// asd checks its host once it has read its config: a host that fails (the reference host does, and
// so does a node by default) stops asd with enforce-best-practices true; without it asd warns, starts
// and reports failed_best_practices=true. The parameter is static: set-config refuses it, as the
// table says.
func TestBestPracticesAtStart(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	enforce := strings.Replace(conf("db"), "cluster-name db", "cluster-name db\n\tenforce-best-practices true", 1)
	warning := "WARNING (config): " + conffile.BestPracticesFailed
	for _, tc := range []struct {
		name, text  string
		hostPasses  bool
		err, failed string // failed: the statistic, when asd runs
		warns       bool
	}{
		{"failing host, not enforced", conf("db"), false, "", "true", true},
		{"failing host, enforced", enforce, false, "CRITICAL (config): " + conffile.BestPracticesFailed, "", false},
		{"passing host, enforced", enforce, true, "", "false", false},
		{"passing host, not enforced", conf("db"), true, "", "false", false},
	} {
		st := addNode(t, s, NodeSpec{Name: tc.name, Config: tc.text, HostPassesBestPractices: tc.hostPasses})
		if st.Error != tc.err || (st.Phase == PhaseFailed) != (tc.err != "") {
			t.Errorf("%s: phase %s, error %q; want error %q", tc.name, st.Phase, st.Error, tc.err)
		}
		log, _ := s.Log(tc.name)
		if warned := slices.ContainsFunc(log, func(l string) bool { return strings.HasSuffix(l, warning) }); warned != tc.warns {
			t.Errorf("%s: warned %t in %q", tc.name, warned, log)
		}
		if tc.failed == "" {
			continue
		}
		if body, err := exchange(st.Addr, "statistics"); err != nil || !strings.Contains(string(body), "failed_best_practices="+tc.failed+";") {
			t.Errorf("%s: statistics %q, %v; want failed_best_practices=%s", tc.name, body, err, tc.failed)
		}
	}
	st := mustNode(t, s, "failing host, not enforced")
	for cmd, want := range map[string]string{
		"set-config:context=service;enforce-best-practices=true": "\t" + errInvalidSetConfig,
		"get-config:context=service":                             ";enforce-best-practices=false;",
	} {
		if body, err := exchange(st.Addr, cmd); err != nil || !strings.Contains(string(body), want) {
			t.Errorf("%s: %q, %v (want %q)", cmd, body, err, want)
		}
	}
}

// Community Edition takes advertise-ipv6 and ignores it: asd starts, warns, and keeps it false, at
// start and through set-config.
func TestAdvertiseIPv6IsIgnored(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	text := strings.Replace(conf("db"), "cluster-name db", "cluster-name db\n\tadvertise-ipv6 true", 1)
	st := addNode(t, s, NodeSpec{Name: "a", Config: text})
	if st.Phase == PhaseFailed {
		t.Fatalf("asd starts with advertise-ipv6: %s", st.Error)
	}
	log, _ := s.Log("a")
	if !slices.ContainsFunc(log, func(l string) bool {
		return strings.HasSuffix(l, "WARNING (socket): 'advertise-ipv6' is relevant for enterprise only")
	}) {
		t.Errorf("no warning in %q", log)
	}
	set := "set-config:context=service;advertise-ipv6=true"
	for cmd, want := range map[string]string{set: "ok", "get-config:context=service": "advertise-ipv6=false;"} {
		if body, err := exchange(st.Addr, cmd); err != nil || !strings.Contains(string(body), "\t"+want) {
			t.Errorf("%s: %q, %v (want %q)", cmd, body, err, want)
		}
	}
}

// A real 8.1.2.0 server refused to change microsecond-histograms while a benchmark histogram was on.
func TestMicrosecondHistogramsNeedBenchmarksOff(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	st := addNode(t, s, NodeSpec{Name: "a", Config: conf("db")})
	for _, step := range []struct{ cmd, want string }{
		{"set-config:context=service;microsecond-histograms=true", answerOK},
		{"set-config:context=namespace;id=test;enable-benchmarks-read=true", answerOK},
		{"set-config:context=service;microsecond-histograms=false", errInvalidSetConfig},
		{"set-config:context=namespace;id=test;enable-benchmarks-read=false", answerOK},
		{"set-config:context=service;microsecond-histograms=false", answerOK},
	} {
		if body, err := exchange(st.Addr, step.cmd); err != nil || string(body) != step.cmd+"\t"+step.want+"\n" {
			t.Errorf("%s: %q, %v (want %s)", step.cmd, body, err, step.want)
		}
	}
}

// ask sends one info command to the node and returns the answer's value.
func ask(t *testing.T, addr, cmd string) string {
	t.Helper()
	body, err := exchange(addr, cmd)
	if err != nil {
		t.Fatal(err)
	}
	req, value, ok := strings.Cut(strings.TrimSuffix(string(body), "\n"), "\t")
	if !ok || req != cmd {
		t.Fatalf("%s: answer %q", cmd, body)
	}
	return value
}

// Log context "any" sets every context of the sink, live as at start, and log/<id> lists the contexts,
// never "any" (fixtures' log-0.txt).
func TestLogSetAny(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	text := conf("db") + "logging {\n\tconsole {\n\t\tcontext any info\n\t\tcontext hb debug\n\t}\n}\n"
	st := addNode(t, s, NodeSpec{Name: "a", Config: text})
	before := ask(t, st.Addr, "log/0")
	if !strings.Contains(before, ";hb:DEBUG;") || !strings.Contains(before, ";migrate:INFO;") {
		t.Fatalf("log/0 at start: %s", before)
	}
	if got := ask(t, st.Addr, "log-set:id=0;any=warning"); got != answerOK {
		t.Fatalf("log-set any: %s", got)
	}
	after := ask(t, st.Addr, "log/0")
	for item := range strings.SplitSeq(after, ";") {
		ctx, level, _ := strings.Cut(item, ":")
		if ctx == "any" || level != "WARNING" {
			t.Errorf("after any=warning, log/0 has %s", item)
		}
	}
	if n := strings.Count(after, ";") + 1; n != strings.Count(before, ";")+1 || n < 60 {
		t.Errorf("log/0 lists %d contexts after, %d before", n, strings.Count(before, ";")+1)
	}
}

// The geo2dsphere-within parameters are set with a hyphen and reported with a dot, as a real 8.1.2.0
// server did; the dotted name and a static one are refused.
func TestGeo2dsphereWithinSetLive(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	st := addNode(t, s, NodeSpec{Name: "a", Config: conf("db")})
	for cmd, want := range map[string]string{
		"set-config:context=namespace;id=test;geo2dsphere-within.max-cells=13": errInvalidSetConfig,
		"set-config:context=namespace;id=test;geo2dsphere-within-strict=false": errInvalidSetConfig,
		"set-config:context=namespace;id=test;geo2dsphere-within-max-cells=13": answerOK,
	} {
		if got := ask(t, st.Addr, cmd); got != want {
			t.Errorf("%s: %s, want %s", cmd, got, want)
		}
	}
	items := strings.Split(ask(t, st.Addr, "get-config:context=namespace;id=test"), ";")
	for _, want := range []string{"geo2dsphere-within.max-cells=13", "geo2dsphere-within.strict=true"} {
		if !slices.Contains(items, want) {
			t.Errorf("get-config lacks %s", want)
		}
	}
	if slices.ContainsFunc(items, func(i string) bool { return strings.HasPrefix(i, "geo2dsphere-within-") }) {
		t.Error("get-config reports a hyphenated geo2dsphere-within name")
	}
}

// proto-fd-max is held to the container's open-file limit, which /proc/1/limits reports: asd does not
// start above it, and refuses it live with its warning.
func TestProtoFdMaxAboveTheOpenFileLimit(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	over := strings.Replace(conf("db"), "cluster-name db", "cluster-name db\n\tproto-fd-max 30000", 1)
	st := addNode(t, s, NodeSpec{Name: "over", Config: over, OpenFileLimit: 20000})
	if want := "CRITICAL (config): 20000 system file descriptors not enough, config specified 30000"; st.Phase != PhaseFailed ||
		st.Error != want {
		t.Errorf("started above the limit: %s %q, want %q", st.Phase, st.Error, want)
	}
	st = addNode(t, s, NodeSpec{Name: "a", Config: conf("db"), OpenFileLimit: 20000})
	if st.Phase == PhaseFailed {
		t.Fatalf("proto-fd-max 15000 under a limit of 20000: %s", st.Error)
	}
	if got := ask(t, st.Addr, "set-config:context=service;proto-fd-max=30000"); got != errInvalidSetConfig {
		t.Errorf("set above the limit: %s", got)
	}
	log, err := s.Log("a")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(log, func(l string) bool {
		return strings.HasSuffix(l, "WARNING (service): can't set proto-fd-max 30000 > system limit 20000")
	}) {
		t.Errorf("no refusal in the log: %q", log)
	}
	if got := ask(t, st.Addr, "set-config:context=service;proto-fd-max=20000"); got != answerOK {
		t.Errorf("set at the limit: %s", got)
	}
	limits, err := s.ReadFile("a", "/proc/1/limits")
	if err != nil || !strings.Contains(limits, "\nMax open files            20000                20000                files     \n") {
		t.Errorf("/proc/1/limits: %q, %v", limits, err)
	}
	if st := addNode(t, s, NodeSpec{Name: "b", Config: conf("db")}); st.OpenFileLimit != DefaultOpenFileLimit {
		t.Errorf("default open-file limit %d", st.OpenFileLimit)
	}
}

// Some namespace parameters are parsed more loosely live than in the file, as a real 8.1.2.0 server did
// (the differential test found it): evict-tenths-pct takes anything (atoi), defrag-lwm-pct and
// flush-max-ms take values above the file's bounds; other bounds still hold.
func TestSetConfigLooserThanTheFile(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	st := addNode(t, s, NodeSpec{Name: "a", Config: conf("db")})
	for _, tc := range []struct{ set, answer, get string }{
		{"evict-tenths-pct=x1", answerOK, "evict-tenths-pct=0"},
		{"evict-tenths-pct=12abc", answerOK, "evict-tenths-pct=12"},
		{"defrag-lwm-pct=100", answerOK, "storage-engine.defrag-lwm-pct=100"},
		{"flush-max-ms=1001", answerOK, "storage-engine.flush-max-ms=1001"},
		{"flush-max-ms=x", errInvalidSetConfig, "storage-engine.flush-max-ms=1001"},
		{"nsup-hist-period=x", errInvalidSetConfig, "nsup-hist-period=3600"},
	} {
		if got := ask(t, st.Addr, "set-config:context=namespace;id=test;"+tc.set); got != tc.answer {
			t.Errorf("%s: %s, want %s", tc.set, got, tc.answer)
		}
		if items := strings.Split(ask(t, st.Addr, "get-config:context=namespace;id=test"), ";"); !slices.Contains(items, tc.get) {
			t.Errorf("after %s, get-config lacks %s", tc.set, tc.get)
		}
	}
}
