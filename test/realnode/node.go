package realnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acko-io/acko/test/proc"
)

// Paths inside a node, as the official image has them.
const (
	WorkDir    = "/opt/aerospike"
	ConfigDir  = "/etc/aerospike"
	ConfigFile = ConfigDir + "/aerospike.conf"
)

// startTimeout bounds the steps of a start: the sandbox, the links, tini's exec.
const startTimeout = 10 * time.Second

// Mount is a file or directory of this machine seen at Path inside the node, as a volume is.
type Mount struct {
	Path     string // inside the node, absolute
	Source   string // on this machine: an existing directory or file
	ReadOnly bool
}

// NodeSpec is a node to start.
type NodeSpec struct {
	// Name identifies the node in the launcher (e.g. "namespace/pod"); its state directory, links and
	// records are named after it.
	Name string
	// IP is the node's address, inside the launcher's Subnet.
	IP netip.Addr
	// Hostname is the node's host name (a pod's: its name); empty: the last part of Name.
	Hostname string
	// Config, when set, is written to /etc/aerospike/aerospike.conf before asd starts (into the
	// Mount at /etc/aerospike when there is one, else into the node's private directory).
	Config []byte
	// Hosts is /etc/hosts; Launcher.WriteHosts rewrites it in place while the node runs.
	Hosts []byte
	// Mounts are bound in the node after its private /opt/aerospike and /etc/aerospike, parents
	// before their children: a Mount at one of those paths takes its place. A mount point that does
	// not exist is made (on this machine, outside /opt/aerospike: an empty directory or file).
	Mounts []Mount
	// LogPath is where asd's output goes, in the CRI format a kubelet writes container logs in;
	// empty: <Dir>/nodes/<node>/container.log.
	LogPath string
}

// Node is a running node: its sandbox, and its container while one runs.
type Node struct {
	spec NodeSpec
	dir  string
	veth string

	mu        sync.Mutex
	sandbox   proc.Record
	container *container
}

// container is one run of tini and asd in the sandbox.
type container struct {
	unshare proc.Record // outside the PID namespace: nsenter exec'd into unshare
	tini    proc.Record // PID 1 of the namespace
	done    chan struct{}
	exit    int // once done: the container's exit code (128+N for signal N)
	started time.Time
}

// Exited is closed when the node's current container has exited.
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.container.done
}

// ExitCode is the exit code of the node's last container, and whether it has exited.
func (n *Node) ExitCode() (int, bool) {
	n.mu.Lock()
	c := n.container
	n.mu.Unlock()
	select {
	case <-c.done:
		return c.exit, true
	default:
		return 0, false
	}
}

// Spec is what the node was started with.
func (n *Node) Spec() NodeSpec { return n.spec }

// LogPath is the node's container log (CRI format).
func (n *Node) LogPath() string { return n.spec.LogPath }

// TiniPID is the host PID of the node's tini (PID 1 in the node).
func (n *Node) TiniPID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.container.tini.PID
}

// ASDPID is the host PID of the node's asd (tini's child), waiting up to timeout for one.
func (n *Node) ASDPID(timeout time.Duration) (int, error) {
	tini := n.tiniRecord()
	pid, err := proc.FirstChild(tini.PID, timeout)
	if err != nil {
		return 0, fmt.Errorf("node %s: no asd under tini: %w", n.spec.Name, err)
	}
	return pid, nil
}

func (n *Node) tiniRecord() proc.Record {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.container.tini
}

// RSS is asd's resident memory in bytes (VmRSS).
func (n *Node) RSS() (int64, error) {
	pid, err := n.ASDPID(time.Second)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// safeName turns a node name into a file name.
func safeName(name string) string {
	return strings.NewReplacer("/", "_", " ", "_", "..", "_").Replace(name)
}

// vethName is the host side of a node's link: short (15 characters at most) and unique per
// bridge and node.
func vethName(bridge, node string) string {
	sum := sha256.Sum256([]byte(bridge + "\x00" + node))
	return "ra" + hex.EncodeToString(sum[:6])
}

// macOf gives a node's interface the same locally administered MAC at every start, so that the
// other nodes' ARP entries stay right when its container (and so its link) is made again.
func macOf(ip netip.Addr) string {
	a := ip.As4()
	return fmt.Sprintf("02:ac:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3])
}

// Node returns the running node of that name.
func (l *Launcher) Node(name string) (*Node, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.nodes[name]
	if !ok {
		return nil, fmt.Errorf("realnode: no node %q", name)
	}
	return n, nil
}

// Start starts a node: its sandbox (network and UTS namespaces, the link into the bridge) and its
// container. It returns once tini runs; asd then starts as it does in a pod.
func (l *Launcher) Start(ctx context.Context, spec NodeSpec) (*Node, error) {
	if err := l.validate(spec); err != nil {
		return nil, err
	}
	n := &Node{spec: spec, dir: filepath.Join(l.opts.Dir, "nodes", safeName(spec.Name)),
		veth: vethName(l.opts.Bridge, spec.Name)}
	if n.spec.Hostname == "" {
		n.spec.Hostname = path.Base(spec.Name)
	}
	if n.spec.LogPath == "" {
		n.spec.LogPath = filepath.Join(n.dir, "container.log")
	}
	l.mu.Lock()
	if _, ok := l.nodes[spec.Name]; ok {
		l.mu.Unlock()
		return nil, fmt.Errorf("realnode: node %q runs already", spec.Name)
	}
	l.nodes[spec.Name] = n
	l.mu.Unlock()
	if err := l.start(ctx, n); err != nil {
		return nil, errors.Join(fmt.Errorf("realnode: start %s: %w", spec.Name, err), l.Stop(spec.Name))
	}
	return n, nil
}

func (l *Launcher) validate(spec NodeSpec) error {
	switch {
	case spec.Name == "":
		return errors.New("realnode: a node needs a Name")
	case !spec.IP.Is4() || !l.opts.Subnet.Contains(spec.IP) || spec.IP == l.gateway:
		return fmt.Errorf("realnode: node %s: IP %s is not a node address of %s", spec.Name, spec.IP, l.opts.Subnet)
	}
	for _, m := range spec.Mounts {
		if !path.IsAbs(m.Path) || path.Clean(m.Path) != m.Path || m.Path == "/" {
			return fmt.Errorf("realnode: node %s: mount path %q is not a clean absolute path", spec.Name, m.Path)
		}
		if _, err := os.Stat(m.Source); err != nil {
			return fmt.Errorf("realnode: node %s: mount %s: %w", spec.Name, m.Path, err)
		}
	}
	return nil
}

func (l *Launcher) start(ctx context.Context, n *Node) error {
	for _, d := range []string{n.privateWorkDir(), filepath.Join(n.privateWorkDir(), "smd"),
		filepath.Join(n.privateWorkDir(), "usr", "udf", "lua"), n.privateConfigDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(n.hostsPath(), n.spec.Hosts, 0o644); err != nil {
		return err
	}
	// No name server: a name /etc/hosts does not hold fails at once, as it would for a name the
	// cluster DNS does not know; nothing leaves the bridge.
	if err := os.WriteFile(n.resolvPath(), []byte("# realnode: names resolve through /etc/hosts only\n"), 0o644); err != nil {
		return err
	}
	if n.spec.Config != nil {
		if err := os.WriteFile(filepath.Join(n.configSource(), filepath.Base(ConfigFile)), n.spec.Config, 0o644); err != nil {
			return err
		}
	}
	if err := l.startSandbox(ctx, n); err != nil {
		return err
	}
	return l.startContainer(n)
}

func (n *Node) privateWorkDir() string   { return filepath.Join(n.dir, "opt-aerospike") }
func (n *Node) privateConfigDir() string { return filepath.Join(n.dir, "etc-aerospike") }
func (n *Node) hostsPath() string        { return filepath.Join(n.dir, "hosts") }
func (n *Node) resolvPath() string       { return filepath.Join(n.dir, "resolv.conf") }

// configSource is the directory of this machine seen at /etc/aerospike in the node.
func (n *Node) configSource() string {
	for _, m := range n.spec.Mounts {
		if m.Path == ConfigDir {
			return m.Source
		}
	}
	return n.privateConfigDir()
}

// mounts are every bind mount of the node's container, parents first.
func (n *Node) mounts() []Mount {
	ms := []Mount{{Path: WorkDir, Source: n.privateWorkDir()}, {Path: ConfigDir, Source: n.privateConfigDir()}}
	ms = slices.DeleteFunc(ms, func(m Mount) bool {
		return slices.ContainsFunc(n.spec.Mounts, func(o Mount) bool { return o.Path == m.Path })
	})
	ms = append(ms, n.spec.Mounts...)
	slices.SortStableFunc(ms, func(a, b Mount) int { return strings.Count(a.Path, "/") - strings.Count(b.Path, "/") })
	return append(ms, Mount{Path: "/etc/hosts", Source: n.hostsPath()}, Mount{Path: "/etc/resolv.conf", Source: n.resolvPath()})
}

// startSandbox starts the process that holds the node's network and UTS namespaces, and links the
// network namespace into the bridge with the node's address.
func (l *Launcher) startSandbox(ctx context.Context, n *Node) error {
	cmd := exec.Command("unshare", "--net", "--uts", "--", "sh", "-c", `hostname "$1" && exec sleep infinity`, "sh", n.spec.Hostname)
	cmd.SysProcAttr = l.sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaps it
	rec, err := proc.RecordOf(cmd.Process.Pid, "sandbox of "+n.spec.Name)
	if err == nil {
		n.sandbox = rec
		err = l.record(n)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	// The hostname is set before sleep runs: wait for the exec.
	if err := waitExec(rec, "sleep"); err != nil {
		return err
	}
	netns := fmt.Sprintf("/proc/%d/ns/net", rec.PID)
	bits := l.opts.Subnet.Bits()
	if err := run(ctx, "", "ip", "link", "add", n.veth, "type", "veth", "peer", "name", "eth0",
		"address", macOf(n.spec.IP), "netns", strconv.Itoa(rec.PID)); err != nil {
		return err
	}
	if err := run(ctx, "", "ip", "link", "set", n.veth, "master", l.opts.Bridge, "up"); err != nil {
		return err
	}
	inside := fmt.Sprintf("link set lo up\naddr add %s/%d dev eth0\nlink set eth0 up\nroute add default via %s\n",
		n.spec.IP, bits, l.gateway)
	return run(ctx, inside, "nsenter", "--net="+netns, "ip", "-batch", "-")
}

// waitExec waits until the recorded process runs the program named comm (after its shell exec'd).
func waitExec(rec proc.Record, comm string) error {
	deadline := time.Now().Add(startTimeout)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", rec.PID))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			return nil
		}
		if !rec.Alive() {
			return fmt.Errorf("%s (pid %d) ended before running %s", rec.Cmd, rec.PID, comm)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d) does not run %s after %s", rec.Cmd, rec.PID, comm, startTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *Launcher) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if l.opts.DieWithParent {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}

// containerScript runs as PID 1 of the node's new PID namespace, in its new mount namespace (private:
// nothing it mounts is seen outside): it binds the node's files, raises the open-file limit and
// becomes tini, which runs asd as the image does. Its arguments: the asd directory, the open-file
// limit, then each mount as source, path, "ro" or "rw".
const containerScript = `set -e
bin=$1 nofile=$2
shift 2
while [ $# -gt 0 ]; do
	if [ -d "$1" ]; then mkdir -p "$2"; elif [ ! -e "$2" ]; then mkdir -p "$(dirname "$2")"; : >"$2"; fi
	mount --bind "$1" "$2"
	if [ "$3" = ro ]; then mount -o remount,bind,ro "$2"; fi
	shift 3
done
ulimit -n "$nofile"
cd /
PATH=$bin:$PATH
export PATH
exec as-tini-static -r SIGUSR1 -t SIGTERM -- asd --foreground --config-file ` + ConfigFile + `
`

// startContainer starts tini and asd in the node's sandbox, asd's output going to the node's log.
func (l *Launcher) startContainer(n *Node) error {
	sb := n.sandbox.PID
	mounts := n.mounts()
	args := make([]string, 0, 14+3*len(mounts))
	args = append(args, fmt.Sprintf("--net=/proc/%d/ns/net", sb), fmt.Sprintf("--uts=/proc/%d/ns/uts", sb),
		"unshare", "--pid", "--fork", "--mount", "--mount-proc", "--kill-child",
		"sh", "-c", containerScript, "sh", l.opts.ASDDir, strconv.Itoa(l.opts.OpenFiles))
	for _, m := range mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		args = append(args, m.Source, m.Path, mode)
	}
	log, err := openCRILog(n.spec.LogPath)
	if err != nil {
		return err
	}
	cmd := exec.Command("nsenter", args...)
	cmd.SysProcAttr = l.sysProcAttr()
	cmd.Stdout, cmd.Stderr = log.stream("stdout"), log.stream("stderr")
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return err
	}
	c := &container{done: make(chan struct{}), started: time.Now()}
	unshare, err := proc.RecordOf(cmd.Process.Pid, "unshare of "+n.spec.Name)
	c.unshare = unshare
	go func() {
		err := cmd.Wait()
		c.exit = exitCode(cmd, err)
		_ = log.Close()
		close(c.done)
	}()
	if err == nil {
		err = n.setContainer(l, c)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	return nil
}

// setContainer records the container's tini once it runs.
func (n *Node) setContainer(l *Launcher, c *container) error {
	pid, err := proc.FirstChild(c.unshare.PID, startTimeout)
	if err != nil {
		return err
	}
	tini, err := proc.RecordOf(pid, "tini of "+n.spec.Name)
	if err != nil {
		return err
	}
	c.tini = tini
	n.mu.Lock()
	n.container = c
	n.mu.Unlock()
	if err := l.record(n); err != nil {
		return err
	}
	return waitExec(tini, tiniBinary)
}

// exitCode is the container's exit code as a kubelet reports it: the code, or 128+N for signal N.
func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

// Restart starts the node's container again in its sandbox after it exited, as a kubelet restarts
// a container: same IP, same files, new PID namespace.
func (l *Launcher) Restart(name string) error {
	n, err := l.Node(name)
	if err != nil {
		return err
	}
	if _, exited := n.ExitCode(); !exited {
		return fmt.Errorf("realnode: node %s: its container still runs", name)
	}
	return l.startContainer(n)
}

// Signal sends sig to the node's tini (PID 1 in the node): SIGUSR1 restarts asd in place (the warm
// restart), SIGTERM stops it.
func (l *Launcher) Signal(name string, sig syscall.Signal) error {
	n, err := l.Node(name)
	if err != nil {
		return err
	}
	return n.tiniRecord().Signal(sig)
}

// Kill sends SIGKILL to the node's asd (a crash: tini then exits with 137, and the container with it).
func (l *Launcher) Kill(name string) error {
	n, err := l.Node(name)
	if err != nil {
		return err
	}
	pid, err := n.ASDPID(time.Second)
	if err != nil {
		return err
	}
	rec, err := proc.RecordOf(pid, "asd of "+name)
	if err != nil {
		return err
	}
	return rec.Signal(syscall.SIGKILL)
}

// WriteHosts rewrites the node's /etc/hosts in place (same file, so the running node sees it).
func (l *Launcher) WriteHosts(name string, hosts []byte) error {
	n, err := l.Node(name)
	if err != nil {
		return err
	}
	return os.WriteFile(n.hostsPath(), hosts, 0o644) // truncates: the bind-mounted inode stays
}

// stopGrace is how long asd has to stop after SIGTERM before tini gets SIGKILL (asd takes about a
// second; a kubelet gives 30 s).
const stopGrace = 30 * time.Second

// Stop stops the node: SIGTERM to tini, SIGKILL after stopGrace, then its sandbox; its link goes
// with its network namespace. Its files stay in its directory.
func (l *Launcher) Stop(name string) error {
	l.mu.Lock()
	n, ok := l.nodes[name]
	l.mu.Unlock()
	if !ok {
		return nil
	}
	var errs []error
	n.mu.Lock()
	c := n.container
	n.mu.Unlock()
	if c != nil {
		errs = append(errs, stopContainer(c))
	}
	errs = append(errs, killAndWait(n.sandbox), deleteLink(n.veth))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.mu.Lock()
	delete(l.nodes, name)
	l.mu.Unlock()
	return os.Remove(l.recordPath(name))
}

func stopContainer(c *container) error {
	if err := c.tini.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(stopGrace):
	}
	// PID 1 gone, the kernel kills the rest of its namespace.
	return errors.Join(killAndWait(c.tini), killAndWait(c.unshare))
}

// killAndWait sends SIGKILL to a recorded process (only if it is still that one) and waits for it to go.
func killAndWait(rec proc.Record) error {
	if rec.PID == 0 {
		return nil
	}
	if err := rec.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !rec.WaitGone(10 * time.Second) {
		return fmt.Errorf("%s (pid %d) survived SIGKILL", rec.Cmd, rec.PID)
	}
	return nil
}
