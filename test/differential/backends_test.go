package differential

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/proc"
	"github.com/acko-io/acko/test/realnode"
	"github.com/acko-io/acko/test/testcluster"
	"github.com/acko-io/acko/test/testenv"
)

// EnvReal turns the test on, as it does the launcher's (make test-real): it needs root and the binaries.
const EnvReal = "ACKO_REAL"

// nodes is the scenarios' cluster size.
const nodes = 3

// backend is a cluster of nodes the scenarios drive: started on the operator's rendered config, each
// node's file rewritable before its next start, warm-restartable, asked info commands, its log read.
type backend interface {
	// addr is node i's info address (host:port).
	addr(i int) string
	// ips are the nodes' addresses, for normalising the answers that name them.
	ips() []string
	// writeConfig replaces node i's aerospike.conf, read at its next start.
	writeConfig(i int, conf string) error
	// warmRestart restarts node i's asd in place (SIGUSR1 to tini).
	warmRestart(i int) error
	// crash kills node i's asd and returns once it is gone; start starts it again on its file.
	crash(i int) error
	start(i int) error
	// logLines are node i's asd log lines, oldest first, as asd printed them.
	logLines(i int) ([]string, error)
}

// clusterFiles are the operator's rendered files of the scenarios' cluster, with the names the
// nodes' seeds resolve.
type clusterFiles struct {
	pods  []string
	files []string          // each pod's aerospike.conf
	live  []string          // each pod's aerospike.conf after a change the nodes take live
	names map[string]string // pod → its DNS name
}

func renderCluster(t *testing.T) clusterFiles {
	t.Helper()
	c := testcluster.New("diff", "db", nodes)
	template, err := config.Render(c, c.RackPlan()[0], ackov1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	changed := c.DeepCopy()
	testcluster.WithService("proto-fd-max", int64(20000))(changed)
	live, err := config.Render(changed, changed.RackPlan()[0], ackov1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	cf := clusterFiles{pods: c.DesiredPodNames(), names: map[string]string{}}
	for _, pod := range cf.pods {
		own := config.PodValues{NodeID: config.PodNodeID(c, pod)}
		cf.files = append(cf.files, config.PodFile(template, own))
		cf.live = append(cf.live, config.PodFile(live, own))
		cf.names[pod] = c.PodDNSName(pod, ackov1alpha1.DefaultClusterDomain)
	}
	return cf
}

// realBackend is real asd nodes in namespaces of their own, on a bridge of this test's.
type realBackend struct {
	l     *realnode.Launcher
	names []string
	addrs []netip.Addr
	logs  []string
}

func startReal(t *testing.T, ctx context.Context, cf clusterFiles) *realBackend {
	t.Helper()
	if os.Getenv(EnvReal) == "" {
		t.Skipf("real nodes: set %s=1 (make test-real) to run the differential test; it needs root and %s",
			EnvReal, realnode.EnvASDDir)
	}
	lock, err := proc.Lock("acko-differential-test.lock", func(path string) { t.Logf("waiting for %s", path) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	opts := realnode.Options{
		Dir:           filepath.Join(testenv.RepoRoot(), ".local", "differential-test"),
		Bridge:        "acko-rndiff",
		Subnet:        netip.MustParsePrefix("198.19.129.0/24"),
		DieWithParent: true,
	}
	l, err := realnode.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Cleanup(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	b := &realBackend{l: l}
	hosts := "127.0.0.1\tlocalhost\n"
	for i, pod := range cf.pods {
		b.addrs = append(b.addrs, netip.AddrFrom4([4]byte{198, 19, 129, byte(10 + i)}))
		hosts += fmt.Sprintf("%s\t%s %s\n", b.addrs[i], cf.names[pod], pod)
	}
	for i, pod := range cf.pods {
		// A log of this run's only (the launcher's default place keeps the lines of every run).
		n, err := l.Start(ctx, realnode.NodeSpec{Name: "diff/" + pod, IP: b.addrs[i], Hosts: []byte(hosts),
			Config: []byte(cf.files[i]), LogPath: filepath.Join(t.TempDir(), pod+".log")})
		if err != nil {
			t.Fatal(err)
		}
		b.names = append(b.names, "diff/"+pod)
		b.logs = append(b.logs, n.LogPath())
	}
	return b
}

func (b *realBackend) addr(i int) string { return b.addrs[i].String() + ":3000" }

func (b *realBackend) ips() []string {
	out := make([]string, len(b.addrs))
	for i, a := range b.addrs {
		out[i] = a.String()
	}
	return out
}

// writeConfig writes the file inside the node, as the operator's init container copies it.
func (b *realBackend) writeConfig(i int, conf string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.l.Exec(ctx, b.names[i], []string{"sh", "-c", "cat >" + realnode.ConfigFile}, nil,
		strings.NewReader(conf))
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("writing %s in %s: exit %d: %s", realnode.ConfigFile, b.names[i], res.ExitCode, res.Stderr)
	}
	return err
}

func (b *realBackend) warmRestart(i int) error { return b.l.Signal(b.names[i], syscall.SIGUSR1) }

// crash kills asd: the container ends (tini exits with it), as a crashed pod's does.
func (b *realBackend) crash(i int) error {
	n, err := b.l.Node(b.names[i])
	if err != nil {
		return err
	}
	if err := b.l.Kill(b.names[i]); err != nil {
		return err
	}
	select {
	case <-n.Exited():
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: the container did not end after its asd was killed", b.names[i])
	}
}

func (b *realBackend) start(i int) error { return b.l.Restart(b.names[i]) }

// logLines reads the container log (CRI: "<time> <stream> <tag> <line>").
func (b *realBackend) logLines(i int) ([]string, error) {
	f, err := os.Open(b.logs[i])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if parts := strings.SplitN(sc.Text(), " ", 4); len(parts) == 4 {
			lines = append(lines, parts[3])
		}
	}
	return lines, sc.Err()
}

// simTimings are the real server's, with migrations of a few seconds (an empty memory namespace).
var simTimings = aerosim.Options{RestartDowntime: 200 * time.Millisecond, JoinDelay: 2 * time.Second,
	DropDelay: 2 * time.Second, HangDropDelay: 3 * time.Second, MigrationDuration: 2 * time.Second}

// simBackend is simulated nodes on loopback addresses, given the same files and names.
type simBackend struct {
	s     *aerosim.Sim
	pods  []string
	addrs []string
	files []string // each node's aerospike.conf, for a start after a crash
}

func startSim(t *testing.T, cf clusterFiles) *simBackend {
	t.Helper()
	s, err := aerosim.New(simTimings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	b := &simBackend{s: s, pods: cf.pods, files: slices.Clone(cf.files)}
	dns := map[string][]string{}
	for i, pod := range cf.pods {
		b.addrs = append(b.addrs, fmt.Sprintf("127.81.0.%d", 10+i))
		dns[cf.names[pod]] = []string{b.addrs[i]}
	}
	if err := s.SetDNS(dns); err != nil {
		t.Fatal(err)
	}
	for i := range cf.pods {
		if err := b.start(i); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *simBackend) start(i int) error {
	_, err := b.s.AddNode(aerosim.NodeSpec{Name: b.pods[i], IP: b.addrs[i], ConfigFile: realnode.ConfigFile,
		Files: map[string]string{realnode.ConfigFile: b.files[i]}})
	return err
}

// crash removes the node; start adds it again with the same address, file and node id.
func (b *simBackend) crash(i int) error { return b.s.RemoveNode(b.pods[i]) }

func (b *simBackend) addr(i int) string { return b.addrs[i] + ":3000" }
func (b *simBackend) ips() []string     { return b.addrs }

func (b *simBackend) writeConfig(i int, conf string) error {
	b.files[i] = conf
	return b.s.WriteFile(b.pods[i], realnode.ConfigFile, conf)
}

func (b *simBackend) warmRestart(i int) error {
	_, err := b.s.WarmRestart(b.pods[i])
	return err
}

func (b *simBackend) logLines(i int) ([]string, error) { return b.s.Log(b.pods[i]) }
