// Package tasks runs the reconciler's network work outside Reconcile (ADR-0023,
// docs/adr/0023-background-work.md): exec into a pod (a warm
// restart, copying a config into place) and Aerospike info calls (set-config). Reconcile starts a
// task and returns; the task runs in the background with a deadline, and its end wakes the cluster's
// reconcile, which takes the result. So no reconcile waits on the network, and one hung exec stream
// delays nothing but its own cluster's step.
//
// Tasks never write to the API server: the reconciler records a step in status before it starts the
// task and records the outcome after, so an operator that stops at any point finds the step in status
// and settles it from what the pod and the node say (a lost result is the same as a crash).
package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// DefaultTimeout bounds a task unless the Runner is given another.
const DefaultTimeout = time.Minute

// ErrNotRunning is the result of a task whose runner stopped (leadership lost, manager stopping).
var ErrNotRunning = errors.New("background tasks are not running")

// Key names a task: its cluster, and what it does (e.g. "warm-restart/pod-1/<uid>"). A cluster has at
// most one task at a time: each takes a node down or changes it, and the rules allow one such step.
type Key struct {
	Cluster types.NamespacedName
	Name    string
}

func (k Key) String() string { return k.Cluster.String() + " " + k.Name }

// Result is how a task ended.
type Result struct {
	// Note is what the task says it did, for an event.
	Note     string
	Err      error
	Finished time.Time
}

// Func is a task's work; ctx ends at the task's deadline or when the runner stops.
type Func func(ctx context.Context) (note string, err error)

// Runner runs tasks. It is a manager Runnable that needs leader election: tasks run only while this
// manager leads, and end when it stops leading.
type Runner struct {
	timeout time.Duration
	events  chan event.GenericEvent
	now     func() time.Time

	mu      sync.Mutex
	ctx     context.Context // nil until Start
	wg      sync.WaitGroup
	running map[types.NamespacedName]Key
	done    map[Key]Result
}

// New returns a Runner whose tasks end after timeout (DefaultTimeout when 0).
func New(timeout time.Duration) *Runner {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Runner{
		timeout: timeout, events: make(chan event.GenericEvent, 1024), now: time.Now,
		running: map[types.NamespacedName]Key{}, done: map[Key]Result{},
	}
}

// Events yields one event each time a task ends, for the cluster's reconcile.
func (r *Runner) Events() <-chan event.GenericEvent { return r.events }

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader acts on pods.
func (r *Runner) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: tasks run from now until ctx ends; then it waits for them.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	<-ctx.Done()
	r.wg.Wait()
	return nil
}

// Run starts fn as the task key unless the cluster already has a task running or a result waiting
// to be taken; it reports whether it started. It never blocks. The task ends at the runner's timeout.
func (r *Runner) Run(key Key, fn Func) bool {
	return r.RunWithin(key, r.timeout, fn)
}

// RunWithin is Run for a task whose work has a longer deadline of its own (a rebalance that may take
// minutes): it ends after timeout instead of the runner's.
func (r *Runner) RunWithin(key Key, timeout time.Duration, fn Func) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, busy := r.running[key.Cluster]; busy || r.hasResult(key.Cluster) {
		return false
	}
	if r.ctx == nil || r.ctx.Err() != nil {
		r.done[key] = Result{Err: ErrNotRunning, Finished: r.now()}
		r.notify(key.Cluster)
		return true
	}
	r.running[key.Cluster] = key
	ctx, cancel := context.WithTimeout(r.ctx, timeout)
	r.wg.Go(func() {
		defer cancel()
		note, err := safely(ctx, fn)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		r.mu.Lock()
		delete(r.running, key.Cluster)
		r.done[key] = Result{Note: note, Err: err, Finished: r.now()}
		r.mu.Unlock()
		r.notify(key.Cluster)
	})
	return true
}

// safely runs fn, turning a panic into an error: a task must never take the manager down.
func safely(ctx context.Context, fn Func) (note string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("task panicked: %v", p)
		}
	}()
	return fn(ctx)
}

func (r *Runner) hasResult(cluster types.NamespacedName) bool {
	for k := range r.done {
		if k.Cluster == cluster {
			return true
		}
	}
	return false
}

// Busy reports the cluster's task that runs now.
func (r *Runner) Busy(cluster types.NamespacedName) (Key, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.running[cluster]
	return k, ok
}

// Take returns the results of the cluster's finished tasks by task name, and forgets them: a
// result the reconcile does not use is dropped (its step changed its mind, or it is settled from
// what the pod and the node say).
func (r *Runner) Take(cluster types.NamespacedName) map[string]Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]Result
	for k, res := range r.done {
		if k.Cluster == cluster {
			if out == nil {
				out = map[string]Result{}
			}
			out[k.Name] = res
			delete(r.done, k)
		}
	}
	return out
}

func (r *Runner) notify(cluster types.NamespacedName) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: cluster.Name}}
	select {
	case r.events <- event.GenericEvent{Object: obj}:
	default: // the reconcile's safety-net requeue picks the result up
	}
}
