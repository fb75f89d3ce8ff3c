package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// tracker watches the bench's clusters and records, for each, when it first met the condition of
// the phase being measured: the time the harness saw it in a watch event, as a user's
// `kubectl wait` would.
type tracker struct {
	mu      sync.Mutex
	latest  map[string]*ackov1alpha1.AerospikeCluster
	cond    func(*ackov1alpha1.AerospikeCluster) bool
	met     map[string]time.Time
	changed chan struct{}
}

func newTracker(ctx context.Context, c cache.Cache) (*tracker, error) {
	t := &tracker{latest: map[string]*ackov1alpha1.AerospikeCluster{}, met: map[string]time.Time{},
		cond: func(*ackov1alpha1.AerospikeCluster) bool { return false }, changed: make(chan struct{}, 1)}
	informer, err := c.GetInformer(ctx, &ackov1alpha1.AerospikeCluster{})
	if err != nil {
		return nil, err
	}
	seen := func(obj any) {
		if ac, ok := obj.(*ackov1alpha1.AerospikeCluster); ok {
			t.observe(ac)
		}
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) },
	})
	return t, err
}

func (t *tracker) observe(ac *ackov1alpha1.AerospikeCluster) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.latest[ac.Name] = ac
	if _, done := t.met[ac.Name]; !done && t.cond(ac) {
		t.met[ac.Name] = time.Now()
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
}

// expect starts a phase: from now on, a cluster meets it when cond holds for it.
func (t *tracker) expect(cond func(*ackov1alpha1.AerospikeCluster) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cond, t.met = cond, map[string]time.Time{}
	for name, ac := range t.latest {
		if cond(ac) {
			t.met[name] = time.Now()
		}
	}
}

// await waits until every one of names met the phase's condition, or until timeout; it returns
// when each did, and an error naming how many did not.
func (t *tracker) await(ctx context.Context, names []string, timeout time.Duration) (map[string]time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		met, missing := t.metOf(names)
		if missing == 0 {
			return met, nil
		}
		select {
		case <-ctx.Done():
			return met, ctx.Err()
		case <-deadline.C:
			return met, fmt.Errorf("%d of %d clusters not there after %s", missing, len(names), timeout)
		case <-t.changed:
		case <-tick.C:
		}
	}
}

func (t *tracker) metOf(names []string) (map[string]time.Time, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out, missing := map[string]time.Time{}, 0
	for _, n := range names {
		if at, ok := t.met[n]; ok {
			out[n] = at
		} else {
			missing++
		}
	}
	return out, missing
}

// get is the latest state of a cluster the harness saw.
func (t *tracker) get(name string) *ackov1alpha1.AerospikeCluster {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latest[name]
}

// running: phase Running for the current spec.
func running(ac *ackov1alpha1.AerospikeCluster) bool {
	return ac.Status.Phase == ackov1alpha1.PhaseRunning && ac.Status.ObservedGeneration == ac.Generation
}

// paused: the pause acknowledged for the current spec, as `kubectl wait --for=condition=Paused`
// sees it.
func paused(ac *ackov1alpha1.AerospikeCluster) bool {
	c := meta.FindStatusCondition(ac.Status.Conditions, ackov1alpha1.ConditionPaused)
	return ac.Status.Phase == ackov1alpha1.PhasePaused && c != nil && c.Status == metav1.ConditionTrue &&
		c.ObservedGeneration == ac.Generation
}
