package monitoring

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ExporterTag is the Aerospike Prometheus Exporter release whose naming rule the pinned list
// follows, and the default exporter image of spec.monitoring (aerospike/aerospike-prometheus-exporter).
const ExporterTag = "v1.32.0"

const fixtures = "test/aerosim/fixtures/aerospike-ce-8.1.2.0/single/"

const listHeader = `# Metric names the Aerospike Prometheus Exporter ` + ExporterTag + ` exports for an Aerospike CE 8.1.2.0 node,
# derived by test/monitoring (go test ./test/monitoring -update rewrites this file) from the real
# server's info responses in ` + fixtures + `:
#   statistics, get-config:context=service -> aerospike_node_stats_<name>   (labels cluster_name, service)
#   namespace/test                         -> aerospike_namespace_<name>    (labels cluster_name, service, ns,
#                                                                           storage_engine)
# with the exporter's rule (internal/pkg/statprocessors: sp_node_stats.go, sp_namespaces.go,
# aerospike_stat.go; internal/pkg/executors: prometheus_httplistener.go, utils.go, prometheus.go):
# only values that parse as a number or a boolean (true=1) are exported; the name is
# "aerospike_" + context + "_" + the stat with '.', '-' and ' ' replaced by '_'; array stats
# storage-engine.<type>[i].<stat> become storage-engine_<type>_<stat> (labels <type>_index, <type>).
# Plus the exporter's own aerospike_node_up and aerospike_node_ticks (executors/prometheus.go).
# The dashboard and the alert rules may query only these and ACKO's own metrics.
`

var (
	metricReplacer = strings.NewReplacer(".", "_", "-", "_", " ", "_")
	arrayStat      = regexp.MustCompile(`^(storage-engine|index-type|sindex-type)\.(file|device|stripe|mount)\[\d+\]\.(.+)$`)
)

// infoStats parses an info response body: "<command>\t<k>=<v>;<k>=<v>...\n".
func infoStats(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(repoPath(fixtures + file))
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(strings.TrimSuffix(string(b), "\n"), "\t")
	if !ok {
		t.Fatalf("%s: no command before a tab", file)
	}
	stats := map[string]string{}
	for _, kv := range strings.Split(body, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			stats[k] = v
		}
	}
	return stats
}

// exportable is the exporter's TryConvert: a float or a boolean.
func exportable(v string) bool {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return true
	}
	_, err := strconv.ParseBool(v)
	return err == nil
}

func exporterNames(t *testing.T) []string {
	set := map[string]bool{"aerospike_node_up": true, "aerospike_node_ticks": true}
	add := func(context string, stats map[string]string) {
		for stat, v := range stats {
			if !exportable(v) {
				continue
			}
			if m := arrayStat.FindStringSubmatch(stat); m != nil {
				stat = m[1] + "_" + m[2] + "_" + m[3]
			}
			set["aerospike_"+context+"_"+metricReplacer.Replace(stat)] = true
		}
	}
	add("node_stats", infoStats(t, "statistics.body"))
	add("node_stats", infoStats(t, "get-config_context-service.body"))
	add("namespace", infoStats(t, "namespace_test.body"))
	return slices.Sorted(maps.Keys(set))
}

func TestExporterListFollowsTheFixtures(t *testing.T) {
	want := exporterNames(t)
	path := repoPath("config", "prometheus", "exporter-metrics.txt")
	if *update {
		if err := os.WriteFile(path, []byte(listHeader+strings.Join(want, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := readExporterList(t)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s differs from the names derived from the fixtures: run go test ./test/monitoring -update", path)
	}
	for _, n := range []string{"aerospike_node_stats_cluster_size", "aerospike_namespace_stop_writes",
		"aerospike_namespace_storage_engine_stop_writes_used_pct", "aerospike_namespace_storage_engine_stripe_used_bytes"} {
		if !strings.Contains("\n"+strings.Join(got, "\n")+"\n", "\n"+n+"\n") {
			t.Errorf("%s missing: the naming rule changed?", n)
		}
	}
}
