package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/resources"
)

// restartCheck is a named safety predicate that gates every rolling-restart batch (as ECK does):
// it returns "" when the batch may go, or why it may not.
type restartCheck struct {
	name  string
	check func(st *clusterState) string
}

var restartChecks = []restartCheck{
	{"NoOperationInProgress", func(st *clusterState) string {
		if st.operationInProgress() {
			return "operation " + st.cluster.Status.OperationStatus.ID + " is in progress"
		}
		return ""
	}},
	{"PodsReady", func(st *clusterState) string {
		if notReady := st.notReadyPods(); len(notReady) > 0 {
			return "pods not Ready: " + strings.Join(notReady, ", ")
		}
		return ""
	}},
	{"ClusterStable", func(st *clusterState) string {
		if stable, why := st.aerospikeStable(st.expectedSize); !stable {
			return why
		}
		return ""
	}},
}

// rollingRestart deletes outdated pods in batches of rollingUpdateBatchSize, each batch gated on
// restartChecks. Every pod is recorded in status (with its UID) before it is deleted, so that an
// operator restarted at any point deletes no pod twice.
func (r *AerospikeClusterReconciler) rollingRestart(ctx context.Context, st *clusterState) (bool, error) {
	inFlight, err := r.settleRestarts(ctx, st)
	if err != nil || len(inFlight) > 0 {
		return true, err
	}
	if len(st.outdated) == 0 {
		return false, nil
	}
	if name := st.setNotYetUpdated(); name != "" {
		// A pod deleted before its StatefulSet controller has the new template would come back with
		// the old one and need a second restart.
		st.setWork(ackov1alpha1.ReasonRollingRestart, "Waiting for StatefulSet %s to take the new template", name)
		return true, nil
	}
	for _, c := range restartChecks {
		if why := c.check(st); why != "" {
			st.setWork(ackov1alpha1.ReasonRestartBlocked, "Rolling restart held by check %s: %s", c.name, why)
			return true, nil
		}
	}
	batch := st.outdated[:min(int(st.cluster.BatchSize()), len(st.outdated))]
	return true, r.restartBatch(ctx, st, batch)
}

func (r *AerospikeClusterReconciler) restartBatch(ctx context.Context, st *clusterState, batch []outdatedPod) error {
	at := metav1.NewTime(st.now)
	if err := r.status.WriteStatus(ctx, st.cluster, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, o := range batch {
			operations.RecordRestart(s, o.pod.Name, o.reason, at)
			p := s.Pods[o.pod.Name]
			p.RestartingUID = string(o.pod.UID)
			s.Pods[o.pod.Name] = p
		}
	}); err != nil {
		return err
	}
	var names []string
	for _, o := range batch {
		if err := r.deleteForRestart(ctx, st, o.pod, o.reason); err != nil {
			return err
		}
		names = append(names, fmt.Sprintf("%s (%s)", o.pod.Name, o.reason))
	}
	st.setWork(ackov1alpha1.ReasonRollingRestart, "Restarting %s", strings.Join(names, ", "))
	st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventRollingRestartStarted, "Restart",
		"Restarting %s; %d pods to go after this batch", strings.Join(names, ", "), len(st.outdated)-len(batch))
	return nil
}

// deleteForRestart deletes exactly the pod instance that was recorded; a pod already replaced is
// not deleted again.
func (r *AerospikeClusterReconciler) deleteForRestart(ctx context.Context, st *clusterState, pod *corev1.Pod,
	reason ackov1alpha1.RestartReason) error {
	uid := pod.UID
	err := r.Delete(ctx, pod, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		metrics.RecordRestart(types.NamespacedName{Namespace: st.cluster.Namespace, Name: st.cluster.Name}, reason)
	}
	return err
}

// settleRestarts follows the pods recorded as restarting: a pod back (new UID and Ready) is done;
// a recorded pod still running its old instance was never deleted (the operator stopped in
// between) and is deleted now, unless the change was reverted. It returns the pods still on
// their way back.
func (r *AerospikeClusterReconciler) settleRestarts(ctx context.Context, st *clusterState) ([]string, error) {
	var inFlight, done []string
	for name, p := range st.cluster.Status.Pods {
		if p.RestartingUID == "" {
			continue
		}
		pod := st.pods[name]
		switch {
		case pod == nil || pod.DeletionTimestamp != nil:
			inFlight = append(inFlight, name)
		case string(pod.UID) != p.RestartingUID:
			if !operations.PodReady(pod) {
				inFlight = append(inFlight, name)
				continue
			}
			done = append(done, name)
		case st.isOutdated(name):
			if err := r.deleteForRestart(ctx, st, pod, p.LastRestartReason); err != nil {
				return nil, err
			}
			inFlight = append(inFlight, name)
		default:
			done = append(done, name) // the change was reverted before the pod was deleted
		}
	}
	if err := r.clearRestarting(ctx, st, done, len(inFlight) == 0); err != nil {
		return nil, err
	}
	if len(inFlight) > 0 {
		st.setWork(ackov1alpha1.ReasonRollingRestart, "Waiting for restarted pods to come back: %s", strings.Join(inFlight, ", "))
	}
	return inFlight, nil
}

func (r *AerospikeClusterReconciler) clearRestarting(ctx context.Context, st *clusterState, done []string, last bool) error {
	if len(done) == 0 {
		return nil
	}
	err := r.status.Update(ctx, st.cluster, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, name := range done {
			if p, ok := s.Pods[name]; ok {
				p.RestartingUID = ""
				s.Pods[name] = p
			}
		}
	})
	if err == nil && last && len(st.outdated) == 0 {
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventRollingRestartFinished, "Restart",
			"Rolling restart finished: every pod runs the current template")
	}
	return err
}

// setNotYetUpdated names a StatefulSet whose observed state (from this reconcile's start) is not
// yet the desired template, or whose controller has not seen its latest generation ("" when none).
func (st *clusterState) setNotYetUpdated() string {
	for name, desired := range st.sets {
		existing := st.existingSets[name]
		if existing == nil || resources.NeedsUpdate(existing, desired) ||
			existing.Status.ObservedGeneration < existing.Generation {
			return name
		}
	}
	return ""
}

func (st *clusterState) isOutdated(name string) bool {
	for _, o := range st.outdated {
		if o.pod.Name == name {
			return true
		}
	}
	return false
}
