package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/golden"
	"github.com/acko-io/acko/test/testcluster"
)

// loadCluster decodes a test AerospikeCluster the way the API client does (YAML → JSON → the types'
// UnmarshalJSON), so numbers arrive as int64 exactly as in production.
func loadCluster(t *testing.T, file string) *v1alpha1.AerospikeCluster {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return decodeCluster(t, string(data))
}

func decodeCluster(t *testing.T, doc string) *v1alpha1.AerospikeCluster {
	t.Helper()
	c := &v1alpha1.AerospikeCluster{}
	if err := yaml.UnmarshalStrict([]byte(doc), c); err != nil {
		t.Fatalf("decoding cluster: %v", err)
	}
	return c
}

// assertGolden compares got with testdata/<name>.golden, or rewrites the file with -update.
func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Assert(t, name+".golden", got)
}

// renderCases are the clusters of testdata rendered into golden files.
var renderCases = []string{"operations-guide", "two-racks", "device", "every-kind", "server-8.0"}

func TestRenderGolden(t *testing.T) {
	for _, name := range renderCases {
		t.Run(name, func(t *testing.T) {
			c := loadCluster(t, filepath.Join("testdata", name+".yaml"))
			if errs := Validate(c); len(errs) > 0 {
				t.Fatalf("Validate: %v", errs)
			}
			for _, rack := range c.RackPlan() {
				conf, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
				if err != nil {
					t.Fatalf("Render rack %d: %v", rack.ID, err)
				}
				file := name
				if c.MultiRack() {
					file = fmt.Sprintf("%s.rack-%d", name, rack.ID)
				}
				assertGolden(t, file, firstPodFile(conf, rack))
			}
		})
	}
}

// firstPodFile is the file the first pod of the rack is given: what its server reads (with an example
// external address, where the cluster has external access).
func firstPodFile(template string, rack v1alpha1.RackPlacement) string {
	return PodFile(template, PodValues{NodeID: NodeID(rack.ID, 0), Address: "192.0.2.10", Port: 31000})
}

// The samples shipped in config/samples must render: they are what users try first. Their renders are
// golden files too (sample-<file>[.rack-<id>].golden).
func TestSamplesRender(t *testing.T) {
	samples, err := testcluster.Samples()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		c := s.Cluster
		c.Namespace = "default"
		if errs := Validate(c); len(errs) > 0 {
			t.Errorf("%s: %v", s.Path, errs)
		}
		name := "sample-" + strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s.Path), "acko_v1alpha1_"), ".yaml")
		for _, rack := range c.RackPlan() {
			conf, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
			if err != nil {
				t.Errorf("%s rack %d: %v", s.Path, rack.ID, err)
				continue
			}
			file := name
			if c.MultiRack() {
				file = fmt.Sprintf("%s.rack-%d", name, rack.ID)
			}
			assertGolden(t, file, firstPodFile(conf, rack))
		}
	}
}

func TestRenderFacts(t *testing.T) {
	c := loadCluster(t, "testdata/operations-guide.yaml")
	conf, err := Render(c, c.RackPlan()[0], v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\t\tmesh-seed-address-port aerospike-3node-0.aerospike-3node-headless.default.svc.cluster.local 3002\n" +
			"\t\tmesh-seed-address-port aerospike-3node-1.aerospike-3node-headless.default.svc.cluster.local 3002\n" +
			"\t\tmesh-seed-address-port aerospike-3node-2.aerospike-3node-headless.default.svc.cluster.local 3002\n",
		"\tadmin {\n\t\tport 3003\n\t}\n",
		"\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n",
		"\twork-directory /opt/aerospike\n",
		"\tcluster-name aerospike-3node\n",
		"\tproto-fd-max 15000\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	// Aerospike 8.1 has no info stanza; rack-id is Enterprise-only.
	for _, unwanted := range []string{"info {", "rack-id"} {
		if strings.Contains(conf, unwanted) {
			t.Errorf("config has %q:\n%s", unwanted, conf)
		}
	}
	if !strings.HasPrefix(stanzaOrder(conf), "service logging network namespace") {
		t.Errorf("stanza order = %q", stanzaOrder(conf))
	}
}

func stanzaOrder(conf string) string {
	heads := regexp.MustCompile(`(?m)^([a-z-]+)[^\n]*\{$`).FindAllStringSubmatch(conf, -1)
	names := make([]string, 0, len(heads))
	for _, h := range heads {
		names = append(names, h[1])
	}
	return strings.Join(names, " ")
}

// Scaling changes only the seed list, which the config identity leaves out: otherwise every pod would
// restart whenever the size changes. The seeds after a scale-up name every pod of every rack.
func TestScalingChangesOnlyTheSeeds(t *testing.T) {
	c := loadCluster(t, "testdata/two-racks.yaml")
	before, err := Render(c, c.RackPlan()[0], v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Size = 7
	after, err := Render(c, c.RackPlan()[0], v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	if Hash(before) != Hash(after) {
		t.Errorf("the config identity changed with the size:\n%s\n---\n%s", before, after)
	}
	if withoutSeeds(before) != withoutSeeds(after) {
		t.Errorf("more than the seeds changed with the size:\n%s\n---\n%s", before, after)
	}
	assertGolden(t, "two-racks.size-7.seeds", seedLines(after))
}

// Every rack gets the same seeds: every pod of the cluster, in the cluster's DNS domain.
func TestSeedsGolden(t *testing.T) {
	for _, name := range []string{"operations-guide", "two-racks"} {
		c := loadCluster(t, filepath.Join("testdata", name+".yaml"))
		seeds := map[string]bool{}
		for _, rack := range c.RackPlan() {
			conf, err := Render(c, rack, "example.internal")
			if err != nil {
				t.Fatal(err)
			}
			seeds[seedLines(conf)] = true
		}
		if len(seeds) != 1 {
			t.Fatalf("%s: racks have different seed lists: %v", name, seeds)
		}
		for s := range seeds {
			assertGolden(t, name+".seeds", s)
		}
	}
}

func seedLines(conf string) string {
	var b strings.Builder
	for line := range strings.Lines(conf) {
		if strings.HasPrefix(strings.TrimSpace(line), keyMeshSeed+" ") {
			b.WriteString(strings.TrimSpace(line) + "\n")
		}
	}
	return b.String()
}

func withoutSeeds(conf string) string {
	var b strings.Builder
	for line := range strings.Lines(conf) {
		if !strings.HasPrefix(strings.TrimSpace(line), keyMeshSeed+" ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func TestRenderIsDeterministicAndLeavesSpecAlone(t *testing.T) {
	c := loadCluster(t, "testdata/two-racks.yaml")
	orig := c.DeepCopy()
	rack := c.RackPlan()[1]
	first, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, _ := Render(c, rack, v1alpha1.DefaultClusterDomain)
		if again != first {
			t.Fatalf("Render is not deterministic:\n%s\n---\n%s", first, again)
		}
	}
	if fmt.Sprint(orig.Spec.AerospikeConfig.Value) != fmt.Sprint(c.Spec.AerospikeConfig.Value) ||
		fmt.Sprint(orig.Spec.RackConfig.Racks[0].AerospikeConfig.Value) !=
			fmt.Sprint(c.Spec.RackConfig.Racks[0].AerospikeConfig.Value) {
		t.Error("Render changed the cluster spec")
	}
}

func TestRenderRejectsInvalidConfig(t *testing.T) {
	c := decodeCluster(t, `
metadata: {name: bad, namespace: default}
spec:
  size: 1
  image: aerospike:ce-8.1.1.1
  aerospikeConfig:
    xdr: {}
    namespaces: [{name: test, storage-engine: {type: memory}}]
`)
	_, err := Render(c, c.RackPlan()[0], v1alpha1.DefaultClusterDomain)
	want := "spec.aerospikeConfig.xdr: Forbidden: XDR is Enterprise-only: Aerospike Community Edition does not support it"
	if err == nil || err.Error() != want {
		t.Errorf("Render error = %v, want %q", err, want)
	}
}

func TestHash(t *testing.T) {
	a, b := Hash("service {}\n"), Hash("service { }\n")
	if len(a) != 16 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("Hash = %q, want 16 hex digits", a)
	}
	if a != Hash("service {}\n") || a == b {
		t.Errorf("Hash must be stable and tell configs apart: %q %q", a, b)
	}
	seeded := "network {\n\theartbeat {\n\t\tmesh-seed-address-port a-0.x 3002\n\t}\n}\n"
	if Hash(seeded) != Hash(strings.Replace(seeded, "a-0.x", "a-1.x", 1)) ||
		Hash(seeded) != Hash(strings.Replace(seeded, "\t\tmesh-seed-address-port a-0.x 3002\n", "", 1)) {
		t.Error("the seed list is not part of the config identity")
	}
	if Hash(seeded) == Hash(strings.Replace(seeded, "heartbeat", "fabric", 1)) {
		t.Error("everything but the seeds is part of the config identity")
	}
}

func TestSMDPath(t *testing.T) {
	c := loadCluster(t, "testdata/two-racks.yaml")
	plan := c.RackPlan()
	if got := SMDPath(c, plan[0]); got != "/opt/aerospike/smd" {
		t.Errorf("default SMDPath = %q", got)
	}
	c.Spec.AerospikeConfig.Value["service"].(map[string]any)["work-directory"] = "/var/lib/aerospike/"
	if got := SMDPath(c, plan[0]); got != "/var/lib/aerospike/smd" {
		t.Errorf("SMDPath = %q, want the user's work-directory", got)
	}
	plan[1].Rack.AerospikeConfig.Value["service"].(map[string]any)["work-directory"] = "/work"
	if got := SMDPath(c, plan[1]); got != "/work/smd" {
		t.Errorf("SMDPath = %q, want the rack's work-directory", got)
	}
}

func TestScalarString(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{true, "true"}, {false, "false"}, {int64(15000), "15000"}, {3, "3"}, {int32(7), "7"},
		{float64(2), "2"}, {0.5, "0.5"}, {"4G", "4G"},
	} {
		if got, ok := scalarString(tc.in); !ok || got != tc.want {
			t.Errorf("scalarString(%#v) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := scalarString(map[string]any{}); ok {
		t.Error("a map is not a scalar")
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
		ok   bool
	}{
		{"512M", 512 << 20, true}, {"1g", 1 << 30, true}, {"4096K", 4 << 20, true}, {int64(1024), 1024, true},
		{"100", 100, true}, {"1.5G", 0, false}, {"G", 0, false}, {"lots", 0, false}, {"", 0, false},
		{"-1M", 0, false}, {true, 0, false},
	} {
		got, ok := parseSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseSize(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// Issue 24: each pod's file names its node by rack and ordinal, and a rack's template and its pods'
// files have one identity, which differs from that of a file without a node id (an older operator's):
// the new scheme restarts each node once.
func TestNodeIDs(t *testing.T) {
	for _, tc := range []struct {
		rack, ordinal int32
		want          string
	}{
		{0, 0, "A00000"}, {1, 2, "A10002"}, {15, 255, "AF00FF"}, {1000000, 65535, "AF4240FFFF"},
	} {
		if got := NodeID(tc.rack, tc.ordinal); got != tc.want {
			t.Errorf("NodeID(%d, %d) = %s, want %s", tc.rack, tc.ordinal, got, tc.want)
		}
	}
	c := loadCluster(t, "testdata/two-racks.yaml")
	rack := c.RackPlan()[1]
	template, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	first, second := PodFile(template, PodValues{NodeID: NodeID(rack.ID, 0)}), PodFile(template, PodValues{NodeID: NodeID(rack.ID, 1)})
	want := fmt.Sprintf("\tnode-id %s\n", NodeID(rack.ID, 1))
	if !strings.Contains(second, want) || strings.Contains(second, perPodToken) {
		t.Errorf("the second pod's file lacks %q:\n%s", want, second)
	}
	if Hash(first) != Hash(template) || Hash(second) != Hash(template) {
		t.Errorf("a pod's file has another identity than its template: %s, %s, template %s", Hash(first), Hash(second), Hash(template))
	}
	older := strings.Replace(second, want, "", 1)
	if Hash(older) == Hash(template) {
		t.Error("a file without a node id has the identity of one with it: the new scheme would restart no node")
	}
}

// With spec.externalAccess, each pod's file advertises its own address in the list advertiseAs names
// (alternate-access by default), the template keeps placeholders, and all of them have the template's
// identity; turning external access on, or moving it to the other list, is a new identity (a restart).
func TestExternalAccessRendersEachPodsAddress(t *testing.T) {
	c := loadCluster(t, "testdata/two-racks.yaml")
	rack := c.RackPlan()[0]
	without, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ExternalAccess = &v1alpha1.ExternalAccess{Type: v1alpha1.ExternalNodePort}
	alternate, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	pod := PodFile(alternate, PodValues{NodeID: "A10000", Address: "203.0.113.7", Port: 31234})
	for _, want := range []string{"\t\talternate-access-address 203.0.113.7\n", "\t\talternate-access-port 31234\n", "\tnode-id A10000\n"} {
		if !strings.Contains(pod, want) {
			t.Errorf("the pod's file lacks %q:\n%s", want, pod)
		}
	}
	if strings.Contains(pod, perPodToken) || strings.Contains(pod, "\taccess-address") {
		t.Errorf("the pod's file keeps a placeholder or advertises in the access list:\n%s", pod)
	}
	if Hash(pod) != Hash(alternate) {
		t.Errorf("the pod's file has identity %s, its template %s", Hash(pod), Hash(alternate))
	}
	unknown := PodFile(alternate, PodValues{NodeID: "A10000"})
	if !strings.Contains(unknown, "alternate-access-address "+perPodToken) {
		t.Errorf("an address not known yet is filled in:\n%s", unknown)
	}
	c.Spec.ExternalAccess.AdvertiseAs = v1alpha1.AdvertiseAccess
	access, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(PodFile(access, PodValues{Address: "203.0.113.7", Port: 31234}), "\t\taccess-address 203.0.113.7\n") {
		t.Errorf("advertiseAs Access does not fill access-address:\n%s", access)
	}
	if ids := map[string]bool{Hash(without): true, Hash(alternate): true, Hash(access): true}; len(ids) != 3 {
		t.Error("turning external access on, or changing its list, keeps the config identity: no node would restart")
	}
}

func TestPodFileKey(t *testing.T) {
	if got := PodFileKey("aero-1-0", ""); got != "aero-1-0.conf" {
		t.Errorf("PodFileKey without a node = %s", got)
	}
	if got := PodFileKey("aero-1-0", "node-a.example"); got != "aero-1-0_node-a.example.conf" {
		t.Errorf("PodFileKey on a node = %s", got)
	}
}

// A pod's file names the identity of the rack's config it was rendered from in its last line, which the
// kubelet keeps of it (the last 4 KiB of the config-report init container's termination log); the
// identity itself ignores that line, so a pod's file and its template have the same one.
func TestAPodFileNamesItsConfigInItsLastLine(t *testing.T) {
	template := "service {\n\tnode-id <per-pod>\n\tproto-fd-max 15000\n}\n" + strings.Repeat("# padding\n", 600)
	file := PodFile(template, PodValues{NodeID: "A0002"})
	if Hash(file) != Hash(template) {
		t.Fatalf("the file's identity %s differs from its template's %s", Hash(file), Hash(template))
	}
	tail := file[len(file)-4096:]
	if got := CopiedHash(tail); got != Hash(template) {
		t.Fatalf("the tail names %q, want %q", got, Hash(template))
	}
	if other := PodFile(strings.Replace(template, "15000", "20000", 1), PodValues{}); CopiedHash(other) == Hash(template) {
		t.Fatalf("another config names the same identity %s", CopiedHash(other))
	}
	for _, none := range []string{"", "service {\n}\n", "x# acko.io/config-hash abc\n"} {
		if got := CopiedHash(none); got != "" {
			t.Errorf("CopiedHash(%q) = %q, want none", none, got)
		}
	}
}
