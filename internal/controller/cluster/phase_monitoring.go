package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/internal/resources"
)

// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;create;update;delete

// applyPodMonitor keeps the cluster's PodMonitor in step with spec.monitoring, when the Prometheus
// Operator's CRDs existed as the manager started (no hard dependency on them). It reads around the
// cache: the operator does not watch PodMonitors.
func (r *AerospikeClusterReconciler) applyPodMonitor(ctx context.Context, st *clusterState) (bool, error) {
	if !r.PodMonitors {
		return false, nil
	}
	desired := resources.PodMonitor(st.cluster)
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(resources.PodMonitorGVK)
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err) && !st.cluster.MonitoringEnabled():
		return false, nil
	case err != nil && !apierrors.IsNotFound(err):
		return true, err
	case err == nil && !ownedBy(existing, st.cluster):
		return r.conflict(st, "PodMonitor", desired.GetName())
	case err == nil && !st.cluster.MonitoringEnabled():
		return false, client.IgnoreNotFound(r.Delete(ctx, existing))
	case apierrors.IsNotFound(err):
		return r.createChild(ctx, st, "PodMonitor", desired)
	case resources.NeedsUpdate(existing, desired):
		resources.ApplyOwnedFields(existing, desired)
		return false, r.Update(ctx, existing)
	}
	return false, nil
}
