package cluster

import (
	"context"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// The model's volume growth is the user's edit and the operator's work (growVolumes): the operator deletes
// each rack's StatefulSet without its pods and creates it again, the API server's garbage collector
// orphans the pods meanwhile, and the claims are resized where their StorageClass allows expansion.

// modelExpandableClass is the StorageClass of the model's volumes that may grow.
const modelExpandableClass = "model-expandable"

// modelStorageClasses are the world's StorageClasses: the local volumes' (no expansion, as local
// volumes have none) and one that allows expansion.
func modelStorageClasses() []*storagev1.StorageClass {
	return []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: modelLocalClass}, Provisioner: "kubernetes.io/no-provisioner"},
		{ObjectMeta: metav1.ObjectMeta{Name: modelExpandableClass}, Provisioner: "model.acko.io/disk",
			AllowVolumeExpansion: ptr.To(true)},
	}
}

// withGrowableVolume gives the cluster a Filesystem volume per pod whose StorageClass allows expansion.
func withGrowableVolume(c *ackov1alpha1.AerospikeCluster) {
	c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{{Name: "data", Path: "/opt/aerospike/data",
		Size: resource.MustParse("10Gi"), StorageClassName: ptr.To(modelExpandableClass)}}}
}

// growable: the cluster has a volume that may grow (the webhook refuses a larger size on any other).
func growable(c *ackov1alpha1.AerospikeCluster) bool {
	return slices.ContainsFunc(resources.StorageVolumes(c), func(v ackov1alpha1.VolumeSpec) bool {
		return ptr.Deref(v.StorageClassName, "") == modelExpandableClass
	})
}

// growVolume adds 10Gi to the cluster's volumes that may grow.
func growVolume(c *ackov1alpha1.AerospikeCluster) {
	for i := range c.Spec.Storage.Volumes {
		if v := &c.Spec.Storage.Volumes[i]; ptr.Deref(v.StorageClassName, "") == modelExpandableClass {
			v.Size.Add(resource.MustParse("10Gi"))
		}
	}
}

// orphanDependents is the garbage collector's part of a delete with orphan propagation: the pods the
// StatefulSet controls lose their owner reference before it goes.
func (w *modelWorld) orphanDependents(ctx context.Context, sts *appsv1.StatefulSet) {
	for _, pod := range w.pods() {
		if metav1.IsControlledBy(pod, sts) {
			pod.OwnerReferences = nil
			if err := w.api.Update(ctx, pod); err != nil {
				panic(err)
			}
		}
	}
}

// resizeClaims is the external resizer and the kubelet's online expansion: a claim that asks for more
// than it holds holds it at the next tick.
func (w *modelWorld) resizeClaims(ctx context.Context) {
	claims := &corev1.PersistentVolumeClaimList{}
	w.list(claims)
	for i := range claims.Items {
		pvc := &claims.Items[i]
		request, capacity := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
		if request.Cmp(capacity) <= 0 {
			continue
		}
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: request}
		if err := w.api.Status().Update(ctx, pvc); err != nil {
			panic(err)
		}
		w.logf("claim %s holds %s", pvc.Name, request.String())
	}
}

// drainWhileSetReplaced is hole 27's sequence (seed 63414): a roll takes a pod down, the user grows the
// volumes and the size in one edit, and a drain evicts another pod while the growth has the StatefulSet
// deleted. The budget must hold every pod from before the delete: a budget by maxUnavailable counts pods
// without a controller for nothing, and would let the drain take the second copy.
func drainWhileSetReplaced(m *modelRun) {
	m.w.editSpec("image "+modelImages[1], func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = modelImages[1] })
	m.stepUntil(2*time.Minute, func() bool { return len(m.w.withoutData()) > 0 })
	m.w.editSpec("the volumes grow by 10Gi and size 3 -> 4", func(c *ackov1alpha1.AerospikeCluster) {
		growVolume(c)
		c.Spec.Size = 4
	})
	m.stepUntil(time.Minute, m.setMissing)
	m.tick(100 * time.Millisecond) // the disruption controller counts the pods without their controller
	down := m.w.withoutData()
	for _, pod := range slices.Sorted(maps.Keys(m.w.nodes)) {
		if !slices.Contains(down, pod) {
			m.drain(pod)
			break
		}
	}
	m.steps(60)
}

// setMissing: a rack's StatefulSet does not exist (a volume growth deleted it without its pods).
func (m *modelRun) setMissing() bool {
	sets := &appsv1.StatefulSetList{}
	m.w.list(sets)
	c := m.w.cluster()
	return slices.ContainsFunc(c.RackPlan(), func(r ackov1alpha1.RackPlacement) bool {
		return !slices.ContainsFunc(sets.Items, func(s appsv1.StatefulSet) bool { return s.Name == c.StatefulSetName(r.ID) })
	})
}
