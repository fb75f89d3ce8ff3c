package aerosim

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"
	"time"
)

// ErrNoFile is a file the node does not have (HTTP 404, like ErrNotFound).
var ErrNoFile = errors.New("no such file")

// A node's files are its pod's files as asd's container sees them (its config among them): the
// local cluster puts a pod's volumes there, and its exec shims read and change them, so that
// nothing on this machine is touched. asd reads NodeSpec.ConfigFile from them at every start.

// ProcLimits is the limits of the container's PID 1 (asd's, under tini): ReadFile answers it from
// NodeSpec.OpenFileLimit, so that a pod's limits are the simulated node's, not this machine's.
const ProcLimits = "/proc/1/limits"

// procLimitsRows are /proc/<pid>/limits of a containerd container (soft, hard, units), the open-file
// limit left to the node.
const procLimitsRows = `Limit|Soft Limit|Hard Limit|Units
Max cpu time|unlimited|unlimited|seconds
Max file size|unlimited|unlimited|bytes
Max data size|unlimited|unlimited|bytes
Max stack size|8388608|unlimited|bytes
Max core file size|unlimited|unlimited|bytes
Max resident set|unlimited|unlimited|bytes
Max processes|unlimited|unlimited|processes
Max open files|%[1]d|%[1]d|files
Max locked memory|8388608|8388608|bytes
Max address space|unlimited|unlimited|bytes
Max file locks|unlimited|unlimited|locks
Max pending signals|63448|63448|signals
Max msgqueue size|819200|819200|bytes
Max nice priority|0|0|
Max realtime priority|0|0|
Max realtime timeout|unlimited|unlimited|us`

// procLimits is /proc/<pid>/limits as Linux prints it ("%-25s %-20s %-20s %-10s" a row) with the
// node's open-file limit.
func procLimits(openFiles int64) string {
	var b strings.Builder
	for row := range strings.Lines(fmt.Sprintf(procLimitsRows, openFiles)) {
		cols := strings.Split(strings.TrimSuffix(row, "\n"), "|")
		fmt.Fprintf(&b, "%-25s %-20s %-20s %-10s\n", cols[0], cols[1], cols[2], cols[3])
	}
	return b.String()
}

// ReadFile returns a file of the node.
func (s *Sim) ReadFile(name, file string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _, err := s.find(name)
	if err != nil {
		return "", err
	}
	if path.Clean(file) == ProcLimits {
		return procLimits(n.spec.OpenFileLimit), nil
	}
	content, ok := n.files[path.Clean(file)]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNoFile, file)
	}
	return content, nil
}

// WriteFile creates or replaces a file of the node. A running asd does not notice; it reads its
// config file when it starts.
func (s *Sim) WriteFile(name, file, content string) error {
	if !path.IsAbs(file) {
		return fmt.Errorf("%w: %q is not an absolute path", ErrInvalid, file)
	}
	_, err := s.update(name, func(n *node, _ time.Time) error {
		n.files[path.Clean(file)] = content
		return nil
	})
	return err
}

// SetDir replaces every file directly in dir with files (name → content), as the kubelet does when
// it projects a ConfigMap into a volume.
func (s *Sim) SetDir(name, dir string, files map[string]string) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("%w: %q is not an absolute path", ErrInvalid, dir)
	}
	for f := range files {
		if f == "" || strings.Contains(f, "/") {
			return fmt.Errorf("%w: %q is not a file name", ErrInvalid, f)
		}
	}
	dir = path.Clean(dir)
	_, err := s.update(name, func(n *node, _ time.Time) error {
		maps.DeleteFunc(n.files, func(p, _ string) bool { return path.Dir(p) == dir })
		for f, content := range files {
			n.files[path.Join(dir, f)] = content
		}
		return nil
	})
	return err
}
