package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
	"github.com/acko-io/acko/test/testcluster"
)

// serverTable is the table of the server version the cluster's image runs.
func serverTable(t *testing.T, c *v1alpha1.AerospikeCluster) *params.Table {
	t.Helper()
	v, ok := params.ImageVersion(c.Spec.Image)
	if !ok {
		t.Fatalf("%s: no server version in image %q", c.Name, c.Spec.Image)
	}
	tb, _, err := params.Select(v)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// assertServerStarts holds a rendered aerospike.conf to what the server checks when it starts, and to
// the clusters-that-form issue's rule that no line is Enterprise-only (a CE server stops at such a line).
func assertServerStarts(t *testing.T, name, conf string, tb *params.Table) {
	t.Helper()
	f, err := conffile.Parse(conf)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, p := range conffile.Check(f, tb) {
		if strings.Contains(p.Msg, "enterprise-only") {
			t.Errorf("%s: Enterprise-only line: %s", name, p)
		} else {
			t.Errorf("%s: the server %s refuses: %s", name, tb.Version, p)
		}
	}
}

// Every sample and every golden render is a file the server of its image starts with.
func TestRendersPassTheServersCheck(t *testing.T) {
	samples, err := testcluster.Samples()
	if err != nil {
		t.Fatal(err)
	}
	clusters := map[string]*v1alpha1.AerospikeCluster{}
	for _, s := range samples {
		s.Cluster.Namespace = "default"
		clusters[s.Path] = s.Cluster
	}
	for _, name := range renderCases {
		clusters[name] = loadCluster(t, filepath.Join("testdata", name+".yaml"))
	}
	for name, c := range clusters {
		for _, rack := range c.RackPlan() {
			conf, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
			if err != nil {
				t.Fatalf("%s rack %d: %v", name, rack.ID, err)
			}
			assertServerStarts(t, name, firstPodFile(conf, rack), serverTable(t, c))
		}
	}
}

// The golden files themselves, as they are on disk (what the simulator and a real server are given).
func TestGoldensPassTheServersCheck(t *testing.T) {
	files, err := filepath.Glob("testdata/*.golden")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		base := filepath.Base(file)
		if strings.Contains(base, ".seeds.") || strings.HasSuffix(base, "errors.golden") {
			continue // seed lists and error messages, not whole files
		}
		c := goldenCluster(t, base)
		assertServerStarts(t, base, readGolden(t, file), serverTable(t, c))
		checked++
	}
	if checked < 8 {
		t.Errorf("checked %d golden renders, want every one (at least 8)", checked)
	}
}

func readGolden(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// goldenCluster is the cluster a golden render was made from: testdata/<name>.yaml, or a sample.
func goldenCluster(t *testing.T, golden string) *v1alpha1.AerospikeCluster {
	t.Helper()
	name := strings.TrimSuffix(golden, ".golden")
	if i := strings.Index(name, ".rack-"); i >= 0 {
		name = name[:i]
	}
	if !strings.HasPrefix(name, "sample-") {
		return loadCluster(t, filepath.Join("testdata", name+".yaml"))
	}
	return loadCluster(t, filepath.Join("..", "..", "config", "samples", "acko_v1alpha1_"+strings.TrimPrefix(name, "sample-")+".yaml"))
}
