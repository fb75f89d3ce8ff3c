// Package scale is the scale bench of `make bench-scale` (hack/benchscale): on the local cluster
// (test/localcluster: real API server, kwok, the Aerospike simulator, the manager binary) it
// creates N clusters of 3 pods and measures how the manager copes: time to Running, its memory
// and CPU (from /proc of the process the local cluster started), its API requests, pause and
// resume of all N at once, and pauses while N/10 warm restarts run and one pod's exec hangs.
package scale

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// The harness's own client: its limits are part of what a figure means.
const (
	harnessQPS   = 200
	harnessBurst = 400
	// workers send the harness's requests in parallel (creates, patches).
	workers = 32
	// Namespace holds the bench's clusters; with several simulator shards, Namespace-0 up do, one
	// per shard.
	Namespace = "bench"
	// hangFor is how long the hung pod's exec'd commands hang: longer than the bench.
	hangFor = "10m"
	// settle is how long the clusters are left alone after all are Running, before the steady
	// state is measured.
	settle = 15 * time.Second
)

// Config says what to run.
type Config struct {
	N      int
	Opts   localcluster.Options
	Steady time.Duration // the steady-state window
	Log    io.Writer
}

type bench struct {
	cfg     Config
	client  client.Client
	kube    kubernetes.Interface
	track   *tracker
	samples *sampler
	token   string // reads the manager's metrics
	names   []string
	ns      map[string]string // cluster name → its namespace
	res     Result
}

// Run measures on the running local cluster of cfg.Opts (its manager and sync loop started) and
// returns the figures; a phase that fails ends the run with the figures so far and the error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	b, err := setup(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	loadBefore := loadAverage()
	go b.samples.run(ctx, 500*time.Millisecond)
	for _, phase := range []func(context.Context) error{b.create, b.steady, b.pauseAll, b.resumeAll, b.warmRestarts} {
		if err := phase(ctx); err != nil {
			return b.finish(loadBefore), err
		}
	}
	return b.finish(loadBefore), nil
}

func setup(ctx context.Context, cfg Config) (*bench, error) {
	rc, err := cfg.Opts.RESTConfig()
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = harnessQPS, harnessBurst
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := ackov1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, res: Result{N: cfg.N, Harness: fmt.Sprintf(
		"client QPS %d, burst %d, %d workers; the local cluster's sync loop (the kubelets' stand-in) QPS %d",
		harnessQPS, harnessBurst, workers, localcluster.SyncQPS)}}
	if b.client, err = client.New(rc, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if b.kube, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	namespaces := benchNamespaces(cfg.Opts.AerosimShards)
	watched := map[string]cache.Config{}
	for _, ns := range namespaces {
		watched[ns] = cache.Config{}
	}
	c, err := cache.New(rc, cache.Options{Scheme: scheme, DefaultNamespaces: watched})
	if err != nil {
		return nil, err
	}
	if b.track, err = newTracker(ctx, c); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the harness's cache did not sync")
	}
	pid, ok := cfg.Opts.PIDs()[localcluster.ManagerName(localcluster.PrimaryManager)]
	if !ok {
		return nil, fmt.Errorf("the manager does not run")
	}
	b.samples = &sampler{pid: pid}
	if b.token, err = cfg.Opts.ManagerMetricsToken(ctx); err != nil {
		return nil, err
	}
	b.res.Manager = managerFlags(cfg.Opts.ManagerHelp())
	if len(cfg.Opts.ManagerArgs) > 0 {
		b.res.Manager += "; given: " + strings.Join(cfg.Opts.ManagerArgs, " ")
	}
	if err := b.placeClusters(ctx, namespaces); err != nil {
		return nil, err
	}
	return b, nil
}

// placeClusters names the N clusters and spreads them over namespaces, which it creates.
func (b *bench) placeClusters(ctx context.Context, namespaces []string) error {
	b.ns = map[string]string{}
	for i := range b.cfg.N {
		name := fmt.Sprintf("c%04d", i)
		b.names, b.ns[name] = append(b.names, name), namespaces[i%len(namespaces)]
	}
	for _, name := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := b.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// benchNamespaces are the namespaces of the clusters: one per simulator shard, each served by its
// own (simclient.ShardOf).
func benchNamespaces(shards int) []string {
	if shards <= 1 {
		return []string{Namespace}
	}
	out := make([]string, shards)
	for i, found := 0, 0; found < shards; i++ {
		name := fmt.Sprintf("%s-%d", Namespace, i)
		if shard := simclient.ShardOf(name, shards); out[shard] == "" {
			out[shard], found = name, found+1
		}
	}
	return out
}

func (b *bench) logf(format string, args ...any) {
	if b.cfg.Log != nil {
		_, _ = fmt.Fprintf(b.cfg.Log, "[bench-scale] "+time.Now().Format("15:04:05")+" "+format+"\n", args...)
	}
}

// add adds the figures that have a value (JSON has no NaN; the table shows a missing one as –).
func (b *bench) add(figures ...Figure) {
	for _, f := range figures {
		if !math.IsNaN(f.Value) {
			b.res.Figures = append(b.res.Figures, f)
		}
	}
}

func (b *bench) note(format string, args ...any) {
	b.res.Notes = append(b.res.Notes, fmt.Sprintf(format, args...))
	b.logf(format, args...)
}

// finish adds the peak RSS (the kernel's high-water mark) to the figures, and how busy the machine
// was: other work on it slows everything measured.
func (b *bench) finish(loadBefore string) Result {
	b.note("load average (1 min) of the machine: %s at the start, %s at the end", loadBefore, loadAverage())
	if u, err := readUsage(b.samples.pid); err == nil {
		b.add(Figure{Name: "Manager peak RSS", Unit: unitMiB, Value: float64(u.peakKiB) / 1024})
	}
	all := b.samples.between(time.Time{}, time.Now())
	b.add(Figure{Name: "Manager most open sockets", Unit: unitCount, Value: maxOf(all, usage.openSockets)})
	return b.res
}

// loadAverage is the machine's 1-minute load average.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if fields := strings.Fields(string(b)); err == nil && len(fields) > 0 {
		return fields[0]
	}
	return "unknown"
}

// usageNow is the manager's usage now.
func (b *bench) usageNow() (usage, error) { return readUsage(b.samples.pid) }

// forEach runs fn for each name, workers at a time, and returns the first error.
func forEach(ctx context.Context, names []string, fn func(ctx context.Context, name string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range min(workers, len(names)) {
		wg.Go(func() {
			for name := range work {
				if err := fn(ctx, name); err != nil {
					once.Do(func() { first = fmt.Errorf("%s: %w", name, err); cancel() })
				}
			}
		})
	}
	for _, n := range names {
		if ctx.Err() != nil {
			break
		}
		work <- n
	}
	close(work)
	wg.Wait()
	return first
}

// patch merge-patches cluster name with body and returns when the API server took it.
func (b *bench) patch(ctx context.Context, name, body string) (time.Time, error) {
	ac := &ackov1alpha1.AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Namespace: b.ns[name], Name: name}}
	err := b.client.Patch(ctx, ac, client.RawPatch(types.MergePatchType, []byte(body)))
	return time.Now(), err
}

// patchAll patches every one of names and returns, for each, when the API server took it.
func (b *bench) patchAll(ctx context.Context, names []string, body string) (map[string]time.Time, error) {
	var mu sync.Mutex
	sent := map[string]time.Time{}
	err := forEach(ctx, names, func(ctx context.Context, name string) error {
		at, err := b.patch(ctx, name, body)
		mu.Lock()
		sent[name] = at
		mu.Unlock()
		return err
	})
	return sent, err
}

// latencies are, per cluster, from when its change was taken until the harness saw it met.
func latencies(sent, met map[string]time.Time) Latencies {
	out := make(Latencies, 0, len(met))
	for name, at := range met {
		out = append(out, max(0, at.Sub(sent[name])))
	}
	return out
}

// sample is the 3-node sample of config/samples as cluster namespace/name of the bench.
func sample(opts localcluster.Options, namespace, name string) (*ackov1alpha1.AerospikeCluster, error) {
	data, err := os.ReadFile(filepath.Join(opts.Root, "config", "samples", "acko_v1alpha1_aerospikecluster.yaml"))
	if err != nil {
		return nil, err
	}
	ac := &ackov1alpha1.AerospikeCluster{}
	if err := yaml.Unmarshal(data, ac); err != nil {
		return nil, err
	}
	ac.ObjectMeta = metav1.ObjectMeta{Namespace: namespace, Name: name}
	return ac, nil
}

// limitFlags are the manager's flags that bound its work and its client.
var limitFlags = []string{"max-concurrent-reconciles", "kube-api-qps", "kube-api-burst"}

var defaultValue = regexp.MustCompile(`\(default ([^)]*)\)`)

// managerFlags says the defaults of the manager's limits, as its -h prints them.
func managerFlags(help string) string {
	var out []string
	for block := range strings.SplitSeq(help, "\n  -") {
		name, _, _ := strings.Cut(block, " ")
		if slices.Contains(limitFlags, name) {
			if m := defaultValue.FindStringSubmatch(block); m != nil {
				out = append(out, "--"+name+"="+m[1])
			}
		}
	}
	return "defaults: " + strings.Join(out, " ")
}
