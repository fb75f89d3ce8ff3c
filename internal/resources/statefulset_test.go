package resources

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

func aerospike(t *testing.T, sts *appsv1.StatefulSet) corev1.Container {
	t.Helper()
	ctrs := sts.Spec.Template.Spec.Containers
	if len(ctrs) == 0 || ctrs[0].Name != v1alpha1.AerospikeContainerName {
		t.Fatalf("first container is not %s: %v", v1alpha1.AerospikeContainerName, ctrs)
	}
	return ctrs[0]
}

func TestStatefulSetShape(t *testing.T) {
	c := newCluster()
	sts := StatefulSet(c, c.RackPlan()[0], "cafe")
	spec := sts.Spec
	switch {
	case sts.Name != "aero":
		t.Errorf("name = %q", sts.Name)
	case ptr.Deref(spec.Replicas, 0) != 3:
		t.Errorf("replicas = %v", spec.Replicas)
	case spec.ServiceName != "aero-headless":
		t.Errorf("serviceName = %q", spec.ServiceName)
	case spec.PodManagementPolicy != appsv1.ParallelPodManagement:
		t.Errorf("podManagementPolicy = %q", spec.PodManagementPolicy)
	case spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || spec.UpdateStrategy.RollingUpdate != nil:
		t.Errorf("updateStrategy = %+v, want OnDelete: the operator deletes pods itself", spec.UpdateStrategy)
	case !maps.Equal(spec.Selector.MatchLabels, c.RackSelectorLabels(0)):
		t.Errorf("selector = %v", spec.Selector.MatchLabels)
	case !containsAll(spec.Template.Labels, spec.Selector.MatchLabels):
		t.Errorf("template labels %v do not match the selector", spec.Template.Labels)
	case spec.Template.Annotations[v1alpha1.AnnotationConfigHash] != "cafe":
		t.Errorf("config hash = %q", spec.Template.Annotations[v1alpha1.AnnotationConfigHash])
	case spec.Template.Annotations[v1alpha1.AnnotationPodSpecHash] != PodSpecHash(spec.Template):
		t.Errorf("podspec hash annotation is not PodSpecHash of the template")
	}
}

// The image's entrypoint (as-tini-static -r SIGUSR1 -t SIGTERM) must stay PID 1, or a WarmRestart kills asd.
func TestAerospikeContainerKeepsTheEntrypoint(t *testing.T) {
	c := newCluster()
	ctr := aerospike(t, StatefulSet(c, c.RackPlan()[0], "h"))
	if ctr.Command != nil || ctr.Args != nil {
		t.Errorf("command %q args %q: the image's entrypoint must not be overridden", ctr.Command, ctr.Args)
	}
	if ctr.Image != "aerospike:ce-8.1.1.1" {
		t.Errorf("image = %q", ctr.Image)
	}
	want := map[string]int32{"service": 3000, "fabric": 3001, "heartbeat": 3002, "admin": 3003}
	got := map[string]int32{}
	for _, p := range ctr.Ports {
		got[p.Name] = p.ContainerPort
	}
	if !maps.Equal(got, want) {
		t.Errorf("ports = %v, want %v", got, want)
	}
	probe := ctr.ReadinessProbe
	if probe == nil || probe.TCPSocket == nil || probe.TCPSocket.Port != intstr.FromInt32(3000) {
		t.Errorf("readiness probe = %+v, want tcpSocket 3000", probe)
	}
	if ctr.LivenessProbe != nil {
		t.Error("no liveness probe: tini restarts asd, and a probe would kill slow cold starts")
	}
}

func TestConfigAndSMDMounts(t *testing.T) {
	c := newCluster(withRacks(v1alpha1.Rack{ID: 1}))
	sts := StatefulSet(c, c.RackPlan()[0], "h")
	mounts := aerospike(t, sts).VolumeMounts
	want := []corev1.VolumeMount{
		{Name: ConfigVolume, MountPath: "/etc/aerospike"},
		{Name: ConfigMapVolume, MountPath: "/etc/aerospike-configmap", ReadOnly: true}, // a directory, no subPath
		{Name: SMDVolume, MountPath: "/opt/aerospike/smd"},
	}
	if !equality.Semantic.DeepEqual(mounts, want) {
		t.Errorf("mounts = %+v, want %+v", mounts, want)
	}
	vols := sts.Spec.Template.Spec.Volumes
	if len(vols) != 3 || vols[0].ConfigMap == nil || vols[0].ConfigMap.Name != "aero-1-config" ||
		vols[1].EmptyDir == nil || vols[2].EmptyDir == nil {
		t.Errorf("volumes = %+v, want the rack's ConfigMap and two emptyDirs", vols)
	}
	// asd reads its own copy of the config, made from the pod's file in the ConfigMap by the init
	// container as it starts: the kubelet puts the pod's name in the command.
	inits := sts.Spec.Template.Spec.InitContainers
	podName := []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}
	if len(inits) != 2 || inits[0].Image != c.Spec.Image || !slices.Equal(inits[0].Command,
		[]string{"cp", "/etc/aerospike-configmap/$(POD_NAME).conf", "/etc/aerospike/aerospike.conf"}) ||
		!equality.Semantic.DeepEqual(inits[0].Env, podName) || !equality.Semantic.DeepEqual(inits[0].VolumeMounts, want[:2]) {
		t.Errorf("init containers = %+v, want one that copies the pod's config", inits)
	}
}

// The copy goes to the termination log, which the kubelet keeps in the pod's status (its tail). The pods
// of an older operator, without the report container, are not outdated by it; and a pod reports the config
// it copied only once its report container completed.
func TestTheConfigReportRestartsNoPod(t *testing.T) {
	c := newCluster()
	tmpl := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template
	inits := tmpl.Spec.InitContainers
	if len(inits) != 2 || inits[1].Name != ConfigReportContainer || inits[1].Image != c.Spec.Image ||
		!slices.Equal(inits[1].Command, []string{"cp", "/etc/aerospike/aerospike.conf", "/dev/termination-log"}) {
		t.Errorf("init containers = %+v, want the copy reported", inits)
	}
	older := tmpl.DeepCopy()
	older.Spec.InitContainers = older.Spec.InitContainers[:1]
	if PodSpecHash(*older) != PodSpecHash(tmpl) {
		t.Fatalf("the report container changes the pod spec hash: pods of an older operator would be restarted")
	}
	pod := &corev1.Pod{}
	if got := CopiedConfig(pod); got != "" {
		t.Fatalf("a pod that has not reported: %q", got)
	}
	file := config.PodFile("service {\n}\n", config.PodValues{})
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: ConfigReportContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: file}}}}
	if got := CopiedConfig(pod); got != config.Hash("service {\n}\n") {
		t.Fatalf("reported %q, want %q", got, config.Hash("service {\n}\n"))
	}
}

func TestStorageVolumes(t *testing.T) {
	fast := "fast"
	c := newCluster(withVolumes(
		volume("ssd", "/dev/xvdb", "100Gi", corev1.PersistentVolumeBlock),
		volume("data", "/opt/aerospike/data", "20Gi", ""),
		v1alpha1.VolumeSpec{Name: "meta", Path: "/opt/aerospike/smd", Size: resource.MustParse("1Gi"),
			StorageClassName: &fast, VolumeMode: corev1.PersistentVolumeFilesystem},
	))
	sts := StatefulSet(c, c.RackPlan()[0], "h")
	ctr := aerospike(t, sts)
	wantMounts := []corev1.VolumeMount{
		{Name: ConfigVolume, MountPath: "/etc/aerospike"},
		{Name: ConfigMapVolume, MountPath: "/etc/aerospike-configmap", ReadOnly: true},
		{Name: "data", MountPath: "/opt/aerospike/data"},
		{Name: "meta", MountPath: "/opt/aerospike/smd"}, // a volume at the SMD path replaces the emptyDir
	}
	if !equality.Semantic.DeepEqual(ctr.VolumeMounts, wantMounts) {
		t.Errorf("mounts = %+v, want %+v", ctr.VolumeMounts, wantMounts)
	}
	if want := []corev1.VolumeDevice{{Name: "ssd", DevicePath: "/dev/xvdb"}}; !slices.Equal(ctr.VolumeDevices, want) {
		t.Errorf("devices = %+v, want %+v", ctr.VolumeDevices, want)
	}
	if vols := sts.Spec.Template.Spec.Volumes; len(vols) != 3 || vols[2].Name != VolumePlanVolume {
		t.Errorf("volumes = %+v, want only the ConfigMap, the config copy and the volume plan", vols)
	}
	claims := sts.Spec.VolumeClaimTemplates
	names := make([]string, 0, len(claims))
	for _, pvc := range claims {
		names = append(names, pvc.Name)
	}
	if !slices.Equal(names, []string{"data", "meta", "ssd"}) {
		t.Fatalf("claim templates = %q, want sorted by name", names)
	}
	data, meta, ssd := claims[0].Spec, claims[1].Spec, claims[2].Spec
	switch {
	case *data.VolumeMode != corev1.PersistentVolumeFilesystem || *ssd.VolumeMode != corev1.PersistentVolumeBlock:
		t.Errorf("volume modes = %s, %s", *data.VolumeMode, *ssd.VolumeMode)
	case data.Resources.Requests.Storage().Cmp(resource.MustParse("20Gi")) != 0:
		t.Errorf("data size = %v", data.Resources.Requests)
	case data.StorageClassName != nil || ptr.Deref(meta.StorageClassName, "") != "fast":
		t.Errorf("storage classes = %v, %v", data.StorageClassName, meta.StorageClassName)
	case !slices.Equal(data.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}):
		t.Errorf("access modes = %v", data.AccessModes)
	}
}

// overridden is a one-rack cluster placed in a zone and on a node, with every pod override set.
func overridden() *v1alpha1.AerospikeCluster {
	return newCluster(
		withRacks(v1alpha1.Rack{ID: 1, Zone: "zone-a", NodeName: "node-7"}),
		withPod(v1alpha1.PodOverrides{
			Resources: &corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
			},
			Affinity:        &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}},
			Tolerations:     []corev1.Toleration{{Key: "dedicated", Value: "aerospike", Effect: corev1.TaintEffectNoSchedule}},
			NodeSelector:    map[string]string{"disk": "ssd", corev1.LabelTopologyZone: "zone-z"},
			SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
			Sidecars: []v1alpha1.Sidecar{
				{Container: corev1.Container{Name: "exporter", Image: "aerospike/aerospike-prometheus-exporter"}},
			},
			Labels: map[string]string{
				"team": "db", v1alpha1.LabelInstance: "hijack", v1alpha1.LabelRack: "9",
			},
			Annotations: map[string]string{
				"prometheus.io/scrape": "true", v1alpha1.AnnotationConfigHash: "forged",
			},
			ServiceAccountName: "aerospike",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "regcred"}},
		}),
	)
}

func TestPodOverrides(t *testing.T) {
	c := overridden()
	sts := StatefulSet(c, c.RackPlan()[0], "real")
	pod := sts.Spec.Template.Spec
	if ctr := aerospike(t, sts); !ctr.Resources.Limits.Memory().Equal(resource.MustParse("4Gi")) {
		t.Errorf("resources = %+v", ctr.Resources)
	}
	if len(pod.Containers) != 2 || pod.Containers[1].Name != "exporter" {
		t.Errorf("containers = %v, want the sidecar after the aerospike container", pod.Containers)
	}
	if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil || pod.Affinity.PodAntiAffinity != nil {
		t.Errorf("affinity = %+v, want the user's in place of the default", pod.Affinity)
	}
	wantSelector := map[string]string{"disk": "ssd", corev1.LabelTopologyZone: "zone-a", corev1.LabelHostname: "node-7"}
	if !maps.Equal(pod.NodeSelector, wantSelector) {
		t.Errorf("nodeSelector = %v, want %v (the rack's placement wins)", pod.NodeSelector, wantSelector)
	}
	if len(pod.Tolerations) != 1 || pod.SecurityContext.FSGroup == nil || pod.ServiceAccountName != "aerospike" ||
		len(pod.ImagePullSecrets) != 1 {
		t.Errorf("pod settings not carried over: %+v", pod)
	}
	// The builder copies what it takes from the spec.
	pod.Tolerations[0].Key = "changed"
	if c.Spec.PodSpec.Tolerations[0].Key != "dedicated" {
		t.Error("the StatefulSet shares memory with the cluster spec")
	}
}

func TestPodLabelsAndAnnotations(t *testing.T) {
	c := overridden()
	tmpl := StatefulSet(c, c.RackPlan()[0], "real").Spec.Template
	wantLabels := map[string]string{"team": "db", v1alpha1.LabelAppName: "aerospike", v1alpha1.LabelInstance: "aero",
		v1alpha1.LabelManagedBy: "acko", v1alpha1.LabelRack: "1"}
	if !maps.Equal(tmpl.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v: user labels added, the operator's never overridden", tmpl.Labels, wantLabels)
	}
	switch {
	case tmpl.Annotations["prometheus.io/scrape"] != "true":
		t.Errorf("user annotation missing: %v", tmpl.Annotations)
	case tmpl.Annotations[v1alpha1.AnnotationConfigHash] != "real":
		t.Errorf("config hash = %q, the operator's must win", tmpl.Annotations[v1alpha1.AnnotationConfigHash])
	case tmpl.Annotations[defaultContainerAnnotation] != v1alpha1.AerospikeContainerName:
		t.Errorf("default container = %q", tmpl.Annotations[defaultContainerAnnotation])
	}
}

func TestDefaultAntiAffinity(t *testing.T) {
	c := newCluster()
	aff := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil ||
		len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Fatalf("affinity = %+v, want one preferred anti-affinity term", aff)
	}
	term := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != corev1.LabelHostname || !maps.Equal(term.LabelSelector.MatchLabels, c.SelectorLabels()) {
		t.Errorf("anti-affinity term = %+v", term)
	}
}

func TestMultiRackStatefulSets(t *testing.T) {
	c := newCluster(withRacks(v1alpha1.Rack{ID: 20, Zone: "b"}, v1alpha1.Rack{ID: 10, Zone: "a"}), func(c *v1alpha1.AerospikeCluster) {
		c.Spec.Size = 5
	})
	want := []struct {
		name     string
		replicas int32
		rack     string
		zone     string
	}{{"aero-10", 3, "10", "a"}, {"aero-20", 2, "20", "b"}}
	for i, rack := range c.RackPlan() {
		sts := StatefulSet(c, rack, "h")
		w := want[i]
		if sts.Name != w.name || *sts.Spec.Replicas != w.replicas || sts.Spec.Selector.MatchLabels[v1alpha1.LabelRack] != w.rack ||
			sts.Spec.Template.Spec.NodeSelector[corev1.LabelTopologyZone] != w.zone {
			t.Errorf("rack %d: name %s replicas %d selector %v nodeSelector %v; want %+v", rack.ID, sts.Name,
				*sts.Spec.Replicas, sts.Spec.Selector.MatchLabels, sts.Spec.Template.Spec.NodeSelector, w)
		}
	}
}

// Scaling changes only replicas: the pod template, and so every pod's hashes, stay the same.
func TestScalingKeepsTheTemplate(t *testing.T) {
	c := newCluster()
	before := StatefulSet(c, c.RackPlan()[0], "h")
	c.Spec.Size = 5
	after := StatefulSet(c, c.RackPlan()[0], "h")
	if *after.Spec.Replicas != 5 {
		t.Errorf("replicas = %d", *after.Spec.Replicas)
	}
	if before.Spec.Template.Annotations[v1alpha1.AnnotationPodSpecHash] != after.Spec.Template.Annotations[v1alpha1.AnnotationPodSpecHash] {
		t.Error("the pod spec hash changed with the size")
	}
}
