package aerospike

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/acko-io/acko/test/aerosim"
)

// FuzzParseInfoResponse feeds arbitrary bytes to every parser of answers: frame header, body,
// ERROR values, k=v lists, cluster-stable and NodeFacts. None may panic, and a body the parser
// accepts must answer each command asked exactly once.
func FuzzParseInfoResponse(f *testing.F) {
	err := fs.WalkDir(aerosim.Fixtures(), ".", func(p string, _ fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".body") {
			return err
		}
		body, err := fs.ReadFile(aerosim.Fixtures(), p)
		f.Add(body)
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("node\tA\nbuild\t8\nstatistics\tuptime=1;cluster_size=1;cluster_key=AB;cluster_integrity=true;migrate_partitions_remaining=0\n"))
	f.Add([]byte{2, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= headerSize {
			if n, err := checkHeader(data[:headerSize], DefaultMaxResponseBytes); err == nil && n > DefaultMaxResponseBytes {
				t.Fatalf("accepted a %d byte answer", n)
			}
		}
		cmds := commandsIn(data)
		answers, err := parseResponse(data, cmds)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(answers) != len(cmds) {
			t.Fatalf("%d answers for %d commands", len(answers), len(cmds))
		}
		for _, cmd := range cmds {
			v := answers[cmd]
			_ = ParseKV(v)
			_, _ = ParseClusterStable(v)
			_, _ = Value(answers, cmd)
		}
		_, _ = parseNodeFacts(answers)
	})
}

// commandsIn lists the distinct command names the lines of body start with, so that the fuzzer
// reaches the value parsers instead of stopping at "not asked".
func commandsIn(body []byte) []string {
	var cmds []string
	for line := range strings.SplitSeq(string(body), "\n") {
		cmd, _, _ := strings.Cut(line, "\t")
		if cmd != "" && !slices.Contains(cmds, cmd) {
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}
