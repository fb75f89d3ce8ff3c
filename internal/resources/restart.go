package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/api/v1alpha1"
)

// PodSpecHash is a short digest of a pod template without the Aerospike image (of the Aerospike container
// and of the init container that copies the config) and without the two hash annotations (and the
// replication-factor one, which follows the config). Leaving those out lets a pod's annotations and image
// tell the three kinds of change apart: image (ImageChanged), rendered config (ConfigChanged) and everything
// else (PodSpecChanged).
func PodSpecHash(tmpl corev1.PodTemplateSpec) string {
	t := tmpl.DeepCopy()
	delete(t.Annotations, v1alpha1.AnnotationConfigHash)
	delete(t.Annotations, v1alpha1.AnnotationPodSpecHash)
	delete(t.Annotations, v1alpha1.AnnotationReplicationFactor)
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == v1alpha1.AerospikeContainerName {
			t.Spec.Containers[i].Image = ""
		}
	}
	for i := range t.Spec.InitContainers {
		if name := t.Spec.InitContainers[i].Name; name == ConfigInitContainer || name == PrepareVolumesContainer {
			t.Spec.InitContainers[i].Image = "" // the Aerospike image too
		}
	}
	// The report came later than the pods of an older operator: they need no restart to get it.
	t.Spec.InitContainers = slices.DeleteFunc(t.Spec.InitContainers, func(c corev1.Container) bool {
		return c.Name == ConfigReportContainer
	})
	// encoding/json writes struct fields in order and map keys sorted: the same template always gives
	// the same bytes. It cannot fail: a PodTemplateSpec holds no channels, functions or cyclic values.
	data, _ := json.Marshal(t)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// RestartReason reports why a pod no longer matches its StatefulSet's desired template, and false when it
// is up to date. One restart picks up every change at once, so only one reason is recorded: the most
// significant, in the order ImageChanged (a different server binary), ConfigChanged (a different
// aerospike.conf), PodSpecChanged (anything else in the template).
func RestartReason(pod *corev1.Pod, desired *appsv1.StatefulSet) (v1alpha1.RestartReason, bool) {
	tmpl := desired.Spec.Template
	switch {
	case aerospikeImage(pod.Spec) != aerospikeImage(tmpl.Spec):
		return v1alpha1.RestartReasonImageChanged, true
	case pod.Annotations[v1alpha1.AnnotationConfigHash] != tmpl.Annotations[v1alpha1.AnnotationConfigHash]:
		return v1alpha1.RestartReasonConfigChanged, true
	case pod.Annotations[v1alpha1.AnnotationPodSpecHash] != tmpl.Annotations[v1alpha1.AnnotationPodSpecHash]:
		return v1alpha1.RestartReasonPodSpecChanged, true
	}
	return "", false
}

// aerospikeImage is the image of the Aerospike container, "" when there is none.
func aerospikeImage(spec corev1.PodSpec) string {
	for _, c := range spec.Containers {
		if c.Name == v1alpha1.AerospikeContainerName {
			return c.Image
		}
	}
	return ""
}
