package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// childConflict is a child with the expected name that this cluster does not own: it is never
// adopted or changed.
type childConflict struct {
	kind, name string
}

func (c childConflict) Error() string {
	return fmt.Sprintf("%s %s exists and is not owned by this AerospikeCluster: rename the cluster or remove the %s",
		c.kind, c.name, c.kind)
}

func ownedBy(obj metav1.Object, c *ackov1alpha1.AerospikeCluster) bool {
	return metav1.IsControlledBy(obj, c)
}

// applyChildren creates or updates every child that differs from its desired form, steps scale
// downs one batch at a time, and removes the StatefulSets of racks that are gone once empty.
func (r *AerospikeClusterReconciler) applyChildren(ctx context.Context, st *clusterState) (bool, error) {
	for _, obj := range st.objects {
		if stop, err := r.applyChild(ctx, st, obj); stop || err != nil {
			return stop, err
		}
	}
	budget := st.cluster.BatchSize()
	for _, rack := range st.racks {
		sts := st.sets[st.cluster.StatefulSetName(rack.ID)]
		replicas := st.plannedReplicas(st.existingSets[sts.Name], rack.Size, &budget)
		st.deferred = st.deferred || replicas != rack.Size
		sts.Spec.Replicas = ptr.To(replicas)
		st.expectedSize += int(*sts.Spec.Replicas)
		if stop, err := r.applyChild(ctx, st, sts); stop || err != nil {
			return stop, err
		}
	}
	if err := r.removeOldRacks(ctx, st, &budget); err != nil {
		return true, err
	}
	st.applied = !st.deferred
	return false, nil
}

// applyChild creates obj, or updates the existing child when it differs in what the operator owns.
func (r *AerospikeClusterReconciler) applyChild(ctx context.Context, st *clusterState, desired client.Object) (bool, error) {
	gvk, err := apiutil.GVKForObject(desired, r.Scheme)
	if err != nil {
		return true, err
	}
	kind := gvk.Kind
	existing, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return true, fmt.Errorf("cannot copy %s", kind)
	}
	err = r.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		return r.createChild(ctx, st, kind, desired)
	case err != nil:
		return true, err
	case !ownedBy(existing, st.cluster):
		return r.conflict(st, kind, desired.GetName())
	case !resources.NeedsUpdate(existing, desired):
		return false, nil
	}
	resources.ApplyOwnedFields(existing, desired)
	return false, r.Update(ctx, existing)
}

func (r *AerospikeClusterReconciler) createChild(ctx context.Context, st *clusterState, kind string,
	obj client.Object) (bool, error) {
	err := r.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		// Not in our label-selected cache, so not ours.
		return r.conflict(st, kind, obj.GetName())
	}
	if err != nil {
		return true, err
	}
	st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventCreated, "Create", "Created %s %s", kind, obj.GetName())
	return false, nil
}

func (r *AerospikeClusterReconciler) conflict(st *clusterState, kind, name string) (bool, error) {
	st.invalid, st.invalidReason = childConflict{kind: kind, name: name}.Error(), ackov1alpha1.ReasonChildConflict
	return true, nil
}

// plannedReplicas is what a rack's StatefulSet should ask for now: scale ups at once, scale downs
// by at most budget pods (shared by all racks), and only while removing a node is safe.
func (st *clusterState) plannedReplicas(existing *appsv1.StatefulSet, desired int32, budget *int32) int32 {
	if existing == nil || existing.Spec.Replicas == nil || *existing.Spec.Replicas <= desired {
		if existing != nil && existing.Spec.Replicas != nil && *existing.Spec.Replicas < desired {
			st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s up from %d to %d pods", existing.Name, *existing.Spec.Replicas, desired)
			st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventScaled, "Scale",
				"Scaling %s up from %d to %d pods", existing.Name, *existing.Spec.Replicas, desired)
		}
		return desired
	}
	current := *existing.Spec.Replicas
	if why := st.unsafeToRemoveNodes(); why != "" {
		st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down to %d pods waits: %s", existing.Name, desired, why)
		return current
	}
	step := min(current-desired, *budget)
	*budget -= step
	if step > 0 {
		st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down from %d to %d pods", existing.Name, current, current-step)
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventScaled, "Scale",
			"Scaling %s down from %d to %d pods", existing.Name, current, current-step)
	}
	return current - step
}

// unsafeToRemoveNodes says why a node cannot be removed now ("" when it can): every pod must be
// Ready, no pod removal may be under way, and Aerospike must be stable with no migrations left.
func (st *clusterState) unsafeToRemoveNodes() string {
	var replicas int32
	for _, s := range st.existingSets {
		replicas += ptr.Deref(s.Spec.Replicas, 0)
	}
	if int(replicas) != len(st.pods) || int(st.podsReadyCount()) != len(st.pods) {
		return fmt.Sprintf("%d pods exist, %d Ready, %d expected", len(st.pods), st.podsReadyCount(), replicas)
	}
	if st.operationInProgress() {
		return "an operation is in progress"
	}
	if stable, why := st.aerospikeStable(int(replicas)); !stable {
		return "Aerospike cluster not stable: " + why
	}
	return ""
}

func (st *clusterState) operationInProgress() bool {
	op := st.cluster.Status.OperationStatus
	return op != nil && op.Phase == ackov1alpha1.OperationInProgress
}

// removeOldRacks scales the StatefulSets of removed racks to zero like any scale down, then deletes
// them and their ConfigMaps.
func (r *AerospikeClusterReconciler) removeOldRacks(ctx context.Context, st *clusterState, budget *int32) error {
	for name, existing := range st.existingSets {
		if _, desired := st.sets[name]; desired {
			continue
		}
		replicas := st.plannedReplicas(existing, 0, budget)
		st.expectedSize += int(replicas)
		if replicas > 0 || ptr.Deref(existing.Spec.Replicas, 0) > 0 {
			st.deferred = true
			st.setWork(ackov1alpha1.ReasonScaling, "Removing rack StatefulSet %s", name)
			if replicas != ptr.Deref(existing.Spec.Replicas, 0) {
				patched := existing.DeepCopy()
				patched.Spec.Replicas = ptr.To(replicas)
				if err := r.Update(ctx, patched); err != nil {
					return err
				}
			}
			continue
		}
		if rackPods(st, existing) > 0 {
			st.deferred = true
			st.setWork(ackov1alpha1.ReasonScaling, "Waiting for the pods of %s to go", name)
			continue
		}
		if err := r.deleteRack(ctx, st, existing); err != nil {
			return err
		}
	}
	return nil
}

func rackPods(st *clusterState, sts *appsv1.StatefulSet) int {
	n := 0
	for _, pod := range st.pods {
		if metav1.IsControlledBy(pod, sts) {
			n++
		}
	}
	return n
}

func (r *AerospikeClusterReconciler) deleteRack(ctx context.Context, st *clusterState, sts *appsv1.StatefulSet) error {
	if err := client.IgnoreNotFound(r.Delete(ctx, sts)); err != nil {
		return err
	}
	name := st.cluster.ConfigMapName(rackOf(sts))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: name}}
	if err := client.IgnoreNotFound(r.Delete(ctx, cm)); err != nil {
		return err
	}
	st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventScaled, "Scale", "Removed rack StatefulSet %s", sts.Name)
	return nil
}
