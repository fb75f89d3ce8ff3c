package resources

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

func podspecSample(t *testing.T) *v1alpha1.AerospikeCluster {
	t.Helper()
	c, err := testcluster.SampleNamed("acko_v1alpha1_aerospikecluster_podspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func namesOf[T any](items []T, name func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, i := range items {
		out = append(out, name(i))
	}
	return out
}

// Every field of the pod sample reaches the pod template of each rack.
func TestPodSpecFieldsReachTheTemplate(t *testing.T) {
	c := podspecSample(t)
	o := c.Spec.PodSpec
	for _, rack := range c.RackPlan() {
		spec := StatefulSet(c, rack, "h").Spec.Template.Spec
		if spec.PriorityClassName != "aerospike-critical" || ptr.Deref(spec.TerminationGracePeriodSeconds, 0) != 120 ||
			spec.DNSPolicy != corev1.DNSClusterFirst || !equality.Semantic.DeepEqual(spec.DNSConfig, o.DNSConfig) ||
			spec.HostNetwork {
			t.Errorf("rack %d: priority %q grace %v dns %q %v hostNetwork %v", rack.ID, spec.PriorityClassName,
				spec.TerminationGracePeriodSeconds, spec.DNSPolicy, spec.DNSConfig, spec.HostNetwork)
		}
		inits := namesOf(spec.InitContainers, func(c corev1.Container) string { return c.Name })
		if !slices.Equal(inits, []string{ConfigInitContainer, ConfigReportContainer, "fetch-certs"}) {
			t.Errorf("rack %d: init containers %v: the user's run after the operator's", rack.ID, inits)
		}
		vols := namesOf(spec.Volumes, func(v corev1.Volume) string { return v.Name })
		for _, want := range []string{"certs", "shipper-config", "shared", "identity"} {
			if !slices.Contains(vols, want) {
				t.Errorf("rack %d: volume %s missing from %v", rack.ID, want, vols)
			}
		}
		for _, ctr := range append(slices.Clone(spec.InitContainers[:1]), spec.Containers[0]) {
			if !equality.Semantic.DeepEqual(ctr.SecurityContext, o.ContainerSecurityContext) {
				t.Errorf("rack %d: %s securityContext %v", rack.ID, ctr.Name, ctr.SecurityContext)
			}
		}
		if len(spec.TopologySpreadConstraints) != 1 || !maps.Equal(spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels,
			c.SelectorLabels()) {
			t.Errorf("rack %d: topology spread %v: without a selector it counts the cluster's pods", rack.ID,
				spec.TopologySpreadConstraints)
		}
	}
}

// The rack's placement is merged over the cluster's: node selector keys and tolerations added, each part
// of the affinity it sets replacing the cluster's; a rack without any keeps the cluster's.
func TestRackPlacementMergedOverTheCluster(t *testing.T) {
	c := podspecSample(t)
	c.Spec.PodSpec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: c.SelectorLabels()}, TopologyKey: corev1.LabelHostname,
		}},
	}}
	c.Spec.RackConfig.Racks[1].TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
		{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule},
		{MaxSkew: 1, TopologyKey: "example.com/rack", WhenUnsatisfiable: corev1.ScheduleAnyway},
	}
	plan := c.RackPlan()
	one := StatefulSet(c, plan[0], "h").Spec.Template.Spec
	two := StatefulSet(c, plan[1], "h").Spec.Template.Spec

	if want := map[string]string{"kubernetes.io/os": "linux", corev1.LabelTopologyZone: "zone-a"}; !maps.Equal(one.NodeSelector, want) {
		t.Errorf("rack 1 nodeSelector %v, want %v", one.NodeSelector, want)
	}
	if want := map[string]string{"kubernetes.io/os": "linux", "disktype": "nvme", corev1.LabelTopologyZone: "zone-b"}; !maps.Equal(two.NodeSelector, want) {
		t.Errorf("rack 2 nodeSelector %v, want %v", two.NodeSelector, want)
	}
	if got := namesOf(one.Tolerations, func(t corev1.Toleration) string { return t.Value }); !slices.Equal(got, []string{"aerospike"}) {
		t.Errorf("rack 1 tolerations %v", got)
	}
	if got := namesOf(two.Tolerations, func(t corev1.Toleration) string { return t.Value }); !slices.Equal(got, []string{"aerospike", "aerospike-nvme"}) {
		t.Errorf("rack 2 tolerations %v: the cluster's, then the rack's", got)
	}
	if one.Affinity.NodeAffinity != nil || !equality.Semantic.DeepEqual(one.Affinity, c.Spec.PodSpec.Affinity) {
		t.Errorf("rack 1 affinity %v: the cluster's", one.Affinity)
	}
	if !equality.Semantic.DeepEqual(two.Affinity.NodeAffinity, c.Spec.RackConfig.Racks[1].Affinity.Affinity.NodeAffinity) ||
		!equality.Semantic.DeepEqual(two.Affinity.PodAntiAffinity, c.Spec.PodSpec.Affinity.PodAntiAffinity) {
		t.Errorf("rack 2 affinity %v: the rack's node affinity with the cluster's anti-affinity", two.Affinity)
	}
	spread := map[string]int32{}
	for _, s := range two.TopologySpreadConstraints {
		spread[s.TopologyKey+"/"+string(s.WhenUnsatisfiable)] = s.MaxSkew
	}
	if want := map[string]int32{"kubernetes.io/hostname/DoNotSchedule": 2, "example.com/rack/ScheduleAnyway": 1}; !maps.Equal(spread, want) {
		t.Errorf("rack 2 topology spread %v, want %v: the rack's replaces the cluster's of the same key", spread, want)
	}
}

// Host networking keeps the pods resolving their peers through the cluster's DNS.
func TestHostNetworkResolvesThroughTheClusterDNS(t *testing.T) {
	c := newCluster(testcluster.WithPod(v1alpha1.PodOverrides{HostNetwork: true}))
	spec := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v dnsPolicy %q", spec.HostNetwork, spec.DNSPolicy)
	}
}

// Each pod field is a pod spec change (the pods roll); the Services' labels and annotations are not.
func TestEachPodFieldRollsThePods(t *testing.T) {
	changes := map[string]func(*v1alpha1.PodOverrides){
		"initContainers": func(o *v1alpha1.PodOverrides) {
			o.InitContainers = []v1alpha1.Sidecar{{Container: corev1.Container{Name: "x", Image: "busybox"}}}
		},
		"topologySpreadConstraints": func(o *v1alpha1.PodOverrides) {
			o.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "k", WhenUnsatisfiable: corev1.DoNotSchedule}}
		},
		"priorityClassName": func(o *v1alpha1.PodOverrides) { o.PriorityClassName = "p" },
		"containerSecurityContext": func(o *v1alpha1.PodOverrides) {
			o.ContainerSecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
		},
		"terminationGracePeriodSeconds": func(o *v1alpha1.PodOverrides) { o.TerminationGracePeriodSeconds = ptr.To[int64](5) },
		"dnsPolicy":                     func(o *v1alpha1.PodOverrides) { o.DNSPolicy = corev1.DNSDefault },
		"dnsConfig":                     func(o *v1alpha1.PodOverrides) { o.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"example.com"}} },
		"hostNetwork":                   func(o *v1alpha1.PodOverrides) { o.HostNetwork = true },
		"volumes": func(o *v1alpha1.PodOverrides) {
			o.Volumes = []v1alpha1.PodVolume{{Volume: corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}
		},
		"labels":      func(o *v1alpha1.PodOverrides) { o.Labels = map[string]string{"a": "b"} },
		"annotations": func(o *v1alpha1.PodOverrides) { o.Annotations = map[string]string{"a": "b"} },
	}
	base := newCluster()
	hash := PodSpecHash(StatefulSet(base, base.RackPlan()[0], "h").Spec.Template)
	for field, change := range changes {
		c := newCluster()
		c.Spec.PodSpec = &v1alpha1.PodOverrides{}
		change(c.Spec.PodSpec)
		if PodSpecHash(StatefulSet(c, c.RackPlan()[0], "h").Spec.Template) == hash {
			t.Errorf("%s: the pod spec hash did not change, so the pods would not roll", field)
		}
	}
	c := newCluster(testcluster.WithPod(v1alpha1.PodOverrides{
		ServiceLabels: map[string]string{"a": "b"}, ServiceAnnotations: map[string]string{"a": "b"}}))
	if PodSpecHash(StatefulSet(c, c.RackPlan()[0], "h").Spec.Template) != hash {
		t.Error("service labels and annotations must not roll the pods: the Services take them in place")
	}
}

// The Services carry the user's labels (the operator's win) and annotations.
func TestServiceLabelsAndAnnotations(t *testing.T) {
	c := podspecSample(t)
	c.Spec.PodSpec.ServiceLabels[v1alpha1.LabelPodService] = "spoofed"
	c.Spec.PodSpec.ServiceLabels["app.kubernetes.io/instance"] = "other"
	for _, svc := range []*corev1.Service{HeadlessService(c), ClientService(c)} {
		if svc.Labels["team"] != "storage" || svc.Annotations["example.com/owner"] != "storage-team" {
			t.Errorf("%s: labels %v annotations %v", svc.Name, svc.Labels, svc.Annotations)
		}
		if !containsAll(svc.Labels, c.SelectorLabels()) {
			t.Errorf("%s: labels %v lost the operator's %v", svc.Name, svc.Labels, c.SelectorLabels())
		}
	}
	existing := ClientService(newCluster())
	if !NeedsUpdate(existing, ClientService(c)) {
		t.Error("a Service without the user's labels and annotations must be updated")
	}
	ApplyOwnedFields(existing, ClientService(c))
	if existing.Annotations["example.com/owner"] != "storage-team" || existing.Labels["team"] != "storage" {
		t.Errorf("updated Service %v %v", existing.Labels, existing.Annotations)
	}
}
