package aerospike

import (
	"errors"
	"io/fs"
	"maps"
	"strings"
	"testing"

	"github.com/acko-io/acko/test/aerosim"
)

func TestParseResponse(t *testing.T) {
	cmds := []string{"node", "build"}
	ok := map[string]map[string]string{
		"node\tAFA0\nbuild\t8.1.2.0\n": {"node": "AFA0", "build": "8.1.2.0"},
		"build\t8.1.2.0\nnode\t\n":     {"node": "", "build": "8.1.2.0"},
		"node\nbuild\ta\tb\n":          {"node": "", "build": "a\tb"},
	}
	for body, want := range ok {
		got, err := parseResponse([]byte(body), cmds)
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", body, got, err, want)
		}
	}
	bad := []string{
		"",
		"\n",
		"node\tAFA0\nbuild\t8.1.2.0",         // no final newline
		"node\tAFA0\n",                       // build missing
		"node\tAFA0\nbuild\t8\nstatus\tok\n", // not asked
		"node\tAFA0\nnode\tAFA0\nbuild\t8\n", // twice
		"node\tAFA0\n\nbuild\t8.1.2.0\n",     // empty line
		"HTTP/1.1 400 Bad Request\r\n\r\n\n", // not info at all
	}
	for _, body := range bad {
		if got, err := parseResponse([]byte(body), cmds); !errors.Is(err, ErrBadResponse) {
			t.Errorf("%q: %v, %v; want ErrBadResponse", body, got, err)
		}
	}
}

func TestCheckHeader(t *testing.T) {
	tests := []struct {
		h    []byte
		want int
		ok   bool
	}{
		{[]byte{2, 1, 0, 0, 0, 0, 0x08, 0x12}, 0x812, true},
		{[]byte{2, 1, 0, 0, 0, 0x10, 0, 0}, 1 << 20, true},
		{[]byte{2, 1, 0, 0, 0, 0x10, 0, 1}, 0, false},
		{[]byte{2, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0, false},
		{[]byte{2, 3, 0, 0, 0, 0, 0, 1}, 0, false}, // a data message, not info
		{[]byte("HTTP/1.1"), 0, false},
		{[]byte{2, 1}, 0, false},
	}
	for _, tt := range tests {
		n, err := checkHeader(tt.h, DefaultMaxResponseBytes)
		if (err == nil) != tt.ok || n != tt.want {
			t.Errorf("%v: %d, %v", tt.h, n, err)
		}
	}
}

func TestParseInfoError(t *testing.T) {
	tests := map[string]*InfoError{
		"ERROR:25:enterprise only":           {Code: 25, Message: "enterprise only"},
		"ERROR:4:unrecognized command":       {Code: 4, Message: "unrecognized command"},
		"ERROR:7:cluster not specified size": {Code: 7, Message: "cluster not specified size"},
		"ERROR::namespace not found":         {Message: "namespace not found"},
		"ERROR:x:y":                          {Message: "x:y"},
		"ERROR":                              {},
		"ok":                                 nil,
		"ERRORS=0;x=1":                       nil,
		"D7547930DDA2":                       nil,
	}
	for value, want := range tests {
		err := parseInfoError("cmd", value)
		var got *InfoError
		if errors.As(err, &got) != (want != nil) || (want != nil && (got.Code != want.Code || got.Message != want.Message)) {
			t.Errorf("%q: %v, want %+v", value, err, want)
		}
	}
	if err := parseInfoError("x", "ERROR:4:bad parameter"); errors.Is(err, ErrUnrecognizedCommand) {
		t.Error("code 4 alone must not mean unrecognized command")
	}
}

func TestParseClusterStable(t *testing.T) {
	if key, err := ParseClusterStable("D7547930DDA2"); err != nil || key != "D7547930DDA2" {
		t.Errorf("key: %q, %v", key, err)
	}
	var ie *InfoError
	if _, err := ParseClusterStable("ERROR:7:unstable cluster"); !errors.As(err, &ie) || ie.Code != 7 {
		t.Errorf("unstable: %v", err)
	}
	for _, v := range []string{"", "ok", "D7547930DDA2X", "12345678901234567"} {
		if _, err := ParseClusterStable(v); !errors.Is(err, ErrBadResponse) {
			t.Errorf("%q: %v", v, err)
		}
	}
}

func TestParseNodeFactsFromFixtures(t *testing.T) {
	stats := readFixture(t, "three-migrating/node-4000/statistics.body")
	answers := map[string]string{"node": "AFA0", "build": "8.1.2.0", "statistics": stats}
	f, err := parseNodeFacts(answers)
	want := NodeFacts{NodeID: "AFA0", Build: "8.1.2.0", Uptime: 6e9, ClusterSize: 3, ClusterKey: "D7547930DDA2",
		ClusterIntegrity: true, MigratePartitionsRemaining: 3917}
	if err != nil || f != want {
		t.Fatalf("got %+v, %v\nwant %+v", f, err, want)
	}
	for _, broken := range []string{"cluster_key=", "uptime=-1", "cluster_size=x", "cluster_integrity=maybe"} {
		k, _, _ := strings.Cut(broken, "=")
		answers["statistics"] = strings.Replace(stats, k+"="+ParseKV(stats)[k], broken, 1)
		if _, err := parseNodeFacts(answers); !errors.Is(err, ErrBadResponse) {
			t.Errorf("%s: %v", broken, err)
		}
	}
	answers["statistics"] = "ERROR:4:unrecognized command"
	if _, err := parseNodeFacts(answers); !errors.Is(err, ErrUnrecognizedCommand) {
		t.Errorf("error answer: %v", err)
	}
}

// readFixture returns the value of a one-command fixture body.
func readFixture(t *testing.T, name string) string {
	t.Helper()
	body, err := fs.ReadFile(aerosim.Fixtures(), name)
	if err != nil {
		t.Fatal(err)
	}
	_, value, _ := strings.Cut(strings.TrimSuffix(string(body), "\n"), "\t")
	return value
}

func TestNodeChanged(t *testing.T) {
	base := NodeHealth{Facts: NodeFacts{Uptime: 60e9, ClusterSize: 3, ClusterKey: "K", ClusterIntegrity: true,
		MigratePartitionsRemaining: 100}}
	with := func(mut func(*NodeHealth)) NodeHealth {
		h := base
		mut(&h)
		return h
	}
	same := []NodeHealth{
		with(func(h *NodeHealth) { h.Facts.Uptime += 30e9 }),
		with(func(h *NodeHealth) { h.Facts.MigratePartitionsRemaining = 50 }),
		with(func(h *NodeHealth) { h.Facts.Build = "other" }),
	}
	changed := []NodeHealth{
		with(func(h *NodeHealth) { h.Facts.Uptime = 0 }),
		with(func(h *NodeHealth) { h.Facts.MigratePartitionsRemaining = 0 }),
		with(func(h *NodeHealth) { h.Facts.ClusterKey = "L" }),
		with(func(h *NodeHealth) { h.Facts.ClusterSize = 2 }),
		with(func(h *NodeHealth) { h.Facts.ClusterIntegrity = false }),
		with(func(h *NodeHealth) { h.Err = ErrUnreachable }),
		with(func(h *NodeHealth) { h.Err = ErrBadResponse }),
	}
	for i, h := range same {
		if nodeChanged(base, h) {
			t.Errorf("same[%d] counted as a change", i)
		}
	}
	for i, h := range changed {
		if !nodeChanged(base, h) {
			t.Errorf("changed[%d] not counted as a change", i)
		}
	}
}
