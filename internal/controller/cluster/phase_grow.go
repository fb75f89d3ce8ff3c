package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/validation"
	"github.com/acko-io/acko/internal/volumes"
)

// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list

// growVolumes brings the storage up to the sizes of spec.storage.volumes. A rack's StatefulSet whose
// claim templates are smaller is replaced without its pods (volume claim templates cannot change: it
// is deleted with orphan propagation, applyChildren creates it again and it adopts the running pods),
// then each pod's claims are resized; once a pod's claims hold the new sizes it records them, and a pod
// whose Block volume grew is first restarted in place by the rolling restart (VolumeGrown): asd reads
// a device's size at start.
func (r *AerospikeClusterReconciler) growVolumes(ctx context.Context, st *clusterState) (bool, error) {
	if len(resources.StorageVolumes(st.cluster)) == 0 {
		return false, nil
	}
	if stop, err := r.replaceSmallerSets(ctx, st); stop || err != nil {
		return stop, err
	}
	want := resources.VolumeSizes(st.cluster)
	st.grown = map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(st.pods)) {
		pod := st.pods[name]
		if pod.DeletionTimestamp != nil || pod.Annotations[ackov1alpha1.AnnotationVolumeSizes] == want ||
			!resources.AerospikeStarted(pod) {
			continue
		}
		restart, why, err := r.growClaims(ctx, st, pod)
		switch {
		case errors.Is(err, errClaimGone):
			continue // the pod's next instance has a new claim, made at the spec's size
		case err != nil:
			return false, fmt.Errorf("volumes of pod %s: %w", name, err)
		case why != "":
			st.setWork(ackov1alpha1.ReasonApplying, "Growing the volumes of pod %s: %s", name, why)
		case restart:
			st.grown[name] = true
		default:
			if err := pods.RecordRunning(ctx, r.Client, pod, "", want); err != nil {
				return false, err
			}
		}
	}
	if len(st.grown) > 0 {
		st.outdated = st.findOutdated() // now with the pods whose devices grew
	}
	return false, nil
}

// replaceSmallerSets deletes, keeping their pods, the StatefulSets whose claim templates are smaller
// than the spec's, and waits while one is going.
func (r *AerospikeClusterReconciler) replaceSmallerSets(ctx context.Context, st *clusterState) (bool, error) {
	for _, name := range slices.Sorted(maps.Keys(st.existingSets)) {
		existing, desired := st.existingSets[name], st.sets[name]
		switch {
		case desired == nil:
			continue
		case existing.DeletionTimestamp != nil:
			st.setWork(ackov1alpha1.ReasonApplying, "Replacing StatefulSet %s to grow its volumes (its pods keep running)", name)
			return true, nil
		case !claimTemplatesSmaller(existing, desired):
			continue
		case rackPods(st, existing) > int(ptr.Deref(existing.Spec.Replicas, 0)):
			// A scale-down step the door let go is under way: its pods go first, so that the StatefulSet
			// created again asks for exactly the pods not yet removed through the door.
			st.setWork(ackov1alpha1.ReasonApplying, "Replacing StatefulSet %s to grow its volumes waits for the pods it removes", name)
			return true, nil
		}
		if !st.budgetHolds() {
			return true, r.holdBudget(ctx, st, name)
		}
		if err := r.deleteSet(ctx, st, existing, true); err != nil {
			return true, client.IgnoreNotFound(err)
		}
		st.setWork(ackov1alpha1.ReasonApplying, "Replacing StatefulSet %s to grow its volumes (its pods keep running)", name)
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventVolumesGrowing, "GrowVolumes", existing,
			"StatefulSet %s deleted without its pods, to be created again with the new volume sizes (%s)",
			name, resources.VolumeSizes(st.cluster))
		return true, nil
	}
	return false, nil
}

// holdBudget writes the budget that holds every pod before a StatefulSet is replaced, and waits until the
// disruption controller has counted it (budgetHolds).
func (r *AerospikeClusterReconciler) holdBudget(ctx context.Context, st *clusterState, name string) error {
	st.setWork(ackov1alpha1.ReasonApplying, "Replacing StatefulSet %s to grow its volumes waits for the "+
		"PodDisruptionBudget to hold every pod (its pods have no controller meanwhile)", name)
	objects, err := r.withBudget(ctx, st, nil)
	if err != nil {
		return err
	}
	for _, obj := range objects {
		if _, err := r.applyChild(ctx, st, obj); err != nil {
			return err
		}
	}
	return nil
}

// claimTemplatesSmaller: a claim template of existing asks for less storage than desired's.
func claimTemplatesSmaller(existing, desired *appsv1.StatefulSet) bool {
	sizes := map[string]corev1.ResourceList{}
	for _, t := range existing.Spec.VolumeClaimTemplates {
		sizes[t.Name] = t.Spec.Resources.Requests
	}
	for _, t := range desired.Spec.VolumeClaimTemplates {
		have, ok := sizes[t.Name][corev1.ResourceStorage]
		if want := t.Spec.Resources.Requests[corev1.ResourceStorage]; ok && have.Cmp(want) < 0 {
			return true
		}
	}
	return false
}

// growClaims resizes the pod's claims that ask for less than the spec, and says what it waits for (a
// resize under way, or refused by the claim's StorageClass); restart is true once every claim holds its
// size and a Block volume is larger than asd started with; errClaimGone when a claim is deleted or being
// deleted.
func (r *AerospikeClusterReconciler) growClaims(ctx context.Context, st *clusterState, pod *corev1.Pod) (
	restart bool, why string, err error) {
	started := resources.ParseVolumeSizes(pod.Annotations[ackov1alpha1.AnnotationVolumeSizes])
	for _, v := range resources.StorageVolumes(st.cluster) {
		pvc, err := r.readClaim(ctx, pod, v.Name)
		switch {
		case apierrors.IsNotFound(err) || err == nil && pvc.DeletionTimestamp != nil:
			return false, "", fmt.Errorf("%w: %s of pod %s", errClaimGone, v.Name, pod.Name)
		case err != nil:
			return false, "", err
		}
		request, capacity := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
		switch {
		case request.Cmp(v.Size) < 0:
			class, className, err := volumes.Class(ctx, r.APIReader, pvc.Spec.StorageClassName)
			if err != nil {
				return false, "", err
			}
			if refused := validation.ExpansionRefused(v, className, class); refused != nil {
				return false, refused.Detail, nil
			}
			if err := r.resizeClaim(ctx, pvc, v); err != nil {
				return false, "", err
			}
			st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventVolumesGrowing, "GrowVolumes", pod,
				"Claim %s of pod %s resized from %s to %s", pvc.Name, pod.Name, request.String(), v.Size.String())
			return false, fmt.Sprintf("claim %s resized to %s", pvc.Name, v.Size.String()), nil
		case capacity.Cmp(v.Size) < 0:
			return false, fmt.Sprintf("claim %s holds %s of %s", pvc.Name, capacity.String(), v.Size.String()), nil
		}
		if s, known := started[v.Name]; known && s.Cmp(v.Size) < 0 && resources.VolumeMode(v) == corev1.PersistentVolumeBlock {
			restart = true
		}
	}
	return restart, "", nil
}

// errClaimGone: the pod's claim is deleted or being deleted (its lost node given up, the pod recreated):
// there is nothing of it to grow, and no later phase may wait on it (model seed 93623: the operator killed
// between a give-up's claim and pod deletes, the pod ran on with its claim gone, and every reconcile failed
// here before the give-up could finish).
var errClaimGone = errors.New("the claim is gone")

// resizeClaim asks for the volume's size on the claim.
func (r *AerospikeClusterReconciler) resizeClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim,
	v ackov1alpha1.VolumeSpec) error {
	return pods.PatchByUID(ctx, r.Client, objectRef(pvc, &corev1.PersistentVolumeClaim{}), map[string]any{
		"spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": v.Size.String()}}}})
}
