package fakeinit

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

const (
	cmFile   = "/etc/aerospike-configmap/aerospike.conf"
	confFile = "/etc/aerospike/aerospike.conf"
)

// podWithFiles is a pod whose simulated node holds the ConfigMap's file, as the sync loop sets it.
func podWithFiles(t *testing.T) podFiles {
	t.Helper()
	sim, err := aerosim.New(aerosim.Options{Port: 13001})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	srv := httptest.NewServer(aerosim.NewHandler(sim))
	t.Cleanup(srv.Close)
	node := simclient.NodeName("ns", "pod-0")
	if _, err := sim.AddNode(aerosim.NodeSpec{Cluster: "c", Name: node,
		Files: map[string]string{cmFile: "new config\n"}}); err != nil {
		t.Fatal(err)
	}
	return podFiles{node: node, mounts: []string{"/etc/aerospike", "/etc/aerospike-configmap/"}, sim: true,
		client: simclient.New(srv.URL)}
}

func run(fn func(podFiles, []string, *bytes.Buffer, *bytes.Buffer) int, p podFiles, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := fn(p, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func catCmd(p podFiles, args []string, out, errOut *bytes.Buffer) int {
	return cat(p, args, out, errOut)
}
func cpCmd(p podFiles, args []string, out, errOut *bytes.Buffer) int { return cp(p, args, out, errOut) }

// The operator's turn for a pod: see the ConfigMap's file, copy it to asd's own copy, read it back.
func TestCatAndCpServeThePodsFiles(t *testing.T) {
	p := podWithFiles(t)
	if code, out, errOut := run(catCmd, p, cmFile); code != 0 || out != "new config\n" {
		t.Fatalf("cat: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run(catCmd, p, confFile); code != 1 ||
		errOut != "cat: "+confFile+": No such file or directory\n" {
		t.Fatalf("cat of a missing file: %d %q", code, errOut)
	}
	if code, _, errOut := run(cpCmd, p, cmFile, confFile); code != 0 {
		t.Fatalf("cp: %d %q", code, errOut)
	}
	if code, out, _ := run(catCmd, p, confFile, cmFile); code != 0 || out != "new config\nnew config\n" {
		t.Fatalf("cat of both: %d %q", code, out)
	}
	// Into a mount point: the file keeps its name.
	if code, _, errOut := run(cpCmd, p, cmFile, "/etc/aerospike/"); code != 0 {
		t.Fatalf("cp into a directory: %d %q", code, errOut)
	}
	got, err := p.client.ReadFile(context.Background(), p.node, confFile)
	if err != nil || got != "new config\n" {
		t.Fatalf("in the simulator: %q, %v", got, err)
	}
	if code, _, errOut := run(cpCmd, p, "/etc/aerospike-configmap/nope", confFile); code != 1 ||
		!strings.Contains(errOut, "cannot stat '/etc/aerospike-configmap/nope': No such file or directory") {
		t.Fatalf("cp of a missing file: %d %q", code, errOut)
	}
}

func TestShimsRefuseWhatTheyDoNotSimulate(t *testing.T) {
	p := podWithFiles(t)
	for _, tc := range []struct {
		fn   func(podFiles, []string, *bytes.Buffer, *bytes.Buffer) int
		args []string
	}{
		{catCmd, []string{"-n", cmFile}},
		{cpCmd, []string{"-r", cmFile, confFile}},
		{cpCmd, []string{cmFile, confFile, "/etc/aerospike/x"}},
	} {
		if code, _, errOut := run(tc.fn, p, tc.args...); code != 1 || !strings.Contains(errOut, "is simulated") {
			t.Errorf("%v: %d %q", tc.args, code, errOut)
		}
	}
	other := p
	other.sim = false // a sidecar's mounts
	if code, _, errOut := run(catCmd, other, cmFile); code != 1 || !strings.Contains(errOut, "not simulated") {
		t.Errorf("another container: %d %q", code, errOut)
	}
}

// A simulated source copied to this machine's file system (outside the mounts), and back.
func TestCpBetweenSimulatorAndMachine(t *testing.T) {
	p := podWithFiles(t)
	local := filepath.Join(t.TempDir(), "copy")
	if code, _, errOut := run(cpCmd, p, cmFile, local); code != 0 {
		t.Fatalf("cp out: %d %q", code, errOut)
	}
	if b, err := os.ReadFile(local); err != nil || string(b) != "new config\n" {
		t.Fatalf("local copy: %q, %v", b, err)
	}
	if err := os.WriteFile(local, []byte("edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(cpCmd, p, local, confFile); code != 0 {
		t.Fatalf("cp in: %d %q", code, errOut)
	}
	if code, out, _ := run(catCmd, p, confFile); code != 0 || out != "edited\n" {
		t.Fatalf("cat: %d %q", code, out)
	}
}

func TestSimulatedPaths(t *testing.T) {
	p := podFiles{mounts: []string{"/etc/aerospike", "/opt/aerospike/data/"}}
	for path, want := range map[string]bool{
		"/etc/aerospike":                true,
		"/etc/aerospike/aerospike.conf": true,
		"/etc/aerospike/../aerospike/x": true,
		"/etc/aerospike-configmap/x":    false,
		"/opt/aerospike/data/x":         true,
		"/proc/1/cmdline":               false,
		"etc/aerospike/x":               false,
		"/etc/aerospike/../passwd":      false,
	} {
		if got := p.simulated(path); got != want {
			t.Errorf("%s: simulated %v, want %v", path, got, want)
		}
	}
}

// /proc/1/limits in the Aerospike container is the simulated node's (containerd's open-file limit),
// not this machine's: the operator holds proto-fd-max to it.
func TestCatProcLimitsIsTheSimulatedNodes(t *testing.T) {
	p := podWithFiles(t)
	code, out, errOut := run(catCmd, p, "/proc/1/limits")
	if code != 0 || !strings.Contains(out, "\nMax open files            1048576              1048576              files") {
		t.Fatalf("cat /proc/1/limits: %d %q %q", code, out, errOut)
	}
	p.sim = false
	if p.simulated("/proc/1/limits") {
		t.Error("another container's /proc/1/limits is simulated")
	}
}
