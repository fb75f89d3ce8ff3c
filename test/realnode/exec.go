package realnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/acko-io/acko/test/proc"
)

// ExecResult is what a command run in a node gave.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Exec runs argv inside the node's namespaces (network, UTS, PID, mount: its /proc, its files), as
// `kubectl exec` into its container does, with stdin if not nil and env added to the environment.
// A command that runs and fails is a result with its exit code, not an error.
func (l *Launcher) Exec(ctx context.Context, name string, argv []string, env []string, stdin io.Reader) (ExecResult, error) {
	var out, errOut bytes.Buffer
	code, err := l.ExecStream(ctx, name, argv, env, stdin, &out, &errOut)
	return ExecResult{Stdout: out.Bytes(), Stderr: errOut.Bytes(), ExitCode: code}, err
}

// ExecStream is Exec with the command's output streamed to stdout and stderr.
func (l *Launcher) ExecStream(ctx context.Context, name string, argv []string, env []string, stdin io.Reader,
	stdout, stderr io.Writer,
) (int, error) {
	n, err := l.Node(name)
	if err != nil {
		return -1, err
	}
	return execIn(ctx, name, n.tiniRecord(), argv, env, stdin, stdout, stderr, l.sysProcAttr())
}

// ExecRecorded runs argv in the node that the launcher with state in dir recorded as name, as
// ExecStream does: for a process other than the launcher's (an exec shim of the local cluster).
func ExecRecorded(ctx context.Context, dir, name string, argv []string, env []string, stdin io.Reader,
	stdout, stderr io.Writer,
) (int, error) {
	var rec nodeRecord
	b, err := os.ReadFile(recordPath(dir, name))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil || len(rec.Procs) != 2 {
		return -1, fmt.Errorf("realnode: node %s: not running (no record in %s)", name, dir)
	}
	return execIn(ctx, name, rec.Procs[1], argv, env, stdin, stdout, stderr, nil)
}

// execIn runs argv in the namespaces of the node whose tini is recorded.
func execIn(ctx context.Context, name string, tini proc.Record, argv []string, env []string, stdin io.Reader,
	stdout, stderr io.Writer, attr *syscall.SysProcAttr,
) (int, error) {
	if len(argv) == 0 {
		return -1, errors.New("realnode: exec needs a command")
	}
	nsFiles, err := openNamespaces(name, tini)
	if err != nil {
		return -1, err
	}
	defer closeAll(nsFiles)
	// nsenter opens every namespace file before it enters any: fds 3.. are the ones held here.
	args := make([]string, 0, 6+len(argv))
	args = append(args, "--net=/proc/self/fd/3", "--uts=/proc/self/fd/4", "--pid=/proc/self/fd/5",
		"--mount=/proc/self/fd/6", "--wd=/", "--")
	cmd := exec.CommandContext(ctx, "nsenter", append(args, argv...)...)
	cmd.ExtraFiles = nsFiles
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = attr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("realnode: exec in %s: %w", name, err)
	}
	return 0, nil
}

// openNamespaces opens the namespaces of a node's tini (network, UTS, PID, mount, in that order).
// Open, they stay what they are even if tini ends; checked against tini's record after opening, they
// are this node's and no other process's that took its PID.
func openNamespaces(name string, tini proc.Record) ([]*os.File, error) {
	var files []*os.File
	for _, ns := range []string{"net", "uts", "pid", "mnt"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/%s", tini.PID, ns))
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("realnode: node %s: its container is not running: %w", name, err)
		}
		files = append(files, f)
	}
	if !tini.Alive() {
		closeAll(files)
		return nil, fmt.Errorf("realnode: node %s: its container is not running", name)
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
