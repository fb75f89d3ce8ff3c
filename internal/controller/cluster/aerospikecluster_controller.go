// Package cluster holds the AerospikeCluster reconciler: Reconcile runs a short list of named
// phases over a clusterState; pure builders say what the children should be, the reconciler
// applies the difference, and the status writer records what is true.
package cluster

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/status"
	"github.com/acko-io/acko/internal/tasks"
)

// outcome is how a background task ended.
type outcome = tasks.Result

// Prober is the per-cluster Aerospike health cache (aerospike.ProberManager). Reconcile only
// reads it: no reconcile waits on the network.
type Prober interface {
	Ensure(key types.NamespacedName, spec aerospike.ProbeSpec)
	Stop(key types.NamespacedName)
	Snapshot(key types.NamespacedName) (aerospike.ClusterHealth, bool)
	// Refresh asks for readings of every node now, reported even when nothing changed: an act that
	// takes a node down waits for readings newer than its decision.
	Refresh(key types.NamespacedName)
}

// AerospikeClusterReconciler reconciles an AerospikeCluster object.
type AerospikeClusterReconciler struct {
	client.Client
	// APIReader reads around the cache: the last look at the pods before a take-down, a child after
	// an update conflict.
	APIReader client.Reader
	// Status is the one place status is written (shared with the operations executor).
	Status   *status.Writer
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Probers  Prober
	Executor *operations.Executor
	// Tasks runs the steps that talk to pods and nodes (exec, set-config) outside Reconcile.
	Tasks *tasks.Runner
	// Live applies config changes to running nodes; nil restarts them in place instead.
	Live LiveConfigurer
	// Limits reads the open-file limit a pod runs under, which proto-fd-max may not exceed; nil
	// checks nothing.
	Limits OpenFileLimiter
	// openFileLimits are the limits read (a pod's containers keep theirs).
	openFileLimits openFileLimits
	// Logs reads a pod's container log: the progress of a cold start is only in asd's log; nil reads
	// nothing.
	Logs pods.LogReader

	Clock clock.PassiveClock
	// PollInterval is the requeue while the cluster is changing (pods coming back, migrations).
	PollInterval time.Duration
	// Backoff spaces retries after failures (zero: DefaultBackoff).
	Backoff Backoff
	// ClusterDomain is the Kubernetes cluster's DNS domain, for the pods' names in the mesh seeds
	// (empty: cluster.local).
	ClusterDomain string
	// MaxConcurrentReconciles is how many clusters are reconciled at once (0: the default); one
	// cluster is never reconciled by two workers at once.
	MaxConcurrentReconciles int
	// PodMonitors: the Prometheus Operator's CRDs exist, so spec.monitoring adds a PodMonitor.
	PodMonitors bool

	looks lastLooks
	// stuck remembers the pods outside a stuck exchange (endStuckExchange).
	stuck stuckExchanges
	// prepared remembers the restarts in place whose pods are ready for the signal (restartStep).
	prepared preparedRestarts
	// applying remembers the config each pod is given by the replication-factor change running
	// (applyTogether).
	applying applyingConfigs
}

// phase is one named step of a reconcile; stop ends the reconcile after it (nothing more to do
// now, or a later phase must not run).
type phase struct {
	name string
	run  func(ctx context.Context, st *clusterState) (stop bool, err error)
}

// +kubebuilder:rbac:groups=acko.io,resources=aerospikeclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=acko.io,resources=aerospikeclusters/status,verbs=get;update
// Children's owner references block the owner's deletion, which needs update on its finalizers.
// +kubebuilder:rbac:groups=acko.io,resources=aerospikeclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the cluster toward its spec.
func (r *AerospikeClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &ackov1alpha1.AerospikeCluster{}
	if err := r.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !cluster.DeletionTimestamp.IsZero() {
		// Children carry owner references: the garbage collector deletes them, no finalizer needed.
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	st := newClusterState(cluster, r.Clock.Now())
	st.noLive = r.Live == nil
	// The gates and the budget follow the readings first, whatever ends this reconcile.
	followed := r.followReadings(ctx, st)
	return r.finish(ctx, st, r.run(ctx, st, followed))
}

// run does what the spec asks for now and says how the reconcile ended: paused, backing off, or the
// phases run (a resume is recorded before them, ADR-0018).
func (r *AerospikeClusterReconciler) run(ctx context.Context, st *clusterState, followed error) ending {
	cluster := st.cluster
	if cluster.Spec.Paused {
		return ending{kind: endedPaused, unfollowed: followed}
	}
	if wasPaused(cluster) {
		if err := r.handleResume(ctx, cluster); err != nil {
			return ending{kind: endedResumeUnwritten, err: err}
		}
	}
	if wait := r.Backoff.wait(&cluster.Status, r.Clock.Now()); wait > 0 {
		return ending{kind: endedBackingOff, wait: wait, unfollowed: followed}
	}
	if followed != nil {
		return ending{kind: endedReconciling, err: &phaseError{phase: "followReadings", err: followed}}
	}
	return ending{kind: endedReconciling, err: r.runPhases(ctx, st)}
}

func (r *AerospikeClusterReconciler) runPhases(ctx context.Context, st *clusterState) error {
	phases := []phase{
		{"validateSpec", r.validateSpec},
		{"renderChildren", r.renderChildren},
		{"observe", r.observe},
		{"prepareVolumes", r.prepareVolumes},
		{"growVolumes", r.growVolumes},
		{"recoverLostNodes", r.recoverLostNodes},
		{"holdViolations", r.holdViolations},
		{"applyChildren", r.applyChildren},
		{"applyPodMonitor", r.applyPodMonitor},
		{"runOperation", r.runOperation},
		{"rollingRestart", r.rollingRestart},
	}
	for _, p := range phases {
		stop, err := p.run(ctx, st)
		if err != nil {
			return &phaseError{phase: p.name, err: err}
		}
		if stop {
			break
		}
	}
	return nil
}

type phaseError struct {
	phase string
	err   error
}

func (e *phaseError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

// forget drops what the operator keeps for a cluster that is gone.
func (r *AerospikeClusterReconciler) forget(key types.NamespacedName) {
	r.Probers.Stop(key)
	r.Tasks.Take(key)
	r.looks.forget(key)
	r.stuck.forget(key)
	r.prepared.forget(key)
	r.applying.forget(key)
	r.openFileLimits.forget(key)
	metrics.Forget(key)
}

// takeResults collects the cluster's finished background tasks for this reconcile's steps.
func (r *AerospikeClusterReconciler) takeResults(st *clusterState) map[string]outcome {
	return r.Tasks.Take(st.key)
}

func (r *AerospikeClusterReconciler) event(obj runtime.Object, kind, reason, action, format string, args ...any) {
	r.Recorder.Eventf(obj, nil, kind, reason, action, format, args...)
}
