package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/acko-io/acko/test/proc"
)

func testOptions(t *testing.T) Options {
	t.Helper()
	o := Options{Dir: t.TempDir()}
	for _, d := range []string{"run", "logs"} {
		if err := os.MkdirAll(o.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func TestStartAndStopProcess(t *testing.T) {
	o := testOptions(t)
	p, err := o.startProcess(procSpec{name: "sleeper", path: "sleep", args: []string{"60"}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.rec.Alive() || len(o.Running()) != 1 {
		t.Fatalf("not running: %v", o.Running())
	}
	if err := o.stopProcess("sleeper"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatal("still running after stop")
	}
	if _, err := os.Stat(o.pidFile("sleeper")); !os.IsNotExist(err) {
		t.Fatalf("pid file left: %v", err)
	}
}

// A pid file whose process is gone and whose PID now belongs to another process must never get
// that process signalled.
func TestStopNeverSignalsARecycledPID(t *testing.T) {
	o := testOptions(t)
	stranger := exec.Command("sleep", "60")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })
	rec, err := proc.RecordOf(stranger.Process.Pid, "sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	rec.Start++ // the recorded process started at another time: not this one
	if err := o.writePidFile("stale", rec); err != nil {
		t.Fatal(err)
	}
	if len(o.Running()) != 0 {
		t.Fatalf("stale record counted as running: %v", o.Running())
	}
	if err := o.stopProcess("stale"); err != nil {
		t.Fatal(err)
	}
	if err := stranger.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the stranger was signalled: %v", err)
	}
}

func TestWipeKeepsTheE2EState(t *testing.T) {
	o := testOptions(t)
	for _, f := range []string{filepath.Join(e2eSubdir, "kubeconfig"), e2eSubdir + ".lock", "kubeconfig"} {
		if err := os.MkdirAll(filepath.Dir(o.path(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(o.path(f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Wipe(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(o.Dir)
	left := make([]string, 0, len(entries))
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) != 2 || left[0] != e2eSubdir || left[1] != e2eSubdir+".lock" {
		t.Fatalf("left %v", left)
	}
}
