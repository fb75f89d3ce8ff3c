package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/acko-io/acko/test/proc"
)

// stopGrace is how long a process has to exit after SIGTERM before it gets SIGKILL.
const stopGrace = 15 * time.Second

// pidRecord identifies a process this harness started (proc.Record: its PID and start time).
type pidRecord = proc.Record

// procSpec is a process to start.
type procSpec struct {
	name string // log file, pid file
	path string
	args []string
	env  []string // added to this process's environment
	dir  string
}

// process is a child started by this harness in this run.
type process struct {
	rec  pidRecord
	done chan struct{} // closed when it has exited and been reaped
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startProcess starts spec with its output appended to logs/<name>.log and records it in
// run/<name>.pid. It runs in its own process group, so that a Ctrl-C on the terminal reaches only
// `up`, which then stops everything in order.
func (o Options) startProcess(spec procSpec) (*process, error) {
	logFile, err := os.OpenFile(o.LogPath(spec.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmdline := strings.Join(append([]string{spec.path}, spec.args...), " ")
	_, _ = fmt.Fprintf(logFile, "\n=== %s start: %s\n", time.Now().Format(time.RFC3339), cmdline)
	cmd := exec.Command(spec.path, spec.args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = spec.dir, logFile, logFile
	cmd.Env = append(os.Environ(), spec.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.DieWithParent {
		// Sent when the OS thread that started the child ends; Go keeps its threads for the
		// life of the process unless a goroutine exits while locked to one (none here).
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	// Recorded before anything reaps it: until then even a child that exited at once has its stat.
	rec, err := proc.RecordOf(cmd.Process.Pid, cmdline)
	if err == nil {
		err = o.writePidFile(spec.name, rec)
	}
	p := &process{rec: rec, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // reaps it, so that /proc forgets it
		_ = logFile.Close()
		close(p.done)
	}()
	if err != nil {
		_ = cmd.Process.Kill() // our own child, by its handle
		return nil, err
	}
	return p, nil
}

func (o Options) pidFile(name string) string { return o.path("run", name+".pid") }

func (o Options) writePidFile(name string, rec pidRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return os.WriteFile(o.pidFile(name), append(b, '\n'), 0o644)
}

func (o Options) readPidFile(name string) (pidRecord, bool) {
	b, err := os.ReadFile(o.pidFile(name))
	if err != nil {
		return pidRecord{}, false
	}
	var rec pidRecord
	if json.Unmarshal(b, &rec) != nil || rec.PID <= 1 {
		return pidRecord{}, false
	}
	return rec, true
}

// runningRecords lists the recorded processes that still run.
func (o Options) runningRecords() map[string]pidRecord {
	files, _ := filepath.Glob(o.pidFile("*"))
	out := map[string]pidRecord{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if rec, ok := o.readPidFile(name); ok && rec.Alive() {
			out[name] = rec
		}
	}
	return out
}

// stopProcess stops the process recorded as name. When an "<name>-init" record exists (kwok's
// PID-namespace init, whose parent `unshare` ignores SIGTERM), that one gets SIGTERM and name is
// waited for. Whatever is still alive after stopGrace gets SIGKILL.
func (o Options) stopProcess(name string) error {
	rec, ok := o.readPidFile(name)
	if !ok {
		return nil
	}
	term := rec
	if initRec, ok := o.readPidFile(name + "-init"); ok && initRec.Alive() {
		term = initRec
	}
	var errs []error
	if err := term.Signal(syscall.SIGTERM); err != nil {
		errs = append(errs, err)
	}
	if !rec.WaitGone(stopGrace) {
		errs = append(errs, fmt.Errorf("%s (pid %d) ignored SIGTERM for %s: killing it", name, rec.PID, stopGrace))
		_ = rec.Signal(syscall.SIGKILL)
		if !rec.WaitGone(5 * time.Second) {
			errs = append(errs, fmt.Errorf("%s (pid %d) survived SIGKILL", name, rec.PID))
		}
	}
	_ = os.Remove(o.pidFile(name + "-init"))
	_ = os.Remove(o.pidFile(name))
	return errors.Join(errs...)
}
