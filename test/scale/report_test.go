package scale

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acko-io/acko/test/localcluster/simclient"
)

func TestQuantile(t *testing.T) {
	var l Latencies
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(101-i)*time.Millisecond) // unsorted on purpose
	}
	for q, want := range map[float64]float64{0.5: 0.050, 0.99: 0.099, 1: 0.100, 0: 0.001} {
		if got := l.Quantile(q); math.Abs(got-want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if !math.IsNaN(Latencies(nil).Quantile(0.5)) {
		t.Error("the quantile of no latencies must be NaN")
	}
}

func run(n int, figures ...Figure) Result { return Result{N: n, Figures: figures} }

func TestRegressions(t *testing.T) {
	base := Baseline{}.With(run(10, Figure{"pause p99", "s", 1}, Figure{"RSS", "MiB", 100})).
		With(run(50, Figure{"pause p99", "s", 3}))
	worse, err := base.Regressions(run(10, Figure{"pause p99", "s", 1.4}, Figure{"RSS", "MiB", 171},
		Figure{"new figure", "s", 9}), 0.5)
	if err != nil {
		t.Fatal(err)
	}
	// 1.4 s is within 1 s × 1.5 + 0.5 s; 171 MiB is past 100 × 1.5 + 20.
	if len(worse) != 1 || !strings.HasPrefix(worse[0], "RSS: 171 MiB, baseline 100 MiB") {
		t.Errorf("regressions %q", worse)
	}
	if _, err := base.Regressions(run(20), 0.5); err == nil {
		t.Error("no error for an N the baseline lacks")
	}
}

func TestBaselineKeepsOneRunPerN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	b := Baseline{}.With(run(50, Figure{"x", "s", 1})).With(run(10)).With(run(50, Figure{"x", "s", 2}))
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 2 || got.Runs[0].N != 10 || got.Runs[1].N != 50 || got.Runs[1].Figures[0].Value != 2 {
		t.Errorf("baseline %+v", got.Runs)
	}
	if missing, err := ReadBaseline(filepath.Join(t.TempDir(), "none.json")); err != nil || len(missing.Runs) != 0 {
		t.Errorf("a missing baseline: %+v, %v", missing, err)
	}
}

func TestTable(t *testing.T) {
	var b strings.Builder
	Table(&b, []Result{run(10, Figure{"pause p99", "s", 0.123}, Figure{"RSS", "MiB", 71.64}),
		run(100, Figure{"pause p99", "s", math.NaN()}, Figure{"RSS", "MiB", 250})})
	want := "| Figure | N = 10 | N = 100 |\n|---|---|---|\n| pause p99 | 0.12 s | – |\n| RSS | 71.6 MiB | 250 MiB |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCounters(t *testing.T) {
	body := []byte(`# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:26443",method="GET"} 12
rest_client_requests_total{code="404",host="127.0.0.1:26443",method="GET"} 3
rest_client_requests_total{code="201",host="127.0.0.1:26443",method="POST"} 4
rest_client_requests_total_other{method="GET"} 100
apiserver_request_total{code="201",resource="tokenreviews",verb="POST"} 2
`)
	got := counters(body, "rest_client_requests_total", nil, "method")
	if len(got) != 2 || got["GET"] != 15 || got["POST"] != 4 {
		t.Errorf("by method %v", got)
	}
	if got := counters(body, "rest_client_requests_total", map[string]string{"code": "404"}, ""); got[""] != 3 {
		t.Errorf("404s %v", got)
	}
	if d := diff(map[string]float64{"GET": 20, "PUT": 1}, got); d["GET"] != 5 || d["PUT"] != 1 {
		t.Errorf("diff %v", d)
	}
}

func TestProcFields(t *testing.T) {
	stat := "4242 (manager (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 99 0 0"
	if got, err := cpuSeconds(stat); err != nil || got != 3 {
		t.Errorf("cpuSeconds = %v, %v; want 3 (250 + 50 ticks)", got, err)
	}
	if _, err := cpuSeconds("4242 manager S"); err == nil {
		t.Error("no error for a stat line without a command name")
	}
	status := "Name:\tmanager\nVmHWM:\t  81920 kB\nVmRSS:\t  73728 kB\n"
	if statusKiB(status, "VmRSS:") != 73728 || statusKiB(status, "VmHWM:") != 81920 {
		t.Error("VmRSS or VmHWM misread")
	}
}

func TestManagerFlags(t *testing.T) {
	help := "Usage of manager:\n  -kube-api-burst int\n    \tBurst of requests. (default 200)\n" +
		"  -kube-api-qps float\n    \tRequests per second\n    \tthe manager may send. (default 100)\n" +
		"  -leader-elect\n    \tElect a leader.\n  -max-concurrent-reconciles int\n    \tClusters at once. (default 4)\n"
	want := "defaults: --kube-api-burst=200 --kube-api-qps=100 --max-concurrent-reconciles=4"
	if got := managerFlags(help); got != want {
		t.Errorf("managerFlags = %q, want %q", got, want)
	}
}

// The bench spreads its clusters over one namespace per simulator shard.
func TestBenchNamespaces(t *testing.T) {
	if got := benchNamespaces(1); !slices.Equal(got, []string{Namespace}) {
		t.Errorf("one shard: %v", got)
	}
	got := benchNamespaces(10)
	for shard, ns := range got {
		if simclient.ShardOf(ns, 10) != shard {
			t.Errorf("%s is served by shard %d, not %d", ns, simclient.ShardOf(ns, 10), shard)
		}
	}
	if len(got) != 10 {
		t.Errorf("10 shards: %v", got)
	}
}
