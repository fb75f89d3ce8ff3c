// Package monitoring checks the shipped monitoring files: the alert rules (promtool), and that every
// metric the alert rules and the Grafana dashboard query is one ACKO exports (internal/metrics) or
// one the pinned Aerospike Prometheus Exporter exports (config/prometheus/exporter-metrics.txt).
package monitoring

import (
	"bufio"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/test/testenv"
)

var update = flag.Bool("update", false, "rewrite config/prometheus/exporter-metrics.txt from the fixtures")

func repoPath(elem ...string) string {
	return filepath.Join(append([]string{testenv.RepoRoot()}, elem...)...)
}

func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (.ci/run does)")
	}
	dir := repoPath("config", "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every alert of alerts.yaml has a promtool test that expects it to fire.
func TestEveryAlertIsTested(t *testing.T) {
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	readYAML(t, repoPath("config", "prometheus", "alerts_test.yaml"), &tests)
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	for _, r := range alertRules(t) {
		if !fires[r.Alert] {
			t.Errorf("alert %s has no promtool test that expects it to fire", r.Alert)
		}
	}
}

type rule struct {
	Alert string `json:"alert"`
	Expr  string `json:"expr"`
}

func alertRules(t *testing.T) []rule {
	var file struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	readYAML(t, repoPath("config", "prometheus", "alerts.yaml"), &file)
	var out []rule
	for _, g := range file.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// dashboardQueries are the PromQL expressions of every panel and template variable.
func dashboardQueries(t *testing.T) map[string]string {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	b, err := os.ReadFile(repoPath("config", "grafana", "acko-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for i, target := range p.Targets {
			out["panel "+p.Title+" #"+strconv.Itoa(i)] = target.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			out["variable "+v.Name] = v.Definition
		}
	}
	return out
}

func TestDashboardAndAlertsQueryOnlyExportedMetrics(t *testing.T) {
	known := map[string]bool{}
	for _, n := range metrics.Names() {
		known[n] = true
	}
	for _, n := range readExporterList(t) {
		known[n] = true
	}
	queries := dashboardQueries(t)
	for _, r := range alertRules(t) {
		queries["alert "+r.Alert] = r.Expr
	}
	panelsWithExporterMetrics := 0
	for where, expr := range queries {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric found in %q", where, expr)
		}
		for _, n := range names {
			if !known[n] {
				t.Errorf("%s queries %s, which neither ACKO nor the pinned exporter exports", where, n)
			}
			if strings.HasPrefix(n, "aerospike_") && strings.HasPrefix(where, "panel") {
				panelsWithExporterMetrics++
			}
		}
	}
	if panelsWithExporterMetrics == 0 {
		t.Error("the dashboard shows no Aerospike node or namespace metric")
	}
}

var (
	stringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers      = regexp.MustCompile(`\{[^}]*\}`)
	ranges        = regexp.MustCompile(`\[[^\]]*\]`)
	labelLists    = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	numbers       = regexp.MustCompile(`\b\d[a-zA-Z0-9.]*`) // 10, 0.5, 1h (after offset)
	identifier    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	// PromQL keywords that stand without parentheses.
	keywords = []string{"and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan"}
)

// metricNames finds the metric names a PromQL expression (or a Grafana label_values query) reads:
// identifiers that are not functions, keywords, label names or inside strings, matchers or ranges.
func metricNames(expr string) []string {
	s := stringLiteral.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	s = labelLists.ReplaceAllString(s, " ")
	s = numbers.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	for _, m := range identifier.FindAllStringSubmatch(s, -1) {
		name := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[0]), "("))
		if m[1] != "" || slices.Contains(keywords, name) || strings.HasPrefix(name, "__") {
			continue // a function call, or a keyword
		}
		seen[name] = true
	}
	// label_values(metric, label): the second argument is a label.
	if strings.HasPrefix(strings.TrimSpace(expr), "label_values(") {
		if i := strings.LastIndex(s, ","); i >= 0 {
			delete(seen, strings.Trim(s[i+1:], " )"))
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`min by (namespace, cluster_name) (aerospike_node_stats_cluster_size) < on (namespace, cluster_name) ` +
			`label_replace(acko_cluster_size, "cluster_name", "$1", "name", "(.*)")`: "acko_cluster_size aerospike_node_stats_cluster_size",
		`increase(acko_operations_total{phase="Error"}[1h]) > 0 or (acko_operations_total unless x offset 1h)`: "acko_operations_total x",
		`label_values(acko_cluster_size{namespace=~"$namespace"}, name)`:                                       "acko_cluster_size",
		`sum by (ns) (rate(aerospike_namespace_client_read_success{ns=~"$ns"}[$__rate_interval]))`:             "aerospike_namespace_client_read_success",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

func readExporterList(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(repoPath("config", "prometheus", "exporter-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	return names
}
