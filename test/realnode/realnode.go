// Package realnode runs real Aerospike server nodes on this machine, each as the official image runs
// it in a pod: `as-tini-static -r SIGUSR1 -t SIGTERM -- asd --foreground --config-file
// /etc/aerospike/aerospike.conf` as PID 1 of a PID namespace of its own, in a network namespace of its
// own (a veth into a bridge this launcher creates, the node's IP, a route via the bridge), with a
// private mount namespace holding its /opt/aerospike, /etc/aerospike, /etc/hosts and volumes.
//
// A node is a sandbox (a small process holding the network and UTS namespaces, as a pod's pause
// container does) and a container (the PID and mount namespaces, tini and asd). A container that exits
// can be started again in the same sandbox (Restart), as a kubelet restarts a container in its pod.
//
// Everything the launcher creates is recorded under Options.Dir before it is created, so that Cleanup,
// and CleanupLeftovers after a crashed run, remove exactly that: never a process, link or namespace it
// did not start. The namespaces of a node live only as long as its processes, so no mount and no
// /run/netns entry is ever left on the machine.
package realnode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/acko-io/acko/test/testenv"
)

// EnvASDDir names the directory holding asd and as-tini-static.
const EnvASDDir = "ACKO_ASD_DIR"

// Binary names, as the image's command line names them.
const (
	asdBinary  = "asd"
	tiniBinary = "as-tini-static"
)

// defaultASDSubdir is where the binaries are, relative to the directory above the repository.
var defaultASDSubdir = filepath.Join("shared", "aerospike-ce-8.1.2.0", "bin")

// ErrNoPermission is returned when this process may not create namespaces or links (not root).
var ErrNoPermission = errors.New("realnode: no permission to create network, PID and mount namespaces " +
	"(real nodes need root)")

// Options say where a launcher keeps its state and which addresses its nodes use. Two launchers with
// different Dir, Bridge and Subnet run side by side.
type Options struct {
	// Dir holds the records of what the launcher created, and each node's private files.
	Dir string
	// Bridge is the name of the bridge joining the nodes and this machine (at most 15 characters).
	Bridge string
	// Subnet is the nodes' range; the bridge takes its first address, which is the nodes' gateway
	// and this machine's address towards them.
	Subnet netip.Prefix
	// ASDDir holds asd and as-tini-static; empty: ASDDir().
	ASDDir string
	// OpenFiles is the open-file limit asd runs under; zero: the image's (1048576), or this process's
	// hard limit when lower and this machine does not let root raise it (no CAP_SYS_RESOURCE).
	OpenFiles int
	// DieWithParent makes a node's processes get SIGKILL when the thread that started them ends, so
	// a crashed test binary leaves no asd running.
	DieWithParent bool
}

// ASDDir is $ACKO_ASD_DIR, else ../shared/aerospike-ce-8.1.2.0/bin beside the repository (or beside
// the main checkout, when the repository is a git worktree of it).
func ASDDir() string {
	if d := os.Getenv(EnvASDDir); d != "" {
		return d
	}
	root := testenv.RepoRoot()
	dir := filepath.Join(root, "..", defaultASDSubdir)
	if _, err := os.Stat(dir); err == nil {
		return filepath.Clean(dir)
	}
	// A worktree's .git is a file "gitdir: <main>/.git/worktrees/<name>".
	if b, err := os.ReadFile(filepath.Join(root, ".git")); err == nil {
		if gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok {
			main := filepath.Dir(filepath.Dir(filepath.Dir(gitdir)))
			return filepath.Join(filepath.Dir(main), defaultASDSubdir)
		}
	}
	return filepath.Clean(dir)
}

// defaultOpenFiles is the open-file limit of the official image's containers (containerd's default).
const defaultOpenFiles = 1048576

// Launcher starts and stops real nodes.
type Launcher struct {
	opts    Options
	gateway netip.Addr
	mu      sync.Mutex
	nodes   map[string]*Node
}

// New checks that real nodes can run here (root, the binaries, the tools), cleans up what an earlier
// run of a launcher with the same Dir left, and creates the bridge.
func New(ctx context.Context, opts Options) (*Launcher, error) {
	opts.ASDDir = cmp.Or(opts.ASDDir, ASDDir())
	if opts.OpenFiles == 0 {
		opts.OpenFiles = defaultOpenFiles
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Max < defaultOpenFiles &&
			!canRaiseLimits() {
			opts.OpenFiles = int(lim.Max) //nolint:gosec // below defaultOpenFiles
		}
	}
	if opts.Dir == "" || opts.Bridge == "" || !opts.Subnet.IsValid() {
		return nil, errors.New("realnode: Options need Dir, Bridge and Subnet")
	}
	if len(opts.Bridge) > 15 {
		return nil, fmt.Errorf("realnode: bridge name %q is longer than 15 characters", opts.Bridge)
	}
	if err := Check(ctx, opts.ASDDir); err != nil {
		return nil, err
	}
	l := &Launcher{opts: opts, gateway: opts.Subnet.Masked().Addr().Next(), nodes: map[string]*Node{}}
	if err := CleanupLeftovers(opts.Dir); err != nil {
		return nil, err
	}
	if err := l.createBridge(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Gateway is this machine's address on the bridge.
func (l *Launcher) Gateway() netip.Addr { return l.gateway }

// canRaiseLimits says whether this process has CAP_SYS_RESOURCE (bit 24 of its effective set).
func canRaiseLimits() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}

// Check reports why real nodes cannot run here: not root (ErrNoPermission), a tool missing, or asd or
// tini missing or unrunnable in asdDir (the error names the path and EnvASDDir).
func Check(ctx context.Context, asdDir string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: running as uid %d", ErrNoPermission, os.Geteuid())
	}
	for tool, pkg := range map[string]string{"ip": "iproute2", "unshare": "util-linux", "nsenter": "util-linux",
		"mount": "mount", "sleep": "coreutils", "sh": "dash"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("realnode: %s not found in PATH: install Debian's %s", tool, pkg)
		}
	}
	for _, bin := range []struct{ name, arg, want string }{
		{asdBinary, "--version", "Aerospike Community Edition"},
		{tiniBinary, "--version", "tini"},
	} {
		path := filepath.Join(asdDir, bin.name)
		out, err := exec.CommandContext(ctx, path, bin.arg).CombinedOutput()
		if err != nil || !strings.Contains(string(out), bin.want) {
			return fmt.Errorf("realnode: %s cannot run (set %s to the directory holding %s and %s): %v %s",
				path, EnvASDDir, asdBinary, tiniBinary, err, clip(out))
		}
	}
	// A namespace of each kind, at once: a machine that forbids them says so here, not at a node's start.
	if out, err := exec.CommandContext(ctx, "unshare", "--net", "--uts", "--pid", "--fork", "--mount",
		"--mount-proc", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("%w: unshare: %v %s", ErrNoPermission, err, clip(out))
	}
	return nil
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// run runs a command of the launcher's own (ip, nsenter) and returns its error with its output.
func run(ctx context.Context, stdin string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, clip(out))
	}
	return nil
}
