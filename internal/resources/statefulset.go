package resources

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/acko-io/acko/api/v1alpha1"
)

// StatefulSet runs the pods of one rack. Its update strategy is OnDelete: the operator restarts pods itself,
// in batches gated on Aerospike's health, and RestartReason tells which pods are out of date. Its selector
// is the rack's selector labels, which depend only on the cluster name and the rack id, so it never has to
// change (Kubernetes forbids that). confHash is config.Hash (the config identity) of the rack's rendered aerospike.conf.
func StatefulSet(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement, confHash string) *appsv1.StatefulSet {
	tmpl := podTemplate(c, rack)
	tmpl.Annotations[v1alpha1.AnnotationConfigHash] = confHash
	tmpl.Annotations[v1alpha1.AnnotationPodSpecHash] = PodSpecHash(tmpl)
	blockNodes(&tmpl, BlockedNodes(c))
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: objectMeta(c, c.StatefulSetName(rack.ID), c.RackSelectorLabels(rack.ID)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(rack.Size),
			Selector:                             &metav1.LabelSelector{MatchLabels: c.RackSelectorLabels(rack.ID)},
			ServiceName:                          c.HeadlessServiceName(),
			PodManagementPolicy:                  appsv1.ParallelPodManagement,
			UpdateStrategy:                       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template:                             tmpl,
			VolumeClaimTemplates:                 claimTemplates(c),
			PersistentVolumeClaimRetentionPolicy: pvcRetention(c),
		},
	}
}

// pvcRetention maps spec.storage.pvcRetention onto the StatefulSet's policy (Retain by default).
func pvcRetention(c *v1alpha1.AerospikeCluster) *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if c.Spec.Storage == nil || c.Spec.Storage.PVCRetention == nil {
		return p
	}
	if c.Spec.Storage.PVCRetention.WhenDeleted == v1alpha1.PVCDelete {
		p.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	if c.Spec.Storage.PVCRetention.WhenScaled == v1alpha1.PVCDelete {
		p.WhenScaled = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return p
}

// StorageVolumes are spec.storage.volumes sorted by name, so that reordering the list changes nothing.
func StorageVolumes(c *v1alpha1.AerospikeCluster) []v1alpha1.VolumeSpec {
	if c.Spec.Storage == nil {
		return nil
	}
	vols := slices.Clone(c.Spec.Storage.Volumes)
	slices.SortFunc(vols, func(a, b v1alpha1.VolumeSpec) int { return strings.Compare(a.Name, b.Name) })
	return vols
}

// VolumeMode is the volume's mode with the API's default.
func VolumeMode(v v1alpha1.VolumeSpec) corev1.PersistentVolumeMode {
	if v.VolumeMode == "" {
		return corev1.PersistentVolumeFilesystem
	}
	return v.VolumeMode
}

// claimTemplates turn spec.storage.volumes into one ReadWriteOnce claim per pod and volume.
func claimTemplates(c *v1alpha1.AerospikeCluster) []corev1.PersistentVolumeClaim {
	vols := StorageVolumes(c)
	claims := make([]corev1.PersistentVolumeClaim, 0, len(vols))
	for _, v := range vols {
		claims = append(claims, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v.Name, Labels: c.SelectorLabels()},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: v.StorageClassName,
				VolumeMode:       ptr.To(VolumeMode(v)),
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: v.Size},
				},
			},
		})
	}
	return claims
}
