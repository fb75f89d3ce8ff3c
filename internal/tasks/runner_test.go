package tasks

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var (
	clusterA = types.NamespacedName{Namespace: "ns", Name: "a"}
	clusterB = types.NamespacedName{Namespace: "ns", Name: "b"}
)

func started(t *testing.T, timeout time.Duration) (*Runner, context.CancelFunc, chan struct{}) {
	t.Helper()
	r := New(timeout)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = r.Start(ctx); close(stopped) }()
	for {
		r.mu.Lock()
		ready := r.ctx != nil
		r.mu.Unlock()
		if ready {
			break
		}
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() { cancel(); <-stopped })
	return r, cancel, stopped
}

func waitResult(t *testing.T, r *Runner, key Key) Result {
	t.Helper()
	select {
	case ev := <-r.Events():
		if ev.Object.GetName() != key.Cluster.Name {
			t.Fatalf("event for %s, want %s", ev.Object.GetName(), key.Cluster)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event when the task ended")
	}
	res, ok := r.Take(key.Cluster)[key.Name]
	if !ok {
		t.Fatal("no result after the event")
	}
	return res
}

// One task per cluster: a second one waits until the first has ended and its result was taken.
// Another cluster is never held up by it.
func TestOneTaskPerCluster(t *testing.T) {
	r, _, _ := started(t, time.Minute)
	release := make(chan struct{})
	var inFlight, most atomic.Int32
	slow := func(context.Context) (string, error) {
		n := inFlight.Add(1)
		if n > most.Load() {
			most.Store(n)
		}
		<-release
		inFlight.Add(-1)
		return "", nil
	}
	first := Key{clusterA, "warm-restart/a-0"}
	if !r.Run(first, slow) {
		t.Fatal("first task not started")
	}
	if r.Run(Key{clusterA, "warm-restart/a-1"}, slow) {
		t.Fatal("a second task of the same cluster started while the first runs")
	}
	if k, busy := r.Busy(clusterA); !busy || k != first {
		t.Fatalf("Busy = %v %t", k, busy)
	}
	other := Key{clusterB, "warm-restart/b-0"}
	if !r.Run(other, func(context.Context) (string, error) { return "", nil }) {
		t.Fatal("another cluster's task held up")
	}
	if res := waitResult(t, r, other); res.Err != nil {
		t.Fatal(res.Err)
	}
	close(release)
	if res := waitResult(t, r, first); res.Err != nil {
		t.Fatal(res.Err)
	}
	if most.Load() != 1 {
		t.Fatalf("%d tasks of one cluster ran at once", most.Load())
	}
	if !r.Run(Key{clusterA, "warm-restart/a-1"}, slow) {
		t.Fatal("next task refused after the result was taken")
	}
}

// A hung task ends at its deadline with the context's error, and a panicking one with an error.
func TestDeadlineAndPanic(t *testing.T) {
	r, _, _ := started(t, 50*time.Millisecond)
	key := Key{clusterA, "hang"}
	r.Run(key, func(ctx context.Context) (string, error) { <-ctx.Done(); return "", nil })
	if res := waitResult(t, r, key); !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("hung task ended with %v", res.Err)
	}
	// A task given a longer deadline of its own outlives the runner's.
	key = Key{clusterA, "long"}
	r.RunWithin(key, time.Minute, func(ctx context.Context) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
			return "outlived the runner's deadline", nil
		}
	})
	if res := waitResult(t, r, key); res.Err != nil {
		t.Fatalf("a task with its own deadline ended with %v", res.Err)
	}
	key = Key{clusterA, "panic"}
	r.Run(key, func(context.Context) (string, error) { panic("boom") })
	if res := waitResult(t, r, key); res.Err == nil || res.Err.Error() != "task panicked: boom" {
		t.Fatalf("panicking task ended with %v", res.Err)
	}
}

// When the runner stops (leadership lost), running tasks are cancelled and Start waits for them;
// nothing starts afterwards.
func TestStopsWithLeadership(t *testing.T) {
	r, cancel, stopped := started(t, time.Hour)
	key := Key{clusterA, "long"}
	ended := make(chan error, 1)
	r.Run(key, func(ctx context.Context) (string, error) { <-ctx.Done(); ended <- ctx.Err(); return "", ctx.Err() })
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return")
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("task saw %v", err)
	}
	r.Take(clusterA)
	next := Key{clusterA, "after"}
	ran := false
	r.Run(next, func(context.Context) (string, error) { ran = true; return "", nil })
	if res := r.Take(clusterA)[next.Name]; ran || !errors.Is(res.Err, ErrNotRunning) {
		t.Fatalf("a task ran after the runner stopped: ran=%t %v", ran, res.Err)
	}
}

// Take hands over every result of the cluster once, and none of another cluster.
func TestTakeAll(t *testing.T) {
	r, _, _ := started(t, time.Minute)
	a, b := Key{clusterA, "x"}, Key{clusterB, "y"}
	r.Run(a, func(context.Context) (string, error) { return "", nil })
	r.Run(b, func(context.Context) (string, error) { return "", errors.New("no") })
	<-r.Events()
	<-r.Events()
	if got := r.Take(clusterA); len(got) != 1 || got["x"].Err != nil {
		t.Fatalf("Take(a) = %v", got)
	}
	if got := r.Take(clusterA); got != nil {
		t.Fatalf("a result was handed over twice: %v", got)
	}
	if got := r.Take(clusterB); got["y"].Err == nil {
		t.Fatalf("Take(b) = %v", got)
	}
}
