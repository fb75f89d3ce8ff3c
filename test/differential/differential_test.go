package differential

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/testenv"
)

// knownDifferences are the answers the simulator does not give as the real server does yet, by
// transcript key, with the reason. An entry that no longer differs fails the test: the list stays true.
var knownDifferences = map[string]string{}

// run plays every scenario on a backend and returns what the operator read.
func run(t *testing.T, ctx context.Context, b backend, cf clusterFiles) []entry {
	t.Helper()
	tr := &transcript{b: b, pods: cf.pods, info: aerospike.NewClient(aerospike.ClientOptions{})}
	started := time.Now()
	steps := []struct {
		name string
		run  func() error
	}{
		{"stable info", func() error { return tr.stableInfo(ctx) }},
		{"warm restart", func() error { return tr.warmRestart(ctx) }},
		{"replication-factor disagreement", func() error { return tr.replicationFactorDisagreement(ctx, cf.files) }},
		{"set-config verdicts", func() error { tr.setConfigVerdicts(ctx); return nil }},
		{"live change by the operator's plan", func() error { return tr.liveByThePlan(ctx, cf) }},
	}
	for _, s := range steps {
		begun := time.Now()
		if err := s.run(); err != nil {
			t.Fatalf("%T: %s: %v", b, s.name, err)
		}
		t.Logf("%T: %s: %s", b, s.name, time.Since(begun).Round(100*time.Millisecond))
	}
	t.Logf("%T: %d answers in %s", b, len(tr.entries), time.Since(started).Round(100*time.Millisecond))
	return tr.entries
}

// The simulator answers what the operator reads as the real server does, scenario by scenario.
func TestSimulatorMatchesRealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cf := renderCluster(t)
	real := run(t, ctx, startReal(t, ctx, cf), cf)
	sim := run(t, ctx, startSim(t, cf), cf)
	for name, entries := range map[string][]entry{"real": real, "simulator": sim} {
		writeTranscript(t, name, entries)
	}
	compare(t, real, sim)
}

// writeTranscript keeps what a backend answered in .local/differential-transcripts/<name>.txt, to read a
// difference in full.
func writeTranscript(t *testing.T, name string, entries []entry) {
	t.Helper()
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s\t%s\n", e.key, e.value)
	}
	dir := filepath.Join(testenv.RepoRoot(), ".local", "differential-transcripts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func compare(t *testing.T, real, sim []entry) {
	t.Helper()
	simAnswers := map[string]string{}
	for _, e := range sim {
		simAnswers[e.key] = e.value
	}
	if len(real) != len(sim) {
		t.Errorf("the real server gave %d answers, the simulator %d", len(real), len(sim))
	}
	differ := 0
	for _, e := range real {
		got, ok := simAnswers[e.key]
		reason, known := knownDifferences[e.key]
		switch {
		case ok && got == e.value && known:
			t.Errorf("%s: no longer differs (%q): drop it from knownDifferences (%s)", e.key, got, reason)
		case ok && got == e.value:
		case known:
			t.Logf("known difference %s: real %q, simulator %q (%s)", e.key, e.value, got, reason)
		default:
			differ++
			t.Errorf("%s:\n  real      %q\n  simulator %q (found %t)", e.key, e.value, got, ok)
		}
	}
	t.Logf("%d answers compared, %d differ", len(real), differ)
}
