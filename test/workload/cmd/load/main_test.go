package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/workload"
)

// The command against a simulated node: it runs for -duration, prints the JSON report, exits 0.
func TestLoadPrintsTheReport(t *testing.T) {
	s, err := aerosim.New(aerosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	st, err := s.AddNode(aerosim.NodeSpec{Cluster: "c1", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	began := time.Now()
	code := run([]string{"-seed", st.Addr, "-duration", "2s", "-rate", "200", "-keys", "100", "-json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	var rep workload.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a report: %v\n%s", err, stdout.String())
	}
	if !rep.Verified || rep.Lost != 0 || rep.Acknowledged != 100 || rep.Duration < 2*time.Second ||
		time.Since(began) > 20*time.Second {
		t.Errorf("report after %s: %+v", time.Since(began), rep)
	}
	if rep.Writes < 150 || rep.Writes > 250 {
		t.Errorf("%d writes in 2 s at 200 ops/s, want about 200", rep.Writes)
	}
}

func TestLoadNeedsASeed(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-duration", "1s"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-seed") {
		t.Errorf("exit %d, stderr %q; want 2 and a word on -seed", code, stderr.String())
	}
}
