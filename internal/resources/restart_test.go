package resources

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/test/testcluster"
)

// podFrom is the pod a StatefulSet controller would create from the template (plus the fields it and the
// API server add, which must not matter).
func podFrom(sts *appsv1.StatefulSet) *corev1.Pod {
	tmpl := sts.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name = sts.Name + "-0"
	pod.Labels["controller-revision-hash"] = "aero-5d4f"
	pod.Labels["statefulset.kubernetes.io/pod-name"] = pod.Name
	pod.Spec.NodeName = "node-1"
	pod.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	return pod
}

func desired(t *testing.T, c *v1alpha1.AerospikeCluster) *appsv1.StatefulSet {
	t.Helper()
	rack := c.RackPlan()[0]
	conf, err := config.Render(c, rack, v1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	return StatefulSet(c, rack, config.Hash(conf))
}

func TestRestartReason(t *testing.T) {
	pod := podFrom(desired(t, newCluster()))
	setDataSize := func(size string) testcluster.Option {
		return func(c *v1alpha1.AerospikeCluster) {
			ns := c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)
			ns["storage-engine"].(map[string]any)["data-size"] = size
		}
	}
	newImage := func(c *v1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" }
	newResources := withPod(v1alpha1.PodOverrides{Resources: &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}})
	for _, tc := range []struct {
		name string
		mods []testcluster.Option
		want v1alpha1.RestartReason
	}{
		{"up to date", nil, ""},
		{"scaled", []testcluster.Option{func(c *v1alpha1.AerospikeCluster) { c.Spec.Size = 5 }}, ""},
		{"image", []testcluster.Option{newImage}, v1alpha1.RestartReasonImageChanged},
		{"config", []testcluster.Option{setDataSize("2G")}, v1alpha1.RestartReasonConfigChanged},
		{"pod spec", []testcluster.Option{newResources}, v1alpha1.RestartReasonPodSpecChanged},
		{"pod labels", []testcluster.Option{withPod(v1alpha1.PodOverrides{
			Labels: map[string]string{"team": "db"}})}, v1alpha1.RestartReasonPodSpecChanged},
		{"sidecar image", []testcluster.Option{withPod(v1alpha1.PodOverrides{Sidecars: []v1alpha1.Sidecar{
			{Container: corev1.Container{Name: "exporter", Image: "exporter:2"}}}})}, v1alpha1.RestartReasonPodSpecChanged},
		{"image beats config", []testcluster.Option{setDataSize("2G"), newImage},
			v1alpha1.RestartReasonImageChanged},
		{"config beats pod spec", []testcluster.Option{newResources, setDataSize("2G")},
			v1alpha1.RestartReasonConfigChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, restart := RestartReason(pod, desired(t, newCluster(tc.mods...)))
			if reason != tc.want || restart != (tc.want != "") {
				t.Errorf("RestartReason = %q, %v; want %q", reason, restart, tc.want)
			}
		})
	}
}

// An image change alone must not look like a pod spec change, or the reason would be ambiguous.
func TestPodSpecHashIgnoresImageAndHashes(t *testing.T) {
	a := desired(t, newCluster()).Spec.Template
	b := desired(t, newCluster(func(c *v1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-9" })).Spec.Template
	b.Annotations[v1alpha1.AnnotationConfigHash] = "other"
	if PodSpecHash(a) != PodSpecHash(b) {
		t.Error("PodSpecHash depends on the image or the config hash")
	}
	b.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
	if PodSpecHash(a) == PodSpecHash(b) {
		t.Error("PodSpecHash ignores the container's env")
	}
	if len(PodSpecHash(a)) != 16 {
		t.Errorf("hash %q is not 16 hex digits", PodSpecHash(a))
	}
}

func TestRestartReasonForAForeignPod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "aero-0"}}
	if reason, ok := RestartReason(pod, desired(t, newCluster())); !ok || reason != v1alpha1.RestartReasonImageChanged {
		t.Errorf("a pod without the aerospike container: %q, %v", reason, ok)
	}
}
