package differential

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/testenv"
)

// knownDifferences are the answers the simulator does not give as the real server does yet, by
// transcript key, with the reason. An entry that no longer differs fails the test: the list stays true.
var knownDifferences = map[string]string{}

// racing are answers the real server gives one of, by transcript key, depending on a race the scenario
// cannot order; the simulator must give one of them too.
var racing = map[string]struct {
	answers []string
	why     string
}{
	// asd's recluster (clustering.c, clustering_cluster_reform) is skipped while a join request is
	// pending: the crashed node keeps asking to join the cluster of two that dropped it, so the
	// principal answers ERROR::unknown ("skipped ... new_nodes 1") or, between two requests, ok; after
	// ok its new exchange sticks again with migrations disallowed, so cluster-stable then answers
	// "unstable cluster" before checking the size. The simulator always skips.
	"rf-disagreement/stuck/db-1/recluster:": {[]string{"ERROR::unknown", "ok"}, "a pending join request"},
	"rf-disagreement/stuck-after-set/db-0/cluster-stable:size=3;ignore-migrations=false": {
		[]string{"ERROR:7:cluster not specified size", "ERROR:7:unstable cluster"}, "after a recluster ok or not"},
	"rf-disagreement/stuck-after-set/db-1/cluster-stable:size=3;ignore-migrations=false": {
		[]string{"ERROR:7:cluster not specified size", "ERROR:7:unstable cluster"}, "after a recluster ok or not"},
}

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
		race, raced := racing[e.key]
		switch {
		case raced && slices.Contains(race.answers, e.value) && slices.Contains(race.answers, got):
			if got != e.value {
				t.Logf("racing %s: real %q, simulator %q (%s)", e.key, e.value, got, race.why)
			}
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
