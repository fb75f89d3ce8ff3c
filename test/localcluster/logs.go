package localcluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DumpLogs writes the last lines of each log of the cluster to w: what a failed test shows.
func (o Options) DumpLogs(w io.Writer, lines int) {
	files, _ := filepath.Glob(o.LogPath("*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		_, _ = fmt.Fprintf(w, "\n===== %s (last %d lines) =====\n%s\n", f, lines,
			strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
}

// Running lists the recorded processes that still run, sorted.
func (o Options) Running() []string {
	out := names(o.runningRecords())
	slices.Sort(out)
	return out
}

// IsRunning says whether the process the cluster started as name still runs.
func (o Options) IsRunning(name string) bool {
	_, ok := o.runningRecords()[name]
	return ok
}
