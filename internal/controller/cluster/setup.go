package cluster

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// DefaultPollInterval is the requeue while a cluster is changing.
const DefaultPollInterval = 5 * time.Second

// DefaultMaxConcurrentReconciles is how many clusters are reconciled at once. A reconcile waits on
// nothing but the API server, and there it waits a lot: with 4 workers, 100 clusters paused at once
// waited 8.9 s in the work queue on average for reconciles of 0.6 s (docs/performance.md). Workers
// are goroutines; --kube-api-qps bounds what they send together.
const DefaultMaxConcurrentReconciles = 32

// CacheOptions is the manager's cache: ACKO's own children only (CacheByObject), kept without their
// managed fields, which no decision reads and which are a large share of every cached object's bytes.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: CacheByObject(), DefaultTransform: cache.TransformStripManagedFields()}
}

// CacheByObject limits the manager's cache to the objects ACKO labels as its own: the operator
// never caches every pod, ConfigMap or Service of the Kubernetes cluster.
func CacheByObject() map[client.Object]cache.ByObject {
	own := labels.SelectorFromSet(labels.Set{ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy})
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   {Label: own},
		&corev1.ConfigMap{}:             {Label: own},
		&corev1.Service{}:               {Label: own},
		&appsv1.StatefulSet{}:           {Label: own},
		&policyv1.PodDisruptionBudget{}: {Label: own},
		&batchv1.Job{}:                  {Label: own},
	}
}

// SetupWithManager registers the controller: the cluster (spec changes only: the operator's own
// status writes must not wake it), its children (a Service's drift too: Services have no
// generation), its pods (phase, readiness, IP, UID and container state changes only), the
// PodDisruptionBudget's count of healthy pods, the prober's health changes and the ends of
// background tasks.
func (r *AerospikeClusterReconciler) SetupWithManager(mgr ctrl.Manager, wake ...<-chan event.GenericEvent) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Backoff == (Backoff{}) {
		r.Backoff = DefaultBackoff
	}
	if r.ClusterDomain == "" {
		r.ClusterDomain = ackov1alpha1.DefaultClusterDomain
	}
	if r.PollInterval == 0 {
		r.PollInterval = DefaultPollInterval
	}
	if r.MaxConcurrentReconciles == 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	specOnly := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	b := ctrl.NewControllerManagedBy(mgr).
		For(&ackov1alpha1.AerospikeCluster{}, specOnly).
		Owns(&appsv1.StatefulSet{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, statefulSetObserved))).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, budgetCounted))).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(clusterOfPod), builder.WithPredicates(podChanged))
	for _, ch := range wake {
		b = b.WatchesRawSource(source.Channel(ch, &handler.EnqueueRequestForObject{}))
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Named("aerospikecluster").
		Complete(r)
}

// budgetCounted lets through the disruption controller's new count of a budget, which a restart in
// place or a scale down waits for.
var budgetCounted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*policyv1.PodDisruptionBudget)
		n, ok2 := e.ObjectNew.(*policyv1.PodDisruptionBudget)
		return !ok1 || !ok2 || o.Status.CurrentHealthy != n.Status.CurrentHealthy ||
			o.Status.ObservedGeneration != n.Status.ObservedGeneration
	},
}

// clusterOfPod maps a pod to its cluster through the instance label the builders set.
func clusterOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[ackov1alpha1.LabelInstance]
	if name == "" || obj.GetLabels()[ackov1alpha1.LabelManagedBy] != ackov1alpha1.ManagedBy {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// statefulSetObserved lets through the StatefulSet controller catching up with a new generation,
// which a rolling restart waits for.
var statefulSetObserved = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*appsv1.StatefulSet)
		n, ok2 := e.ObjectNew.(*appsv1.StatefulSet)
		return !ok1 || !ok2 || o.Status.ObservedGeneration != n.Status.ObservedGeneration
	},
}

// podChanged lets through the pod changes the reconciler acts on, not every status heartbeat.
var podChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		brokenO, _ := resources.Broken(o)
		brokenN, _ := resources.Broken(n)
		return o.UID != n.UID || o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase ||
			o.Status.PodIP != n.Status.PodIP ||
			resources.PodReady(o) != resources.PodReady(n) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
			resources.PodRunning(o) != resources.PodRunning(n) || brokenO != brokenN ||
			o.Annotations[ackov1alpha1.AnnotationConfigHash] != n.Annotations[ackov1alpha1.AnnotationConfigHash]
	},
}
