package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/localcluster/fakeinit"
)

// Deadlines of the phases; a phase past its deadline ends the run.
func createTimeout(n int) time.Duration {
	return min(2*time.Minute+time.Duration(n)*2*time.Second, 30*time.Minute)
}

const (
	pauseTimeout  = 2 * time.Minute
	resumeTimeout = 5 * time.Minute
)

// snapshot is what the manager's counters say at one moment.
type snapshot struct {
	// requests are the manager's API requests so far, by HTTP method, less those its metrics
	// endpoint made to check the harness's scrapes (TokenReviews and SubjectAccessReviews, POSTs,
	// counted by the API server: no other client makes them).
	requests map[string]float64
	// queued and reconciled are the sums and counts of the controller's work-queue waits and
	// reconcile times, and statusWrites of the API server's time on AerospikeCluster status
	// updates, in seconds.
	queued, reconciled, statusWrites map[string]float64
	goroutines                       float64
}

func (b *bench) snapshot(ctx context.Context) (snapshot, error) {
	body, err := b.cfg.Opts.ManagerMetricsWith(ctx, localcluster.PrimaryManager, b.token)
	if err != nil {
		return snapshot{}, err
	}
	api, err := b.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return snapshot{}, fmt.Errorf("API server metrics: %w", err)
	}
	s := snapshot{requests: counters(body, "rest_client_requests_total", nil, "method"),
		queued: sumAndCount(body, "workqueue_queue_duration_seconds", map[string]string{"name": controllerName}),
		reconciled: sumAndCount(body, "controller_runtime_reconcile_time_seconds",
			map[string]string{"controller": controllerName}),
		goroutines: counters(body, "go_goroutines", nil, "")[""]}
	s.statusWrites = sumAndCount(api, "apiserver_request_duration_seconds",
		map[string]string{"resource": "aerospikeclusters", "subresource": "status", "verb": "PUT"})
	reviews := counters(api, "apiserver_request_total", nil, "resource")
	s.requests["POST"] -= reviews["tokenreviews"] + reviews["subjectaccessreviews"]
	return s, nil
}

// controllerName is the manager's AerospikeCluster controller.
const controllerName = "aerospikecluster"

func sumAndCount(body []byte, histogram string, match map[string]string) map[string]float64 {
	return map[string]float64{"sum": counters(body, histogram+"_sum", match, "")[""],
		"count": counters(body, histogram+"_count", match, "")[""]}
}

// mean is the mean of a histogram between two snapshots' sums and counts; NaN without samples.
func mean(before, after map[string]float64) float64 {
	d := diff(after, before)
	if d["count"] == 0 {
		return math.NaN()
	}
	return d["sum"] / d["count"]
}

// queueFigures say how long the phase's reconciles waited in the work queue and took, and how long
// the API server took to write a status, on average: a long wait with short reconciles means too few
// workers; long reconciles with quick status writes, client limits.
func queueFigures(what string, before, after snapshot) []Figure {
	return []Figure{{Name: what + ": mean wait in the work queue", Unit: unitSeconds, Value: mean(before.queued, after.queued)},
		{Name: what + ": mean reconcile", Unit: unitSeconds, Value: mean(before.reconciled, after.reconciled)},
		{Name: what + ": mean status write in the API server", Unit: unitSeconds,
			Value: mean(before.statusWrites, after.statusWrites)}}
}

// create creates the N clusters at once and waits until all are Running.
func (b *bench) create(ctx context.Context) error {
	b.track.expect(running)
	before, err := b.snapshot(ctx)
	if err != nil {
		return err
	}
	cpu0, err := b.usageNow()
	if err != nil {
		return err
	}
	b.logf("creating %d clusters of 3 pods", b.cfg.N)
	pids := b.cfg.Opts.PIDs()
	cpuBefore := cpuByProcess(pids)
	start := time.Now()
	err = forEach(ctx, b.names, func(ctx context.Context, name string) error {
		ac, err := sample(b.cfg.Opts, b.ns[name], name)
		if err != nil {
			return err
		}
		return b.client.Create(ctx, ac)
	})
	if err != nil {
		return err
	}
	met, err := b.track.await(ctx, b.names, createTimeout(b.cfg.N))
	b.logf("%d of %d Running after %s", len(met), b.cfg.N, time.Since(start).Round(time.Second))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	last := latest(met)
	b.note("CPU seconds until all Running, by process: %s", cpuShares(cpuBefore, cpuByProcess(pids)))
	after, err := b.snapshot(ctx)
	if err != nil {
		return err
	}
	cpu1, err := b.usageNow()
	if err != nil {
		return err
	}
	b.add(Figure{Name: "Create N: all Running after", Unit: unitSeconds, Value: last.Sub(start).Seconds()},
		Figure{Name: "Manager CPU until all Running", Unit: unitCPUSeconds, Value: cpu1.cpuSeconds - cpu0.cpuSeconds})
	used := diff(after.requests, before.requests)
	for _, m := range append([]string{"GET"}, writeMethods...) {
		b.add(Figure{Name: "API requests per cluster to Running: " + m, Unit: unitRequests, Value: used[m] / float64(b.cfg.N)})
	}
	b.add(queueFigures("Create N", before, after)...)
	return nil
}

// steady leaves the Running clusters alone and measures the manager's writes, CPU and memory.
func (b *bench) steady(ctx context.Context) error {
	b.logf("steady state: %s to settle, then %s measured", settle, b.cfg.Steady)
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	before, err := b.snapshot(ctx)
	if err != nil {
		return err
	}
	from := time.Now()
	if err := sleep(ctx, b.cfg.Steady); err != nil {
		return err
	}
	after, err := b.snapshot(ctx)
	if err != nil {
		return err
	}
	to := time.Now()
	samples := b.samples.between(from, to)
	if len(samples) < 2 {
		return fmt.Errorf("steady: %d samples of the manager's usage (%v)", len(samples), b.samples.err)
	}
	first, last := samples[0], samples[len(samples)-1]
	minutes := to.Sub(from).Minutes()
	used := diff(after.requests, before.requests)
	b.add(Figure{Name: "Steady state: writes per minute", Unit: unitPerMinute, Value: sumOf(used, writeMethods...) / minutes},
		Figure{Name: "Steady state: reads per minute", Unit: unitPerMinute, Value: used["GET"] / minutes},
		Figure{Name: "Steady state: manager CPU", Unit: unitPercent,
			Value: 100 * (last.cpuSeconds - first.cpuSeconds) / last.at.Sub(first.at).Seconds()},
		Figure{Name: "Steady state: manager RSS", Unit: unitMiB, Value: meanOf(samples, usage.rss) / 1024},
		Figure{Name: "Steady state: manager open files", Unit: unitCount, Value: meanOf(samples, usage.openFiles)},
		Figure{Name: "Steady state: manager open sockets", Unit: unitCount, Value: meanOf(samples, usage.openSockets)},
		Figure{Name: "Steady state: manager goroutines", Unit: unitCount, Value: after.goroutines})
	return nil
}

// pauseAll pauses every cluster at once and measures how long each takes to acknowledge.
func (b *bench) pauseAll(ctx context.Context) error {
	return b.pause(ctx, b.names, "Pause all N")
}

// pause pauses names at once and adds the acknowledgement latencies as figures named after what.
func (b *bench) pause(ctx context.Context, names []string, what string) error {
	b.logf("pausing %d clusters at once", len(names))
	before, err := b.snapshot(ctx)
	if err != nil {
		return err
	}
	b.track.expect(paused)
	sent, err := b.patchAll(ctx, names, `{"spec":{"paused":true}}`)
	if err != nil {
		return err
	}
	met, waitErr := b.track.await(ctx, names, pauseTimeout)
	lat := latencies(sent, met)
	b.logf("%d of %d acknowledged, p99 %.2fs", len(met), len(names), lat.Quantile(0.99))
	after, err := b.snapshot(ctx)
	if err != nil {
		return err
	}
	b.add(lat.figures(what + ": acknowledged")...)
	b.add(queueFigures(what, before, after)...)
	if waitErr != nil {
		return fmt.Errorf("pause: %w", waitErr)
	}
	return nil
}

// resumeAll resumes every cluster at once and waits until all are Running again.
func (b *bench) resumeAll(ctx context.Context) error {
	b.logf("resuming %d clusters at once", len(b.names))
	b.track.expect(running)
	start := time.Now()
	if _, err := b.patchAll(ctx, b.names, `{"spec":{"paused":false}}`); err != nil {
		return err
	}
	met, err := b.track.await(ctx, b.names, resumeTimeout)
	last := latest(met)
	b.add(Figure{Name: "Resume all N: all Running after", Unit: unitSeconds, Value: last.Sub(start).Seconds()})
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	return nil
}

// warmRestarts starts a WarmRestart on N/10 clusters at once, the first of them on one pod whose
// exec'd commands hang, and meanwhile pauses every other cluster.
func (b *bench) warmRestarts(ctx context.Context) error {
	k := max(1, b.cfg.N/10)
	restarting, others := b.names[:k], b.names[k:]
	hung := restarting[0] + "-0"
	if err := b.hangExec(ctx, b.ns[restarting[0]], hung); err != nil {
		return err
	}
	b.logf("WarmRestart on %d clusters (%s on %s, whose exec hangs)", k, restarting[0], hung)
	op := func(pods ...string) string {
		spec, _ := json.Marshal(map[string]any{"spec": map[string]any{"operations": []ackov1alpha1.OperationSpec{
			{Kind: ackov1alpha1.OperationWarmRestart, ID: "bench-warm", PodList: pods}}}})
		return string(spec)
	}
	if _, err := b.patch(ctx, restarting[0], op(hung)); err != nil {
		return err
	}
	if _, err := b.patchAll(ctx, restarting[1:], op()); err != nil {
		return err
	}
	if err := b.awaitHang(ctx, restarting[0]); err != nil {
		return err
	}
	inProgress := 0
	for _, name := range restarting {
		if ac := b.track.get(name); ac != nil && ac.Status.OperationStatus != nil &&
			ac.Status.OperationStatus.Phase == ackov1alpha1.OperationInProgress {
			inProgress++
		}
	}
	b.note("when the other clusters were paused, %d of %d WarmRestarts were in progress and %s's exec hung",
		inProgress, k, hung)
	if len(others) == 0 {
		return nil
	}
	return b.pause(ctx, others, "Pause N×0.9 during N/10 WarmRestarts, one exec hung")
}

// hangExec annotates pod so that its exec'd commands hang, and waits until its kwok Exec says so.
func (b *bench) hangExec(ctx context.Context, namespace, pod string) error {
	body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, localcluster.AnnotationExecHang, hangFor)
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod}}
	if err := b.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
		return err
	}
	exec := &unstructured.Unstructured{}
	exec.SetAPIVersion("kwok.x-k8s.io/v1alpha1")
	exec.SetKind("Exec")
	return poll(ctx, 30*time.Second, "the kwok Exec of "+pod+" to hang", func() bool {
		if b.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pod}, exec) != nil {
			return false
		}
		spec, _ := json.Marshal(exec.Object["spec"])
		return strings.Contains(string(spec), fakeinit.EnvHang)
	})
}

// awaitHang waits until a command exec'd into the cluster's hung pod hangs (the stand-in shims log
// it) while its operation is in progress.
func (b *bench) awaitHang(ctx context.Context, cluster string) error {
	return poll(ctx, time.Minute, "hung exec in "+cluster, func() bool {
		log, _ := os.ReadFile(b.cfg.Opts.InitLogPath())
		return strings.Contains(string(log), "hanging for") && b.busy(cluster)
	})
}

// busy says whether the cluster's operation is in progress, its pod not done.
func (b *bench) busy(cluster string) bool {
	ac := b.track.get(cluster)
	if ac == nil || ac.Status.OperationStatus == nil {
		return false
	}
	st := ac.Status.OperationStatus
	return st.Phase == ackov1alpha1.OperationInProgress && len(st.CompletedPods) == 0 && len(st.FailedPods) == 0
}

// latest is the last of times.
func latest(times map[string]time.Time) time.Time {
	var last time.Time
	for _, at := range times {
		if at.After(last) {
			last = at
		}
	}
	return last
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// poll checks cond every 250 ms until it holds, or fails after timeout saying what it waited for.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s after %s", what, timeout)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}
