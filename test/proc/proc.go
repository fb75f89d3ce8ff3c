// Package proc identifies the processes a test harness started, so that it only ever signals its
// own: a PID alone is not enough (PIDs are reused, and a stale record must never get a stranger
// signalled), a PID with its start time is unique per boot.
package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Record identifies a process: its PID and its start time (field 22 of /proc/PID/stat, in clock
// ticks since boot).
type Record struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Cmd   string `json:"cmd"` // for humans reading the record
}

// RecordOf records the running process pid.
func RecordOf(pid int, cmdline string) (Record, error) {
	st, err := ReadStat(pid)
	if err != nil {
		return Record{}, err
	}
	return Record{PID: pid, Start: st.Start, Cmd: cmdline}, nil
}

// Signal sends sig if, and only if, the process is still the one recorded. os.FindProcess holds
// a pidfd on Linux, so once the start time matches, the signal cannot reach a recycled PID.
func (r Record) Signal(sig syscall.Signal) error {
	p, err := os.FindProcess(r.PID)
	if err != nil {
		return nil //nolint:nilerr // gone already
	}
	defer func() { _ = p.Release() }()
	if !r.Alive() {
		return nil
	}
	if err := p.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %d: %w", r.PID, err)
	}
	return nil
}

// Alive reports whether the recorded process still runs (a zombie does not).
func (r Record) Alive() bool {
	st, err := ReadStat(r.PID)
	return err == nil && st.Start == r.Start && st.State != 'Z' && st.State != 'X'
}

// WaitGone waits up to timeout for the process to end, and reports whether it did.
func (r Record) WaitGone(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for r.Alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Stat is what /proc/PID/stat tells about a process.
type Stat struct {
	State byte
	PPID  int
	Start uint64
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(string(b))
}

// ParseStat parses /proc/PID/stat. The command name (field 2) may hold spaces and parentheses,
// so fields are counted from the last ')'.
func ParseStat(s string) (Stat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return Stat{}, errors.New("short stat")
	}
	ppid, err := strconv.Atoi(f[1]) // field 4
	if err != nil {
		return Stat{}, err
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22
	if err != nil {
		return Stat{}, err
	}
	return Stat{State: f[0][0], PPID: ppid, Start: start}, nil
}

// Descendants returns the records of every running process below the given ones, for checking
// that a stop left nothing behind.
func Descendants(roots []Record) []Record {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]Record{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := ReadStat(pid); err == nil {
			children[st.PPID] = append(children[st.PPID], Record{PID: pid, Start: st.Start})
		}
	}
	var out []Record
	queue := append([]Record(nil), roots...)
	for len(queue) > 0 {
		kids := children[queue[0].PID]
		queue = append(queue[1:], kids...)
		out = append(out, kids...)
	}
	return out
}

// FirstChild returns the first child of pid, waiting up to timeout for it to appear.
func FirstChild(pid int, timeout time.Duration) (int, error) {
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

// Lock takes the machine-wide lock of that name (a file in the temporary directory), calling
// waiting first when another process holds it. The lock lasts as long as the returned file stays
// open (a dropped *os.File closes it).
func Lock(name string, waiting func(path string)) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), name), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		waiting(f.Name())
		if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}
