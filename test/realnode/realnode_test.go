package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/test/proc"
	"github.com/acko-io/acko/test/testcluster"
	"github.com/acko-io/acko/test/testenv"
)

// EnvReal turns the real-node tests on. They need root and the binaries, and create a bridge and
// namespaces, so `make test` skips them; `make test-real` (and so CI) sets it, and then a machine that
// cannot run them fails them: never a silent skip where they are asked for.
const EnvReal = "ACKO_REAL"

func requireReal(t *testing.T) {
	t.Helper()
	if os.Getenv(EnvReal) == "" {
		t.Skipf("real nodes: set %s=1 (make test-real) to run them; they need root and %s", EnvReal, EnvASDDir)
	}
}

// A missing or unrunnable binary is refused with its path and the variable that sets it.
func TestCheckNamesThePathAndTheVariable(t *testing.T) {
	if os.Geteuid() != 0 {
		if err := Check(t.Context(), t.TempDir()); !errors.Is(err, ErrNoPermission) {
			t.Fatalf("not root: got %v", err)
		}
		return
	}
	empty := t.TempDir()
	err := Check(t.Context(), empty)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(empty, "asd")) || !strings.Contains(err.Error(), EnvASDDir) {
		t.Fatalf("missing asd: got %v", err)
	}
	unrunnable := t.TempDir()
	if err := os.WriteFile(filepath.Join(unrunnable, "asd"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Check(t.Context(), unrunnable)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(unrunnable, "asd")) {
		t.Fatalf("unrunnable asd: got %v", err)
	}
}

// testLauncher is the launcher of the package's tests: a fixed state directory (so a crashed run's
// leftovers are removed by the next) and a range of the benchmarking network of its own, under a
// machine-wide lock (other checkouts run the same test).
func testLauncher(t *testing.T) *Launcher {
	t.Helper()
	lock, err := proc.Lock("acko-realnode-test.lock", func(path string) { t.Logf("waiting for %s", path) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	opts := Options{
		Dir:           filepath.Join(testenv.RepoRoot(), ".local", "realnode-test"),
		Bridge:        "acko-rntest",
		Subnet:        netip.MustParsePrefix("198.19.128.0/24"),
		DieWithParent: true,
	}
	l, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Cleanup(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if _, err := net.InterfaceByName(opts.Bridge); err == nil {
			t.Errorf("bridge %s left", opts.Bridge)
		}
		if left, _ := filepath.Glob(filepath.Join(opts.Dir, "records", "*")); len(left) > 0 {
			t.Errorf("records left: %v", left)
		}
	})
	return l
}

// Three real nodes on the operator's rendered config (mesh seeds by DNS name, a node id per pod) form
// one cluster; SIGUSR1 to one node's tini restarts its asd in place and it rejoins; a killed asd ends
// its container, which starts again in the same sandbox; nothing is left after cleanup.
func TestThreeRealNodes(t *testing.T) {
	requireReal(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	tr := startThree(ctx, t, testLauncher(t))
	tr.checkExec(ctx, t)
	for _, pod := range tr.pods {
		rss, err := tr.nodes[pod].RSS()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("asd of %s: RSS %d MiB", pod, rss>>20)
	}
	tr.checkWarmRestart(ctx, t, tr.pods[1])
	tr.checkCrash(ctx, t, tr.pods[2])
}

// trio is three running nodes of a 3-pod cluster as the operator renders it.
type trio struct {
	l     *Launcher
	c     *ackov1alpha1.AerospikeCluster
	pods  []string
	ips   map[string]netip.Addr
	nodes map[string]*Node
	info  *aerospike.Client
}

func startThree(ctx context.Context, t *testing.T, l *Launcher) *trio {
	t.Helper()
	tr := &trio{l: l, c: testcluster.New("realnode", "db", 3), ips: map[string]netip.Addr{}, nodes: map[string]*Node{},
		info: aerospike.NewClient(aerospike.ClientOptions{})}
	template, err := config.Render(tr.c, tr.c.RackPlan()[0], ackov1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	tr.pods = tr.c.DesiredPodNames()
	hosts := "127.0.0.1\tlocalhost\n"
	for i, pod := range tr.pods {
		tr.ips[pod] = netip.AddrFrom4([4]byte{198, 19, 128, byte(10 + i)})
		hosts += fmt.Sprintf("%s\t%s %s\n", tr.ips[pod], tr.c.PodDNSName(pod, ackov1alpha1.DefaultClusterDomain), pod)
	}
	started := time.Now()
	for _, pod := range tr.pods {
		n, err := l.Start(ctx, NodeSpec{Name: "realnode/" + pod, IP: tr.ips[pod], Hosts: []byte(hosts),
			Config: []byte(config.PodFile(template, config.PodValues{NodeID: config.PodNodeID(tr.c, pod)}))})
		if err != nil {
			t.Fatal(err)
		}
		tr.nodes[pod] = n
	}
	waitCluster(ctx, t, tr.info, tr.c, tr.ips)
	t.Logf("3 nodes formed one cluster %s after the first start", time.Since(started).Round(100*time.Millisecond))
	return tr
}

// checkExec: a command runs in the node's namespaces (its PID 1 the image's tini, its host name, its
// files), through the launcher and through its record.
func (tr *trio) checkExec(ctx context.Context, t *testing.T) {
	t.Helper()
	first := "realnode/" + tr.pods[0]
	res, err := tr.l.Exec(ctx, first, []string{"cat", "/proc/1/cmdline"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.ReplaceAll(string(res.Stdout), "\x00", " "),
		"as-tini-static -r SIGUSR1 -t SIGTERM -- asd --foreground --config-file /etc/aerospike/aerospike.conf "; got != want {
		t.Fatalf("PID 1 in the node: %q, want %q", got, want)
	}
	res, err = tr.l.Exec(ctx, first, []string{"sh", "-c", "hostname; ls /opt/aerospike; cat /nonexistent"}, nil, nil)
	if err != nil || res.ExitCode != 1 || string(res.Stdout) != tr.pods[0]+"\nsmd\nusr\n" ||
		!strings.Contains(string(res.Stderr), "No such file") {
		t.Fatalf("exec: %v %+v %q %q", err, res, res.Stdout, res.Stderr)
	}
	// What an exec shim of another process does: the node found by its record.
	var out strings.Builder
	code, err := ExecRecorded(ctx, tr.l.opts.Dir, "realnode/"+tr.pods[2], []string{"hostname"}, nil, nil, &out, &out)
	if err != nil || code != 0 || out.String() != tr.pods[2]+"\n" {
		t.Fatalf("exec by record: %v, exit %d, %q", err, code, out.String())
	}
}

// checkWarmRestart: SIGUSR1 to the pod's tini restarts its asd (uptime reset), tini stays, the others
// keep theirs, and the cluster forms again.
func (tr *trio) checkWarmRestart(ctx context.Context, t *testing.T, pod string) {
	t.Helper()
	node := tr.nodes[pod]
	tini := node.TiniPID()
	asdBefore, err := node.ASDPID(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	uptime := uptimeOf(ctx, t, tr.info, tr.ips[pod])
	others := map[string]int{}
	for _, p := range tr.pods {
		if p != pod {
			others[p], _ = tr.nodes[p].ASDPID(time.Second)
		}
	}
	restarted := time.Now()
	if err := tr.l.Signal("realnode/"+pod, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "asd of "+pod+" restarted by tini", func() bool {
		pid, err := node.ASDPID(0)
		return err == nil && pid != asdBefore
	})
	waitCluster(ctx, t, tr.info, tr.c, tr.ips)
	t.Logf("warm restart: one cluster again %s after SIGUSR1", time.Since(restarted).Round(100*time.Millisecond))
	if node.TiniPID() != tini || !node.tiniRecord().Alive() {
		t.Fatal("tini did not stay")
	}
	// A reset uptime counts from the signal at most: one that did not reset has grown from its old value.
	if now, since := uptimeOf(ctx, t, tr.info, tr.ips[pod]), int(time.Since(restarted).Seconds())+1; now > since {
		t.Fatalf("uptime %d s after the warm restart %d s ago (%d s before it)", now, since, uptime)
	}
	for p, pid := range others {
		if now, _ := tr.nodes[p].ASDPID(0); now != pid {
			t.Fatalf("asd of %s restarted too", p)
		}
	}
}

// checkCrash: a killed asd ends its container with 128+9; it starts again in its sandbox and rejoins;
// the container log is asd's output in the CRI format.
func (tr *trio) checkCrash(ctx context.Context, t *testing.T, pod string) {
	t.Helper()
	name := "realnode/" + pod
	if err := tr.l.Kill(name); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.nodes[pod].Exited():
	case <-ctx.Done():
		t.Fatal("the container did not end after its asd was killed")
	}
	if code, _ := tr.nodes[pod].ExitCode(); code != 137 {
		t.Fatalf("exit code %d after SIGKILL of asd, want 137", code)
	}
	if err := tr.l.Restart(name); err != nil {
		t.Fatal(err)
	}
	waitCluster(ctx, t, tr.info, tr.c, tr.ips)
	log, err := os.ReadFile(tr.nodes[pod].LogPath())
	if err != nil || !strings.Contains(string(log), " stderr F ") || !strings.Contains(string(log), "service ready") {
		t.Fatalf("container log (CRI format, asd's lines): %v\n%.2000s", err, log)
	}
}

// waitCluster waits until every node answers with the node id of its pod, a cluster of all of them
// and one cluster key.
func waitCluster(ctx context.Context, t *testing.T, info *aerospike.Client, c *ackov1alpha1.AerospikeCluster,
	ips map[string]netip.Addr,
) {
	t.Helper()
	last := ""
	waitFor(ctx, t, "one cluster of every node", func() bool {
		keys := map[string]bool{}
		for pod, ip := range ips {
			got, err := info.Info(ctx, ip.String()+":3000", "node", "statistics")
			if err != nil {
				last = err.Error()
				return false
			}
			stats := aerospike.ParseKV(got["statistics"])
			if got["node"] != config.PodNodeID(c, pod) || stats["cluster_size"] != strconv.Itoa(len(ips)) ||
				stats["migrate_partitions_remaining"] != "0" {
				last = fmt.Sprintf("%s: node %s, cluster_size %s, migrations %s", pod, got["node"],
					stats["cluster_size"], stats["migrate_partitions_remaining"])
				return false
			}
			keys[stats["cluster_key"]] = true
		}
		last = fmt.Sprintf("cluster keys %v", keys)
		return len(keys) == 1
	}, func() string { return last })
}

func uptimeOf(ctx context.Context, t *testing.T, info *aerospike.Client, ip netip.Addr) int {
	t.Helper()
	got, err := info.Info(ctx, ip.String()+":3000", "statistics")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(aerospike.ParseKV(got["statistics"])["uptime"])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(ctx context.Context, t *testing.T, what string, ok func() bool, why ...func() string) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			msg := ""
			for _, w := range why {
				msg += ": " + w()
			}
			t.Fatalf("waiting for %s: %v%s", what, ctx.Err(), msg)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A bridge of the launcher's name whose records were lost (its state directory deleted while it ran)
// is the launcher's own when it has the launcher's MAC and no ports: the next launcher removes and
// makes it again. Any other link of that name is someone else's, refused and left alone.
func TestABridgeWhoseRecordsWereLost(t *testing.T) {
	requireReal(t)
	lock, err := proc.Lock("acko-realnode-test.lock", func(path string) { t.Logf("waiting for %s", path) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	opts := Options{Dir: t.TempDir(), Bridge: "acko-rnlost", Subnet: netip.MustParsePrefix("198.19.130.0/24")}
	gateway := opts.Subnet.Addr().Next()
	addBridge := func(mac string) {
		t.Helper()
		if err := run(t.Context(), "", "ip", "link", "add", opts.Bridge, "address", mac, "type", "bridge"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = run(context.Background(), "", "ip", "link", "del", opts.Bridge) })
	}

	addBridge(macOf(gateway))
	l, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("a bridge of ours with its records lost: %v", err)
	}
	if err := l.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.InterfaceByName(opts.Bridge); err == nil {
		t.Fatalf("bridge %s left after cleanup", opts.Bridge)
	}

	addBridge("02:00:00:00:00:01")
	if _, err := New(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "is not one this launcher recorded") {
		t.Fatalf("someone else's link: got %v", err)
	}
	if iface, err := net.InterfaceByName(opts.Bridge); err != nil || iface.HardwareAddr.String() != "02:00:00:00:00:01" {
		t.Fatalf("someone else's link was touched: %v %v", iface, err)
	}
}
