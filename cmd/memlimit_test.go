package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	t.Setenv("GOMEMLIMIT", "")
	dir := t.TempDir()
	file := func(content string) string {
		path := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if got := setMemoryLimit(file("536870912\n")); got != 483183819 || debug.SetMemoryLimit(-1) != got {
		t.Errorf("512 MiB container: soft limit %d, runtime's %d; want 90 %%", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	for what, path := range map[string]string{"no limit": file("max\n"), "no cgroup v2": filepath.Join(dir, "none")} {
		if got := setMemoryLimit(path); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
			t.Errorf("%s: soft limit %d", what, got)
		}
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := setMemoryLimit(file("536870912\n")); got != 0 {
		t.Errorf("GOMEMLIMIT set: the manager set %d over it", got)
	}
}
