package realnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	if len(argv) == 0 {
		return -1, errors.New("realnode: exec needs a command")
	}
	n, err := l.Node(name)
	if err != nil {
		return -1, err
	}
	nsFiles, err := n.openNamespaces()
	if err != nil {
		return -1, err
	}
	defer closeAll(nsFiles)
	// nsenter opens every namespace file before it enters any: fds 3.. are the ones held here.
	args := []string{"--net=/proc/self/fd/3", "--uts=/proc/self/fd/4", "--pid=/proc/self/fd/5",
		"--mount=/proc/self/fd/6", "--wd=/", "--"}
	cmd := exec.CommandContext(ctx, "nsenter", append(args, argv...)...)
	cmd.ExtraFiles = nsFiles
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = l.sysProcAttr()
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

// openNamespaces opens the namespaces of the node's tini (network, UTS, PID, mount, in that order).
// Open, they stay what they are even if tini ends; checked against tini's record after opening, they
// are this node's and no other process's that took its PID.
func (n *Node) openNamespaces() ([]*os.File, error) {
	tini := n.tiniRecord()
	var files []*os.File
	for _, ns := range []string{"net", "uts", "pid", "mnt"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/%s", tini.PID, ns))
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("realnode: node %s: its container is not running: %w", n.spec.Name, err)
		}
		files = append(files, f)
	}
	if !tini.Alive() {
		closeAll(files)
		return nil, fmt.Errorf("realnode: node %s: its container is not running", n.spec.Name)
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
