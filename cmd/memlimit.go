package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupMemoryMax is the container's memory limit under cgroup v2.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// setMemoryLimit gives the Go runtime a soft memory limit of 90 % of the container's (the cgroup v2
// file memoryMax), unless GOMEMLIMIT is set or there is no limit: the garbage collector then works
// harder as the heap nears the limit, instead of the kernel killing the manager while a thousand
// clusters start. It returns the limit it set, 0 for none.
func setMemoryLimit(memoryMax string) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	data, err := os.ReadFile(memoryMax)
	if err != nil {
		return 0
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64) // "max": no limit
	if err != nil || limit <= 0 {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	return soft
}
