package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a process has to exit after SIGTERM before it gets SIGKILL.
const stopGrace = 15 * time.Second

// pidRecord identifies a process this harness started. The PID alone is not enough: PIDs are
// reused, and a stale pid file must never make us signal a stranger. The start time (field 22 of
// /proc/PID/stat, in clock ticks since boot) is unique per PID and boot.
type pidRecord struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Cmd   string `json:"cmd"` // for humans reading the pid file
}

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
	rec, err := recordOf(cmd.Process.Pid, cmdline)
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

func recordOf(pid int, cmdline string) (pidRecord, error) {
	st, err := readStat(pid)
	if err != nil {
		return pidRecord{}, err
	}
	return pidRecord{PID: pid, Start: st.start, Cmd: cmdline}, nil
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
		if rec, ok := o.readPidFile(name); ok && rec.alive() {
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
	if initRec, ok := o.readPidFile(name + "-init"); ok && initRec.alive() {
		term = initRec
	}
	var errs []error
	if err := term.signal(syscall.SIGTERM); err != nil {
		errs = append(errs, err)
	}
	if !rec.waitGone(stopGrace) {
		errs = append(errs, fmt.Errorf("%s (pid %d) ignored SIGTERM for %s: killing it", name, rec.PID, stopGrace))
		_ = rec.signal(syscall.SIGKILL)
		if !rec.waitGone(5 * time.Second) {
			errs = append(errs, fmt.Errorf("%s (pid %d) survived SIGKILL", name, rec.PID))
		}
	}
	_ = os.Remove(o.pidFile(name + "-init"))
	_ = os.Remove(o.pidFile(name))
	return errors.Join(errs...)
}

// signal sends sig if, and only if, the process is still the one recorded. os.FindProcess holds
// a pidfd on Linux, so once the start time matches, the signal cannot reach a recycled PID.
func (r pidRecord) signal(sig syscall.Signal) error {
	p, err := os.FindProcess(r.PID)
	if err != nil {
		return nil //nolint:nilerr // gone already
	}
	defer func() { _ = p.Release() }()
	if !r.alive() {
		return nil
	}
	if err := p.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %d: %w", r.PID, err)
	}
	return nil
}

// alive reports whether the recorded process still runs (a zombie does not).
func (r pidRecord) alive() bool {
	st, err := readStat(r.PID)
	return err == nil && st.start == r.Start && st.state != 'Z' && st.state != 'X'
}

func (r pidRecord) waitGone(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for r.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// procStat is what /proc/PID/stat tells about a process.
type procStat struct {
	state byte
	ppid  int
	start uint64
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(string(b))
}

// parseStat parses /proc/PID/stat. The command name (field 2) may hold spaces and parentheses,
// so fields are counted from the last ')'.
func parseStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procStat{}, errors.New("short stat")
	}
	ppid, err := strconv.Atoi(f[1]) // field 4
	if err != nil {
		return procStat{}, err
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22
	if err != nil {
		return procStat{}, err
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, nil
}

// descendants returns the records of every running process below the given ones (kwok's exec
// children, for instance), for checking that a stop left nothing behind.
func descendants(roots []pidRecord) []pidRecord {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]pidRecord{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			children[st.ppid] = append(children[st.ppid], pidRecord{PID: pid, Start: st.start})
		}
	}
	var out []pidRecord
	queue := append([]pidRecord(nil), roots...)
	for len(queue) > 0 {
		kids := children[queue[0].PID]
		queue = append(queue[1:], kids...)
		out = append(out, kids...)
	}
	return out
}

// firstChild returns the first child of pid, waiting up to timeout for it to appear.
func firstChild(pid int, timeout time.Duration) (int, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
			return strconv.Atoi(f[0])
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("process %d has no child after %s", pid, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
