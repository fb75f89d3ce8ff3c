package scale

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on Linux).
const clockTicks = 100

// usage is a process's memory and CPU at one moment.
type usage struct {
	at         time.Time
	rssKiB     int64   // VmRSS
	peakKiB    int64   // VmHWM: the highest VmRSS so far
	cpuSeconds float64 // user + system
	files      int     // open file descriptors
	sockets    int     // of which sockets
}

func (u usage) rss() int64       { return u.rssKiB }
func (u usage) openFiles() int   { return u.files }
func (u usage) openSockets() int { return u.sockets }

// readUsage reads usage from /proc/PID/status and /proc/PID/stat.
func readUsage(pid int) (usage, error) {
	u := usage{at: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	u.rssKiB, u.peakKiB = statusKiB(string(status), "VmRSS:"), statusKiB(string(status), "VmHWM:")
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	if u.cpuSeconds, err = cpuSeconds(string(stat)); err != nil {
		return u, err
	}
	u.files, u.sockets, err = openFiles(pid)
	return u, err
}

// openFiles counts a process's file descriptors, and those that are sockets.
func openFiles(pid int) (files, sockets int, err error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		// A descriptor closed since ReadDir has no link: it is not counted.
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil {
			files++
			if strings.HasPrefix(target, "socket:") {
				sockets++
			}
		}
	}
	return files, sockets, nil
}

func statusKiB(status, field string) int64 {
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

// cpuSeconds is utime + stime (fields 14 and 15) of a /proc/PID/stat line; the fields are counted
// after the command name, which may hold spaces and parentheses.
func cpuSeconds(stat string) (float64, error) {
	end := strings.LastIndex(stat, ")")
	if end < 0 {
		return 0, fmt.Errorf("stat %q: no command name", stat)
	}
	fields := strings.Fields(stat[end+1:]) // fields[0] is field 3 (state)
	if len(fields) < 13 {
		return 0, fmt.Errorf("stat %q: too few fields", stat)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat %q: utime or stime not a number", stat)
	}
	return (utime + stime) / clockTicks, nil
}

// sampler reads a process's usage every interval, keeping the samples.
type sampler struct {
	pid     int
	mu      sync.Mutex
	samples []usage
	err     error
}

func (s *sampler) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		u, err := readUsage(s.pid)
		s.mu.Lock()
		if err != nil {
			s.err = err
		} else {
			s.samples = append(s.samples, u)
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// between are the samples taken from from until to.
func (s *sampler) between(from, to time.Time) []usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []usage
	for _, u := range s.samples {
		if !u.at.Before(from) && !u.at.After(to) {
			out = append(out, u)
		}
	}
	return out
}

// meanOf is the mean of one field of samples.
func meanOf[T int | int64](samples []usage, field func(usage) T) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum T
	for _, u := range samples {
		sum += field(u)
	}
	return float64(sum) / float64(len(samples))
}

// maxOf is the largest value of one field of samples.
func maxOf[T int | int64](samples []usage, field func(usage) T) float64 {
	var most T
	for _, u := range samples {
		most = max(most, field(u))
	}
	return float64(most)
}

// cpuByProcess is the CPU time so far of each process of pids, and of this one (the harness, with
// the local cluster's sync loop), by name.
func cpuByProcess(pids map[string]int) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range pids {
		if u, err := readUsage(pid); err == nil {
			out[name] = u.cpuSeconds
		}
	}
	if u, err := readUsage(os.Getpid()); err == nil {
		out["bench (harness and sync loop)"] = u.cpuSeconds
	}
	return out
}

// cpuShares says, busiest first, how many CPU seconds each process used between two readings of
// cpuByProcess.
func cpuShares(before, after map[string]float64) string {
	used := diff(after, before)
	names := slices.Collect(maps.Keys(used))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(used[b], used[a]) })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", n, used[n]))
	}
	return strings.Join(parts, ", ")
}
