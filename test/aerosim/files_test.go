package aerosim

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/acko-io/acko/internal/config"
)

const confPath = "/etc/aerospike/aerospike.conf"

// asd reads its config file at every start: a changed file changes nothing until a restart.
func TestConfigFileReadAtStart(t *testing.T) {
	s, clk := newFakeSim(t, realTimings)
	first := conf("db")
	st := addNode(t, s, NodeSpec{Name: "a", ConfigFile: confPath, Files: map[string]string{confPath: first}})
	if st.ConfigHash != config.Hash(first) || st.ClusterName != "db" || st.Files != nil {
		t.Fatalf("started: %+v", st)
	}
	second := conf("db") + "# changed\n"
	if err := s.WriteFile("a", confPath, second); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadFile("a", confPath); err != nil || got != second {
		t.Fatalf("read back: %q, %v", got, err)
	}
	if st := mustNode(t, s, "a"); st.ConfigHash != config.Hash(first) {
		t.Fatal("a running asd loaded a changed file")
	}
	if _, err := s.WarmRestart("a"); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if st := mustNode(t, s, "a"); st.ConfigHash != config.Hash(second) {
		t.Fatalf("a restart loads the file anew: %+v", st)
	}
	if _, err := s.ReadFile("a", "/etc/nope"); !errors.Is(err, ErrNoFile) {
		t.Errorf("missing file: %v", err)
	}
	if err := s.WriteFile("a", "relative", "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("relative path: %v", err)
	}
}

// A config asd cannot read stops it at start: it never answers, the error is in its log, and it
// tries again after CrashLoopBackoff, reading the file anew.
func TestRefusedConfigCrashLoops(t *testing.T) {
	opts := realTimings
	opts.CrashLoopBackoff = 10 * time.Second
	s, clk := newFakeSim(t, opts)
	st := addNode(t, s, NodeSpec{Name: "a", ConfigFile: confPath})
	want := "CRITICAL (config): couldn't open configuration file " + confPath + ": No such file or directory"
	if st.Phase != PhaseFailed || st.Error != want || st.Crashes != 1 || st.Member {
		t.Fatalf("no config file: %+v", st)
	}
	assertNoAsd(t, s, st)
	st = restartWith(t, s, clk, "service {\n}\n")
	if st.Phase != PhaseFailed || st.Crashes != 2 || st.Error != "CRITICAL (config): must configure 'cluster-name'" {
		t.Fatalf("second start: %+v", st)
	}
	if st := restartWith(t, s, clk, conf("db")); st.Phase != PhaseJoining || st.Crashes != 2 {
		t.Fatalf("third start: %+v", st)
	}
	// Two refusals, then a start on a host that fails the best-practices checks (a warning only).
	if log, _ := s.Log("a"); len(log) != 4 || !strings.HasSuffix(log[0], want) || !strings.Contains(log[2], "WARNING") {
		t.Errorf("log:\n%s", strings.Join(log, "\n"))
	}
	if h := s.History(time.Time{}); h.Transitions[0].Reason != ReasonFailed || h.Transitions[1].Reason != ReasonJoining {
		t.Errorf("history: %+v", h.Transitions)
	}
}

// assertNoAsd checks that nothing answers on the node and that it cannot be warm-restarted.
func assertNoAsd(t *testing.T, s *Sim, st NodeState) {
	t.Helper()
	if _, err := exchange(st.Addr, "node"); err == nil {
		t.Error("a node whose asd refused to start answered")
	}
	if _, err := s.WarmRestart(st.Name); !errors.Is(err, ErrConflict) {
		t.Errorf("a warm restart needs a running asd: %v", err)
	}
}

// restartWith puts a config file on node a and waits out the crash-loop back-off.
func restartWith(t *testing.T, s *Sim, clk interface{ Step(time.Duration) }, config string) NodeState {
	t.Helper()
	if err := s.SetDir("a", "/etc/aerospike", map[string]string{"aerospike.conf": config}); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	return mustNode(t, s, "a")
}

// SetDir replaces the files of one directory only, as a ConfigMap projection does.
func TestSetDir(t *testing.T) {
	s, _ := newFakeSim(t, Options{})
	addNode(t, s, NodeSpec{Cluster: "c", Name: "a", Files: map[string]string{
		"/cm/old": "1", "/cm/sub/keep": "2", "/other/keep": "3"}})
	if err := s.SetDir("a", "/cm/", map[string]string{"new": "4"}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"/cm/new": "4", "/cm/sub/keep": "2", "/other/keep": "3"} {
		if got, err := s.ReadFile("a", file); err != nil || got != want {
			t.Errorf("%s: %q, %v", file, got, err)
		}
	}
	if _, err := s.ReadFile("a", "/cm/old"); !errors.Is(err, ErrNoFile) {
		t.Errorf("/cm/old must be gone: %v", err)
	}
	if err := s.SetDir("a", "/cm", map[string]string{"a/b": "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a file name with a slash: %v", err)
	}
}
