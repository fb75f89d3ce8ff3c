package conffile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acko-io/acko/internal/config/params"
	"github.com/acko-io/acko/test/golden"
)

func table(t *testing.T, version string) *params.Table {
	t.Helper()
	v, err := params.ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := params.Select(v)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func mustParse(t *testing.T, text string) *File {
	t.Helper()
	f, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func problems(ps []Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func TestParse(t *testing.T) {
	f := mustParse(t, "# head\nservice {\n\tproto-fd-max 100 # why\n}\n\nnamespace test {\n"+
		"\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n}\n")
	if len(f.Nodes) != 2 {
		t.Fatalf("%d top-level nodes, want 2", len(f.Nodes))
	}
	svc, ns := f.Nodes[0], f.Nodes[1]
	if !svc.Block || svc.Line != 2 || svc.End != 4 || len(svc.Children) != 1 {
		t.Errorf("service block = %+v", svc)
	}
	if p := svc.Children[0]; p.Name != "proto-fd-max" || p.Value() != "100" || p.Line != 3 || p.Block {
		t.Errorf("the comment must end the line: %+v", p)
	}
	if ns.Header() != "namespace test" || ns.Children[0].Header() != "storage-engine memory" ||
		ns.Children[0].Children[0].Value() != "1G" {
		t.Errorf("namespace block = %+v", ns)
	}
}

func TestParseRefusesBrokenBlocks(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"service {\n\tproto-fd-max 1\n", "line 1 :: block 'service' is not closed: parsing - final context missing '}'?"},
		{"service {\n}\n}\n", "line 3 :: '}' closes no block"},
		{"{\n}\n", "line 1 :: '{' opens a block without a name"},
		{"service { proto-fd-max 1 }\n", "line 1 :: '{': a block opens with '{' at the end of its line and " +
			"closes with '}' on a line of its own"},
		{"service {\n\tcluster-name a}\n}\n", "line 2 :: 'a}': a block opens with '{' at the end of its line " +
			"and closes with '}' on a line of its own"},
		{"service {\n\tpidfile /" + strings.Repeat("x", 1030) + "\n}\n", "line 2 :: line longer than 1023 characters"},
	} {
		if _, err := Parse(tc.text); err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %q", tc.text, err, tc.want)
		}
	}
}

// The file a real 8.1.2.0 server started with (../shared/fixtures/aerospike-ce-8.1.2.0/dynamic) passes.
func TestCheckAcceptsWhatAServerStarted(t *testing.T) {
	f := mustParse(t, readFile(t, "fixture-8.1.2.0.conf"))
	if ps := Check(f, table(t, "8.1.2")); len(ps) > 0 {
		t.Errorf("problems: %q", problems(ps))
	}
}

// A file using every kind of parameter and block passes every table that has its parameters, and its
// settings read as the server reports them.
func TestEveryKind(t *testing.T) {
	f := mustParse(t, readFile(t, "every-kind.conf"))
	for _, v := range []string{"8.1.0", "8.1.1", "8.1.2"} {
		if ps := Check(f, table(t, v)); len(ps) > 0 {
			t.Errorf("%s: problems: %q", v, problems(ps))
		}
	}
	var b strings.Builder
	for _, s := range Settings(f, table(t, "8.1.2")) {
		fmt.Fprintf(&b, "%d %s (%s) = %s\n", s.Line, s.Key(), s.Param.Path, s.ServerValue())
	}
	golden.Assert(t, "every-kind.settings.golden", b.String())
}

// minimal is a file asd 8.1 starts with; the cases below break it one way at a time.
const minimal = `service {
	cluster-name c
}
network {
	service {
		port 3000
	}
	heartbeat {
		mode mesh
		port 3002
	}
	fabric {
		port 3001
	}
}
namespace test {
	storage-engine memory {
		data-size 1G
	}
}
`

func TestCheckMinimal(t *testing.T) {
	if ps := Check(mustParse(t, minimal), table(t, "8.1.2")); len(ps) > 0 {
		t.Fatalf("problems: %q", problems(ps))
	}
}

func TestCheckRefuses(t *testing.T) {
	with := func(old, replacement string) string {
		if !strings.Contains(minimal, old) {
			panic(old)
		}
		return strings.Replace(minimal, old, replacement, 1)
	}
	tests := []struct {
		name, version, text string
		want                []string
	}{
		{"an unknown name", "8.1.2", with("cluster-name c", "cluster-name c\n\tno-such-param 1"),
			[]string{"line 3 :: unknown config parameter name 'no-such-param'"}},
		{"a word for an integer", "8.1.2", with("cluster-name c", "cluster-name c\n\tproto-fd-max lots"),
			[]string{"line 3 :: proto-fd-max must be an unsigned number, not lots"}},
		{"below 8.1.2's minimum", "8.1.2", with("cluster-name c", "cluster-name c\n\tproto-fd-max 100"),
			[]string{"line 3 :: proto-fd-max must be >= 1024 and <= 2147483647, not 100"}},
		{"8.1.1 takes it", "8.1.1", with("cluster-name c", "cluster-name c\n\tproto-fd-max 100"), nil},
		{"not a boolean", "8.1.2", with("cluster-name c", "cluster-name c\n\tlog-millis yes"),
			[]string{"line 3 :: log-millis must be true or false or yes or no, not yes"}},
		{"not an allowed value", "8.1.2", with("cluster-name c", "cluster-name c\n\tauto-pin all"),
			[]string{"line 3 :: auto-pin has unknown value 'all'"}},
		{"a duration with a size suffix", "8.1.2", with("data-size 1G\n\t}", "data-size 1G\n\t}\n\tnsup-period 1G"),
			[]string{"line 20 :: nsup-period must be a small enough unsigned number with time unit (s, m, h, or d), not 1G"}},
		{"not a power of 2", "8.1.2", with("data-size 1G\n\t}", "data-size 1G\n\t}\n\tpartition-tree-sprigs 300"),
			[]string{"line 20 :: partition-tree-sprigs must be an exact power of 2, not 300"}},
		{"above Community Edition's cluster size", "8.1.2", with("namespace test {", "namespace test {\n\treplication-factor 9"),
			[]string{"line 17 :: replication-factor must be >= 1 and <= 8, not 9"}},
		{"an Enterprise-only parameter", "8.1.2", with("namespace test {", "namespace test {\n\track-id 1"),
			[]string{"line 17 :: 'rack-id' is enterprise-only"}},
		{"an Enterprise-only block", "8.1.2", minimal + "xdr {\n\tdc a {\n\t}\n}\n",
			[]string{"line 21 :: 'xdr' is enterprise-only"}},
		{"an Enterprise-only storage engine", "8.1.2", with("storage-engine memory {\n\t\tdata-size 1G",
			"storage-engine pmem {\n\t\tfile /a"), []string{"line 17 :: 'storage-engine' is enterprise-only"}},
		{"an unknown storage engine", "8.1.2", with("storage-engine memory", "storage-engine disk"),
			[]string{"line 17 :: storage-engine has unknown value 'disk'"}},
		{"another engine's parameter", "8.1.2", with("data-size 1G", "data-size 1G\n\t\tread-page-cache true"),
			[]string{"line 19 :: unknown config parameter name 'read-page-cache'"}},
		{"a block without its brace", "8.1.2", with("namespace test {", "namespace test {\n\tgeo2dsphere-within"),
			[]string{"line 17 :: 'geo2dsphere-within' opens a block: write 'geo2dsphere-within {' and close it with '}'"}},
		{"no cluster-name", "8.1.2", with("\tcluster-name c\n", ""), []string{"must configure 'cluster-name'"}},
		{"no storage-engine", "8.1.2", with("\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n", ""),
			[]string{"line 17 :: {test} must configure 'storage-engine'"}},
		{"no data-size", "8.1.2", with("\t\tdata-size 1G\n", ""),
			[]string{"line 18 :: {test} must configure 'data-size' if not using storage backing"}},
		{"data-size with backing", "8.1.2", with("data-size 1G", "data-size 1G\n\t\tfile /data/test.dat\n\t\tfilesize 1G"),
			[]string{"line 21 :: {test} can't configure 'data-size' if using storage backing"}},
		{"flush-size without backing", "8.1.2", with("data-size 1G", "data-size 1G\n\t\tflush-size 1M"),
			[]string{"line 20 :: {test} can't configure 'flush-size' if not using storage backing"}},
		{"flush-size with backing", "8.1.2", with("storage-engine memory {\n\t\tdata-size 1G",
			"storage-engine memory {\n\t\tfile /data/test.dat\n\t\tfilesize 1G\n\t\tflush-size 1M"), nil},
		{"index-stage-size above asd's 1 GiB (the table says 16G)", "8.1.2",
			with("namespace test {", "namespace test {\n\tindex-stage-size 2G"),
			[]string{"line 17 :: index-stage-size must be >= 134217728 and <= 1073741824, not 2147483648"}},
		{"auto-pin on address any", "8.1.2", strings.Replace(with("port 3000", "address any\n\t\tport 3000"),
			"cluster-name c", "cluster-name c\n\tauto-pin cpu", 1),
			[]string{`auto-pinning requires binding the service to network interfaces; "any" isn't a network interface`}},
		{"auto-pin on an IP address", "8.1.2", strings.Replace(with("port 3000", "address 10.0.0.1\n\t\tport 3000"),
			"cluster-name c", "cluster-name c\n\tauto-pin numa", 1),
			[]string{`auto-pinning requires binding the service to network interfaces; "10.0.0.1" isn't a network interface`}},
		{"auto-pin without an address", "8.1.2", with("cluster-name c", "cluster-name c\n\tauto-pin cpu"),
			[]string{"auto-pinning requires binding the service to one or more network interfaces"}},
		{"auto-pin on an interface: the host decides", "8.1.2", strings.Replace(with("port 3000", "address eth0\n\t\tport 3000"),
			"cluster-name c", "cluster-name c\n\tauto-pin cpu", 1), nil},
		{"files without filesize", "8.1.2", with("storage-engine memory {\n\t\tdata-size 1G", "storage-engine device {\n\t\tfile /a"),
			[]string{"line 19 :: {test} must configure 'filesize' if using storage files"}},
		{"default-ttl without nsup-period", "8.1.2", with("namespace test {", "namespace test {\n\tdefault-ttl 1d"),
			[]string{"line 21 :: {test} must configure non-zero 'nsup-period' or 'allow-ttl-without-nsup' true " +
				"if 'default-ttl' is non-zero"}},
		{"a third namespace", "8.1.2", minimal + "namespace b {\n\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n}\n" +
			"namespace c {\n\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n}\n",
			[]string{"line 26 :: too many namespaces (max is 2)"}},
		{"a namespace twice", "8.1.2", minimal + "namespace test {\n\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n}\n",
			[]string{"line 21 :: {test} duplicate namespace"}},
		{"no heartbeat port", "8.1.2", with("\t\tport 3002\n", ""), []string{"no heartbeat ports configured"}},
		{"a seed without a port", "8.1.2", with("mode mesh", "mode mesh\n\t\tmesh-seed-address-port a"),
			[]string{"line 10 :: mesh-seed-address-port must specify an unsigned integer value"}},
		{"a heartbeat timing asd refuses", "8.1.2", with("mode mesh", "mode mesh\n\t\tinterval 50"),
			[]string{"line 12 :: 'connect-timeout-ms' must be <= 'interval' * 'timeout' / 3"}},
		{"an unknown log context", "8.1.2", minimal + "logging {\n\tconsole {\n\t\tcontext everything info\n\t}\n}\n",
			[]string{"line 23 :: can't add logging context everything info"}},
		{"8.0 has no admin block", "8.0.0", with("\tfabric {", "\tadmin {\n\t\tport 3003\n\t}\n\tfabric {"),
			[]string{"line 12 :: unknown config parameter name 'admin'"}},
		{"8.1 has no info block", "8.1.2", with("\tfabric {", "\tinfo {\n\t\tport 3003\n\t}\n\tfabric {"),
			[]string{"line 12 :: unknown config parameter name 'info'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(Check(mustParse(t, tt.text), table(t, tt.version)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %q\n want %q\nfile:\n%s", got, tt.want, tt.text)
			}
		})
	}
}

// The one message of a real server we hold: the old multi-rack render, rack-id on line 37.
func TestRackIDIsEnterpriseOnlyAsTheServerSaid(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal[:strings.Index(minimal, "namespace test {")])
	for b.Len() > 0 && strings.Count(b.String(), "\n") < 35 {
		b.WriteString("# padding\n")
	}
	b.WriteString("namespace test {\n\track-id 1\n\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n}\n")
	got := problems(Check(mustParse(t, b.String()), table(t, "8.1.2")))
	if want := []string{"line 37 :: 'rack-id' is enterprise-only"}; !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}

func TestSettingsGatherListsAndKeepTheLastValue(t *testing.T) {
	f := mustParse(t, with(minimal, "cluster-name c", "cluster-name c\n\tproto-fd-max 1K\n\tproto-fd-max 20000"))
	tb := table(t, "8.1.2")
	got := map[string]Setting{}
	for _, s := range Settings(f, tb) {
		got[s.Key()] = s
	}
	if s := got["service/proto-fd-max"]; s.ServerValue() != "20000" || s.Line != 4 {
		t.Errorf("the last line wins: %+v", s)
	}
	if s := got["namespace test/storage-engine memory/data-size"]; s.ServerValue() != "1073741824" ||
		s.Param.Path != "namespaces.[].storage-engine(type=memory).data-size" || s.Section.Namespace != "test" {
		t.Errorf("data-size = %+v", s)
	}
}

func with(text, old, replacement string) string { return strings.Replace(text, old, replacement, 1) }

// Every setting of the file a real 8.1.2.0 server started with is reported by its get-config, under
// the name InfoName gives, with the value in the server's units.
func TestInfoNamesMatchTheServersAnswers(t *testing.T) {
	answers := map[string]map[string]string{}
	for _, name := range []string{"service", "network", "namespace-test"} {
		_, body, _ := strings.Cut(strings.TrimSpace(readFile(t, "fixture-8.1.2.0.get-config-"+name+".txt")), "\t")
		values := map[string]string{}
		for _, kv := range strings.Split(body, ";") {
			k, v, _ := strings.Cut(kv, "=")
			values[k] = v
		}
		answers[name] = values
	}
	f := mustParse(t, readFile(t, "fixture-8.1.2.0.conf"))
	checked := 0
	for _, s := range Settings(f, table(t, "8.1.2")) {
		in, ok := s.InfoName()
		if !ok {
			continue
		}
		answer := answers[strings.TrimSuffix(in.Context+"-"+in.ID, "-")]
		if got, found := answer[in.Get]; !found || got != s.ServerValue() {
			t.Errorf("%s: get-config %s has %s=%q, the file %q", s.Key(), in.Context, in.Get, got, s.ServerValue())
		}
		checked++
	}
	if checked < 12 {
		t.Errorf("checked %d settings, want every single-valued one of the file", checked)
	}
}

func TestListsAreWrittenInTheSingular(t *testing.T) {
	tb := table(t, "8.1.2")
	for path, want := range map[string]string{
		"network.heartbeat.mesh-seed-address-ports":         "mesh-seed-address-port",
		"network.service.addresses":                         "address",
		"namespaces.[].storage-engine(type=device).devices": "device",
		"security.log.report-data-op":                       "report-data-op",
		"service.proto-fd-max":                              "proto-fd-max",
	} {
		p, _ := tb.Lookup(path)
		if got := LineName(p); got != want {
			t.Errorf("LineName(%s) = %q, want %q", path, got, want)
		}
	}
	plural := with(minimal, "data-size 1G", "file /a\n\t\tfiles /b\n\t\tfilesize 1G")
	if got := problems(Check(mustParse(t, plural), tb)); !slices.Equal(got, []string{"line 19 :: unknown config parameter name 'files'"}) {
		t.Errorf("a list's plural name as a line: %q", got)
	}
}
