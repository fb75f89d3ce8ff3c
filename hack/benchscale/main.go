// Command benchscale is `make bench-scale`: it takes the e2e lock, starts the local cluster
// (localcluster.BenchOptions), runs the scale bench (package test/scale) with N clusters, stops
// the cluster, prints the figures as a table and writes them as JSON. With -compare it fails when
// a figure is worse than the baseline's for the same N; with -update it keeps the run as the
// baseline for that N.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/scale"
)

func main() {
	n := flag.Int("n", 10, "clusters of 3 pods to create")
	steady := flag.Duration("steady", time.Minute, "window of the steady-state figures")
	baseline := flag.String("baseline", "test/scale/baseline.json", "baseline file")
	compare := flag.Bool("compare", false, "fail when a figure is worse than the baseline's for the same N")
	tolerance := flag.Float64("tolerance", 0.3,
		"with -compare: how much worse a figure may be (0.3: 30 %, plus a small absolute slack)")
	managerArgs := flag.String("manager-args", "", "flags added to the manager's, e.g. --max-concurrent-reconciles=16")
	update := flag.Bool("update", false, "keep this run in the baseline file as the one for its N")
	table := flag.Bool("table", false, "print the baseline file's runs as one table (for docs/performance.md) and exit")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard()) // the harness's clients log nothing worth reading
	if *table {
		if err := printBaseline(*baseline); err != nil {
			fmt.Fprintln(os.Stderr, "bench-scale:", err)
			os.Exit(1)
		}
		return
	}
	if *n < 1 || *steady < 10*time.Second || *tolerance < 0 {
		fmt.Fprintln(os.Stderr, "bench-scale: -n must be at least 1, -steady at least 10s, -tolerance not negative")
		os.Exit(2)
	}
	opts := localcluster.BenchOptions(*n)
	opts.ManagerArgs = strings.Fields(*managerArgs)
	if err := run(opts, *n, *steady, *baseline, *compare, *tolerance, *update); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

func run(opts localcluster.Options, n int, steady time.Duration, baselinePath string, compare bool, tolerance float64,
	update bool) error {
	base, err := scale.ReadBaseline(baselinePath)
	if err != nil {
		return err
	}
	res, runErr := measure(opts, n, steady)
	res.Machine, res.Date = machine(), time.Now().UTC().Format(time.RFC3339)
	res.Command = fmt.Sprintf("make bench-scale N=%d", n)
	if len(opts.ManagerArgs) > 0 {
		res.Command += fmt.Sprintf(" BENCH_FLAGS='-manager-args=%s'", strings.Join(opts.ManagerArgs, " "))
	}
	// Beside the bench's state, which the next run wipes.
	out := filepath.Join(opts.Dir+"-results", fmt.Sprintf("result-%d.json", n))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := (scale.Baseline{Runs: []scale.Result{res}}).Write(out); err != nil {
		return err
	}
	fmt.Printf("\n%s, N=%d; manager %s; harness %s\n\n", res.Machine, n, res.Manager, res.Harness)
	scale.Table(os.Stdout, []scale.Result{res})
	for _, note := range res.Notes {
		fmt.Println("note:", note)
	}
	fmt.Println("\nwritten to", out)
	if runErr != nil {
		return runErr
	}
	if update {
		if err := base.With(res).Write(baselinePath); err != nil {
			return err
		}
		fmt.Println("kept as the baseline for N =", n, "in", baselinePath)
	}
	if !compare {
		return nil
	}
	worse, err := base.Regressions(res, tolerance)
	if err != nil {
		return err
	}
	if len(worse) > 0 {
		return fmt.Errorf("%d figures worse than the baseline:\n  %s", len(worse), strings.Join(worse, "\n  "))
	}
	fmt.Println("no figure worse than the baseline for N =", n)
	return nil
}

func printBaseline(path string) error {
	base, err := scale.ReadBaseline(path)
	if err != nil {
		return err
	}
	if len(base.Runs) == 0 {
		return fmt.Errorf("%s holds no run", path)
	}
	scale.Table(os.Stdout, base.Runs)
	return nil
}

// measure runs the bench on a fresh local cluster, under the e2e lock (it uses the e2e ports and
// the machine's cores), and stops the cluster after.
func measure(opts localcluster.Options, n int, steady time.Duration) (scale.Result, error) {
	lock, err := localcluster.LockE2E(0, func(path string) {
		fmt.Println("[bench-scale] waiting for another e2e run to finish (lock " + path + ")")
	})
	if err != nil {
		return scale.Result{}, err
	}
	defer func() { _ = lock.Close() }()
	// Only now: a Ctrl-C while waiting for the lock ends the process at once, nothing started yet.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := opts.Wipe(); err != nil {
		return scale.Result{}, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return scale.Result{}, err
	}
	c := localcluster.New(opts)
	defer func() {
		if err := c.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-scale: stopping the local cluster:", err)
		}
	}()
	if err := c.Up(ctx); err != nil {
		return scale.Result{}, err
	}
	syncLog, err := os.OpenFile(opts.LogPath("sync"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return scale.Result{}, err
	}
	defer func() { _ = syncLog.Close() }()
	if err := c.StartSync(syncLog); err != nil {
		return scale.Result{}, err
	}
	return scale.Run(ctx, scale.Config{N: n, Opts: opts, Steady: steady, Log: os.Stdout})
}

// machine says what the figures were measured on.
func machine() string {
	model := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if info, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int64
		if _, err := fmt.Sscanf(string(info), "MemTotal: %d kB", &kib); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kib)/(1<<20))
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d × %s%s, Linux %s", runtime.NumCPU(), model, mem, strings.TrimSpace(string(kernel)))
}
