package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/resources"
)

// prepareVolumes gives each new pod with storage volumes its volume plan (which of its claims its
// prepare-volumes init container prepares, and how), and records the claims a pod prepared, on the
// claim (AnnotationVolumeInitialized) and in status.pods[*].initializedVolumes. A claim recorded
// once is never prepared again, by any pod; a new claim (a new UID) always is. Claims of pods created
// before volumes were prepared are recorded InUse, their data kept.
func (r *AerospikeClusterReconciler) prepareVolumes(ctx context.Context, st *clusterState) (bool, error) {
	vols := resources.StorageVolumes(st.cluster)
	if len(vols) == 0 {
		return false, nil
	}
	st.initialized = map[string][]ackov1alpha1.InitializedVolume{}
	for _, name := range slices.Sorted(maps.Keys(st.pods)) {
		pod := st.pods[name]
		if pod.DeletionTimestamp != nil {
			continue
		}
		recorded := st.cluster.Status.Pods[name].InitializedVolumes
		var err error
		switch plan := pod.Annotations[ackov1alpha1.AnnotationVolumePlan]; {
		case !resources.PreparesVolumes(pod):
			if resources.AerospikeStarted(pod) {
				st.initialized[name], err = r.recordInUse(ctx, st, pod, vols, recorded)
			}
		case plan == "":
			err = r.planVolumes(ctx, pod, vols)
		case resources.VolumesPrepared(pod):
			st.initialized[name], err = r.recordPrepared(ctx, st, pod, plan, recorded)
		}
		if err != nil {
			return false, fmt.Errorf("volumes of pod %s: %w", name, err)
		}
	}
	return false, nil
}

// claimOf is the claim the pod mounts as the storage volume (the pod says which).
func claimOf(pod *corev1.Pod, volume string) (string, bool) {
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName, true
		}
	}
	return "", false
}

// readClaim reads the pod's claim for the volume from the API server: the record on it decides
// whether a volume is erased, so a cache that is behind must not answer.
func (r *AerospikeClusterReconciler) readClaim(ctx context.Context, pod *corev1.Pod, volume string) (
	*corev1.PersistentVolumeClaim, error) {
	name, ok := claimOf(pod, volume)
	if !ok {
		return nil, fmt.Errorf("the pod mounts no claim as volume %s", volume)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, pvc)
	return pvc, err
}

// planVolumes annotates the pod with its plan: the volume's method for a claim never prepared, None
// for one that was.
func (r *AerospikeClusterReconciler) planVolumes(ctx context.Context, pod *corev1.Pod,
	vols []ackov1alpha1.VolumeSpec) error {
	plan := make([]resources.PlannedVolume, 0, len(vols))
	for _, v := range vols {
		pvc, err := r.readClaim(ctx, pod, v.Name)
		if err != nil {
			return err
		}
		method := resources.InitMethod(v)
		if pvc.Annotations[ackov1alpha1.AnnotationVolumeInitialized] != "" {
			method = ackov1alpha1.VolumeInitNone
		}
		plan = append(plan, resources.PlannedVolume{Name: v.Name, Method: method, ClaimUID: pvc.UID})
	}
	return pods.Annotate(ctx, r.Client, objectRef(pod, &corev1.Pod{}), ackov1alpha1.AnnotationVolumePlan,
		resources.FormatVolumePlan(plan))
}

// recordPrepared records the claims of the pod's plan once its init container has completed.
func (r *AerospikeClusterReconciler) recordPrepared(ctx context.Context, st *clusterState, pod *corev1.Pod,
	value string, recorded []ackov1alpha1.InitializedVolume) ([]ackov1alpha1.InitializedVolume, error) {
	plan, err := resources.ParseVolumePlan(value)
	if err != nil {
		return nil, err
	}
	return r.recordClaims(ctx, st, pod, plan, recorded)
}

// recordInUse records the claims of a pod that did not prepare them, its asd having run on them. A
// claim recorded for the pod's volume is its claim still: a claim cannot change under a pod that lives.
func (r *AerospikeClusterReconciler) recordInUse(ctx context.Context, st *clusterState, pod *corev1.Pod,
	vols []ackov1alpha1.VolumeSpec, recorded []ackov1alpha1.InitializedVolume) ([]ackov1alpha1.InitializedVolume, error) {
	plan := make([]resources.PlannedVolume, 0, len(vols))
	for _, v := range vols {
		in := resources.PlannedVolume{Name: v.Name, Method: ackov1alpha1.VolumeInUse}
		if i := slices.IndexFunc(recorded, func(iv ackov1alpha1.InitializedVolume) bool { return iv.Name == v.Name }); i >= 0 {
			in.ClaimUID = types.UID(recorded[i].ClaimUID)
		} else {
			pvc, err := r.readClaim(ctx, pod, v.Name)
			if err != nil {
				return nil, err
			}
			in.ClaimUID = pvc.UID
		}
		plan = append(plan, in)
	}
	return r.recordClaims(ctx, st, pod, plan, recorded)
}

// recordClaims records each planned claim (recordClaim) and returns the pod's status entries.
func (r *AerospikeClusterReconciler) recordClaims(ctx context.Context, st *clusterState, pod *corev1.Pod,
	plan []resources.PlannedVolume, recorded []ackov1alpha1.InitializedVolume) ([]ackov1alpha1.InitializedVolume, error) {
	out := make([]ackov1alpha1.InitializedVolume, 0, len(plan))
	for _, p := range plan {
		v, err := r.recordClaim(ctx, st, pod, p, recorded)
		if err != nil {
			return nil, err
		}
		if v != nil {
			out = append(out, *v)
		}
	}
	return out, nil
}

// recordClaim marks the planned claim prepared (unless it is already) and returns its status entry;
// nil when the claim is no longer the one planned (deleted, or replaced by a new one).
func (r *AerospikeClusterReconciler) recordClaim(ctx context.Context, st *clusterState, pod *corev1.Pod,
	p resources.PlannedVolume, recorded []ackov1alpha1.InitializedVolume) (*ackov1alpha1.InitializedVolume, error) {
	if i := slices.IndexFunc(recorded, func(iv ackov1alpha1.InitializedVolume) bool {
		return iv.Name == p.Name && iv.ClaimUID == string(p.ClaimUID)
	}); i >= 0 {
		return &recorded[i], nil
	}
	pvc, err := r.readClaim(ctx, pod, p.Name)
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	if err != nil || pvc.UID != p.ClaimUID {
		return nil, nil
	}
	method := ackov1alpha1.VolumeInitMethod(pvc.Annotations[ackov1alpha1.AnnotationVolumeInitialized])
	if method == "" {
		method = p.Method
		if err := pods.Annotate(ctx, r.Client, objectRef(pvc, &corev1.PersistentVolumeClaim{}),
			ackov1alpha1.AnnotationVolumeInitialized, string(method)); err != nil {
			return nil, err
		}
		if method != ackov1alpha1.VolumeInitNone && method != ackov1alpha1.VolumeInUse {
			st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventVolumeInitialized, "PrepareVolume", pod,
				"Volume %s of pod %s (claim %s) prepared: %s", p.Name, pod.Name, pvc.Name, method)
		}
	}
	return &ackov1alpha1.InitializedVolume{Name: p.Name, ClaimUID: string(pvc.UID), Method: method}, nil
}

// objectRef is an empty object of obj's kind with its identity (namespace, name, UID), for a patch
// that must not change a cached object.
func objectRef[T client.Object](obj client.Object, ref T) T {
	ref.SetNamespace(obj.GetNamespace())
	ref.SetName(obj.GetName())
	ref.SetUID(obj.GetUID())
	return ref
}
