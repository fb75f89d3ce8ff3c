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
	l := testLauncher(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	c := testcluster.New("realnode", "db", 3)
	template, err := config.Render(c, c.RackPlan()[0], ackov1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	pods := c.DesiredPodNames()
	ips := map[string]netip.Addr{}
	hosts := "127.0.0.1\tlocalhost\n"
	for i, pod := range pods {
		ips[pod] = netip.AddrFrom4([4]byte{198, 19, 128, byte(10 + i)})
		hosts += fmt.Sprintf("%s\t%s %s\n", ips[pod], c.PodDNSName(pod, ackov1alpha1.DefaultClusterDomain), pod)
	}
	started := time.Now()
	nodes := map[string]*Node{}
	for _, pod := range pods {
		n, err := l.Start(ctx, NodeSpec{Name: "realnode/" + pod, IP: ips[pod], Hosts: []byte(hosts),
			Config: []byte(config.PodFile(template, config.PodValues{NodeID: config.PodNodeID(c, pod)}))})
		if err != nil {
			t.Fatal(err)
		}
		nodes[pod] = n
	}
	info := aerospike.NewClient(aerospike.ClientOptions{})
	waitCluster(ctx, t, info, c, ips)
	t.Logf("3 nodes formed one cluster %s after the first start", time.Since(started).Round(100*time.Millisecond))

	first := "realnode/" + pods[0]
	res, err := l.Exec(ctx, first, []string{"cat", "/proc/1/cmdline"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.ReplaceAll(string(res.Stdout), "\x00", " "),
		"as-tini-static -r SIGUSR1 -t SIGTERM -- asd --foreground --config-file /etc/aerospike/aerospike.conf "; got != want {
		t.Fatalf("PID 1 in the node: %q, want %q", got, want)
	}
	res, err = l.Exec(ctx, first, []string{"sh", "-c", "hostname; ls /opt/aerospike; cat /nonexistent"}, nil, nil)
	if err != nil || res.ExitCode != 1 || string(res.Stdout) != pods[0]+"\nsmd\nusr\n" ||
		!strings.Contains(string(res.Stderr), "No such file") {
		t.Fatalf("exec: %v %+v %q %q", err, res, res.Stdout, res.Stderr)
	}
	// What an exec shim of another process does: the node found by its record.
	var out strings.Builder
	code, err := ExecRecorded(ctx, l.opts.Dir, "realnode/"+pods[2], []string{"hostname"}, nil, nil, &out, &out)
	if err != nil || code != 0 || out.String() != pods[2]+"\n" {
		t.Fatalf("exec by record: %v, exit %d, %q", err, code, out.String())
	}
	for _, pod := range pods {
		rss, err := nodes[pod].RSS()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("asd of %s: RSS %d MiB", pod, rss>>20)
	}

	// The warm restart: tini stays, asd starts again.
	second := "realnode/" + pods[1]
	tini := nodes[pods[1]].TiniPID()
	asdBefore, err := nodes[pods[1]].ASDPID(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	uptime := uptimeOf(ctx, t, info, ips[pods[1]])
	others := map[string]int{}
	for _, pod := range []string{pods[0], pods[2]} {
		others[pod], _ = nodes[pod].ASDPID(time.Second)
	}
	restarted := time.Now()
	if err := l.Signal(second, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "asd of "+pods[1]+" restarted by tini", func() bool {
		pid, err := nodes[pods[1]].ASDPID(0)
		return err == nil && pid != asdBefore
	})
	waitCluster(ctx, t, info, c, ips)
	t.Logf("warm restart: one cluster again %s after SIGUSR1", time.Since(restarted).Round(100*time.Millisecond))
	if nodes[pods[1]].TiniPID() != tini || !nodes[pods[1]].tiniRecord().Alive() {
		t.Fatal("tini did not stay")
	}
	// A reset uptime counts from the signal at most: one that did not reset has grown from its old value.
	if now, since := uptimeOf(ctx, t, info, ips[pods[1]]), int(time.Since(restarted).Seconds())+1; now > since {
		t.Fatalf("uptime %d s after the warm restart %d s ago (%d s before it)", now, since, uptime)
	}
	for pod, pid := range others {
		if now, _ := nodes[pod].ASDPID(0); now != pid {
			t.Fatalf("asd of %s restarted too", pod)
		}
	}

	// A crash: the container ends with asd's 128+9, and starts again in its sandbox.
	third := "realnode/" + pods[2]
	if err := l.Kill(third); err != nil {
		t.Fatal(err)
	}
	select {
	case <-nodes[pods[2]].Exited():
	case <-ctx.Done():
		t.Fatal("the container did not end after its asd was killed")
	}
	if code, _ := nodes[pods[2]].ExitCode(); code != 137 {
		t.Fatalf("exit code %d after SIGKILL of asd, want 137", code)
	}
	if err := l.Restart(third); err != nil {
		t.Fatal(err)
	}
	waitCluster(ctx, t, info, c, ips)
	log, err := os.ReadFile(nodes[pods[2]].LogPath())
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
