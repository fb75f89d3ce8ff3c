// Package toolrun holds what the backup and restore reconcilers share: a tool's Job created once and
// followed to its end (with its summary read from the log), the namespace's tool account, conditions set
// or removed, and the watch that wakes a run waiting for its cluster.
package toolrun

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/backup"
	"github.com/acko-io/acko/internal/pods"
)

// Poll is how often a running backup or restore is looked at besides its Jobs' changes (the
// cluster's stability during the run is sampled then).
const Poll = 5 * time.Second

// Ended: the phase is final (a backup run's or a restore's).
func Ended(p ackov1alpha1.BackupPhase) bool {
	return p == ackov1alpha1.BackupSucceeded || p == ackov1alpha1.BackupFailed
}

// ClusterNotReadyFor says why a backup or restore waits for the cluster, or "" when it may run: never
// while paused; while the operator changes the cluster (a roll, a scale, an operation) only when asked.
func ClusterNotReadyFor(c *ackov1alpha1.AerospikeCluster, whileChanging bool) string {
	switch {
	case c.Spec.Paused:
		return fmt.Sprintf("waiting: cluster %s is paused", c.Name)
	case whileChanging || ClusterReady(c) || onlyMigrating(c):
		return ""
	}
	return fmt.Sprintf("waiting for cluster %s to be Ready (it is %s)", c.Name, cmp.Or(string(c.Status.Phase), "starting"))
}

// onlyMigrating: every pod is Ready at the current spec and nothing is in progress but Aerospike's own
// migrations. A backup may run then (the tools scan by partition); its status says the cluster was not
// stable.
func onlyMigrating(c *ackov1alpha1.AerospikeCluster) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReady)
	reconciling := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReconciling)
	return ready != nil && ready.ObservedGeneration == c.Generation && ready.Reason == ackov1alpha1.ReasonAerospikeNotStable &&
		(reconciling == nil || reconciling.Status != metav1.ConditionTrue || reconciling.Reason == ackov1alpha1.ReasonApplying)
}

// ClusterReady: every pod Ready at the current spec and Aerospike stable, no migrations.
func ClusterReady(c *ackov1alpha1.AerospikeCluster) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == c.Generation
}

// EnsureToolAccount creates the namespace's tool ServiceAccount when it is missing. It is shared by the
// namespace's backups and restores, so no one of them owns it.
func EnsureToolAccount(ctx context.Context, c client.Client, namespace string) error {
	err := c.Create(ctx, backup.ServiceAccount(namespace))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// CreateOwned creates a Job owned by owner; one that exists already (created before a crash) is kept.
func CreateOwned(ctx context.Context, c client.Client, owner client.Object, job *batchv1.Job) error {
	if err := controllerutil.SetControllerReference(owner, job, c.Scheme()); err != nil {
		return err
	}
	err := c.Create(ctx, job)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// logLines is how much of a tool's log is read for its summary.
const logLines = 20

// JobOutcome reads a tool Job at now (the reconcile's clock): done once it ended; failure says why it
// failed ("" when it succeeded); lines are the end of its pod's log.
func JobOutcome(ctx context.Context, c client.Client, logs pods.LogReader, namespace, name, tool string, now time.Time) (
	done bool, failure string, lines []string, err error) {
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return true, fmt.Sprintf("job %s is gone", name), nil, nil
		}
		return false, "", nil, err
	}
	complete, failed := jobFinished(job)
	pod, err := jobPod(ctx, c, job)
	if err != nil {
		return false, "", nil, err
	}
	if !complete && !failed {
		if why := cannotStart(pod); why != "" {
			// The kubelet would retry until the Job's deadline: say it now, and take the Job away.
			err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
			return true, fmt.Sprintf("job %s cannot start: %s", name, why), nil, client.IgnoreNotFound(err)
		}
		return false, "", nil, nil
	}
	if pod == nil && now.Sub(endedAt(job)) < podSeenGrace {
		return false, "", nil, nil // looked at again at the next poll, with its pod
	}
	if pod != nil {
		if lines, err = logs.Tail(ctx, pod, tool, logLines); err != nil {
			logf.FromContext(ctx).V(1).Info("tool log not read", "pod", pod.Name, "error", err.Error())
		}
	}
	if failed {
		failure = fmt.Sprintf("job %s failed: %s", name, backup.LastError(lines, jobFailure(job)))
	}
	return true, failure, lines, nil
}

// cannotStart is why the tool's container cannot start without the user: a Secret or key it names is
// missing (a destination without credentials), or its image does not exist.
func cannotStart(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && (w.Reason == "CreateContainerConfigError" || w.Reason == "InvalidImageName") {
			return w.Reason + ": " + w.Message
		}
	}
	return ""
}

func jobFinished(job *batchv1.Job) (complete, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobFailed:
			failed = true
		}
	}
	return complete, failed
}

// podSeenGrace is how long after its Job ended the Job's pod may still be missing from the cache: the
// pods come through another watch than the Jobs, and a finished Job read before its pod would have its
// tool's figures read as none.
const podSeenGrace = 30 * time.Second

// endedAt is when the Job ended (zero when it did not say).
func endedAt(job *batchv1.Job) time.Time {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func jobFailure(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return "failed"
}

// jobPod is the newest pod of a Job, if any is left.
func jobPod(ctx context.Context, c client.Client, job *batchv1.Job) (*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, err
	}
	var newest *corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = p
		}
	}
	return newest, nil
}

// Conditions sets a status's conditions, or removes it when given none: no stale condition stays.
type Conditions struct {
	List       *[]metav1.Condition
	Generation int64
}

// Set sets the condition typ to c, or removes it when c is nil.
func (s Conditions) Set(typ string, c *metav1.Condition) {
	if c == nil {
		meta.RemoveStatusCondition(s.List, typ)
		return
	}
	c.Type, c.ObservedGeneration = typ, s.Generation
	meta.SetStatusCondition(s.List, *c)
}

func NewCondition(status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	return &metav1.Condition{Status: status, Reason: reason, Message: message}
}

// Register registers a tool run's reconciler under name: its objects (kind; spec changes only), the Jobs
// they own, and the clusters they name (list, read with reader), woken only by what a waiting run reads
// (ClusterReadinessChanged). It fills the reconciler's clock and cluster domain when unset.
func Register[L client.ObjectList](mgr ctrl.Manager, name string, kind client.Object, list L, reader client.Reader,
	clk *clock.PassiveClock, clusterDomain *string, r reconcile.Reconciler) error {
	if *clk == nil {
		*clk = clock.RealClock{}
	}
	if *clusterDomain == "" {
		*clusterDomain = ackov1alpha1.DefaultClusterDomain
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(kind, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Watches(&ackov1alpha1.AerospikeCluster{}, handler.EnqueueRequestsFromMapFunc(NamingCluster(reader, list)),
			builder.WithPredicates(ClusterReadinessChanged)).
		Named(name).
		Complete(r)
}

// ClusterReadinessChanged lets through the cluster changes that can start a waiting run (what
// ClusterNotReadyFor reads: the generation, the pause, Ready and Reconciling), not every status write of
// a cluster's reconciles.
var ClusterReadinessChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*ackov1alpha1.AerospikeCluster)
		n, ok2 := e.ObjectNew.(*ackov1alpha1.AerospikeCluster)
		if !ok1 || !ok2 || o.Generation != n.Generation || o.Spec.Paused != n.Spec.Paused {
			return true
		}
		for _, t := range []string{ackov1alpha1.ConditionReady, ackov1alpha1.ConditionReconciling} {
			a, b := meta.FindStatusCondition(o.Status.Conditions, t), meta.FindStatusCondition(n.Status.Conditions, t)
			if (a == nil) != (b == nil) || a != nil && (a.Status != b.Status || a.Reason != b.Reason ||
				a.ObservedGeneration != b.ObservedGeneration) {
				return true
			}
		}
		return o.Status.Phase != n.Status.Phase
	},
}

// NamingCluster maps a cluster to the backups or restores (list) of its namespace that name it: a run
// that waits for the cluster to be Ready or resumed goes as soon as it is.
func NamingCluster[L client.ObjectList](c client.Reader, list L) handler.MapFunc {
	return func(ctx context.Context, cluster client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(L)
		if err := c.List(ctx, l, client.InNamespace(cluster.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			var named string
			switch obj := o.(type) {
			case *ackov1alpha1.AerospikeBackup:
				named = obj.Spec.Cluster
			case *ackov1alpha1.AerospikeRestore:
				named = obj.Spec.Cluster
			}
			if named == cluster.GetName() {
				item := o.(client.Object)
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
			}
			return nil
		})
		return out
	}
}
