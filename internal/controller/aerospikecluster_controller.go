// Package controller holds the AerospikeCluster reconciler.
package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// AerospikeClusterReconciler reconciles an AerospikeCluster object.
type AerospikeClusterReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=acko.io,resources=aerospikeclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=acko.io,resources=aerospikeclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=acko.io,resources=aerospikeclusters/finalizers,verbs=update

// Reconcile brings the cluster toward its spec.
func (r *AerospikeClusterReconciler) Reconcile(_ context.Context, _ ctrl.Request) (ctrl.Result, error) {
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller with the manager.
func (r *AerospikeClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&ackov1alpha1.AerospikeCluster{}).
		Named("aerospikecluster").
		Complete(r)
}
