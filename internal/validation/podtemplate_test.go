package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

func container(name string, mounts ...string) v1alpha1.Sidecar {
	ctr := corev1.Container{Name: name, Image: "busybox"}
	for _, m := range mounts {
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: m, MountPath: "/" + m})
	}
	return v1alpha1.Sidecar{Container: ctr}
}

func emptyDir(name string) v1alpha1.PodVolume {
	return v1alpha1.PodVolume{Volume: corev1.Volume{Name: name,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
}

// Each refusal names the field and says why, in Kubernetes' words where Kubernetes would have refused
// the pods, naming the operator's container or volume on a collision.
func TestPodTemplateRefusals(t *testing.T) {
	hostPort := func(c *v1alpha1.AerospikeCluster) {
		c.Spec.ExternalAccess = &v1alpha1.ExternalAccess{Type: v1alpha1.ExternalHostPort}
	}
	for _, tc := range []struct {
		name string
		pod  v1alpha1.PodOverrides
		opts []testcluster.Option
		want string
	}{
		{"init container named like ours", v1alpha1.PodOverrides{InitContainers: []v1alpha1.Sidecar{container("copy-config")}}, nil,
			`spec.podSpec.initContainers[0].name: Duplicate value: "copy-config: is the name of the operator's init container that copies aerospike.conf"`},
		{"init container named like the Aerospike container", v1alpha1.PodOverrides{InitContainers: []v1alpha1.Sidecar{container("aerospike-server")}}, nil,
			`spec.podSpec.initContainers[0].name: Duplicate value: "aerospike-server: is the name of the Aerospike container"`},
		{"init container named like a sidecar", v1alpha1.PodOverrides{Sidecars: []v1alpha1.Sidecar{container("x")},
			InitContainers: []v1alpha1.Sidecar{container("x")}}, nil,
			`spec.podSpec.initContainers[0].name: Duplicate value: "x: is the name of spec.podSpec.sidecars[0]"`},
		{"init container name not a DNS label", v1alpha1.PodOverrides{InitContainers: []v1alpha1.Sidecar{container("Init_1")}}, nil,
			`spec.podSpec.initContainers[0].name: Invalid value: "Init_1": a lowercase RFC 1123 label must consist of`},
		{"volume named like ours", v1alpha1.PodOverrides{Volumes: []v1alpha1.PodVolume{emptyDir("aerospike-config")}}, nil,
			`spec.podSpec.volumes[0].name: Duplicate value: "aerospike-config: is the name of the operator's volume of the pod's aerospike.conf"`},
		{"volume named like a storage volume", v1alpha1.PodOverrides{Volumes: []v1alpha1.PodVolume{emptyDir("data")}},
			[]testcluster.Option{testcluster.WithVolumes(testcluster.Volume("data", "/opt/aerospike/data", "1Gi", ""))},
			`spec.podSpec.volumes[0].name: Duplicate value: "data: is the name of spec.storage.volumes[0]"`},
		{"volume twice", v1alpha1.PodOverrides{Volumes: []v1alpha1.PodVolume{emptyDir("v"), emptyDir("v")}}, nil,
			`spec.podSpec.volumes[1].name: Duplicate value: "v"`},
		{"volume without a source", v1alpha1.PodOverrides{Volumes: []v1alpha1.PodVolume{{Volume: corev1.Volume{Name: "v"}}}}, nil,
			`spec.podSpec.volumes[0]: Required value: must specify a volume type`},
		{"volume with two sources", v1alpha1.PodOverrides{Volumes: []v1alpha1.PodVolume{{Volume: corev1.Volume{Name: "v",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}}}, nil,
			`spec.podSpec.volumes[0]: Forbidden: may not specify more than 1 volume type`},
		{"volume of another kind", v1alpha1.PodOverrides{Volumes: []v1alpha1.PodVolume{{Volume: corev1.Volume{Name: "v",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}}}, nil,
			`spec.podSpec.volumes[0]: Invalid value: "": an extra volume is a secret, configMap, emptyDir or projected volume`},
		{"mount of a volume the pod lacks", v1alpha1.PodOverrides{Sidecars: []v1alpha1.Sidecar{container("s", "nope")}}, nil,
			`spec.podSpec.sidecars[0].volumeMounts[0].name: Not found: "nope"`},
		{"dnsPolicy None without dnsConfig", v1alpha1.PodOverrides{DNSPolicy: corev1.DNSNone}, nil,
			"spec.podSpec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
		{"four nameservers", v1alpha1.PodOverrides{DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}}}, nil,
			"must not have more than 3 nameservers"},
		{"maxSkew 0", v1alpha1.PodOverrides{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{TopologyKey: "k", WhenUnsatisfiable: corev1.DoNotSchedule}}}, nil,
			"spec.podSpec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"},
		{"two constraints of one key", v1alpha1.PodOverrides{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "k", WhenUnsatisfiable: corev1.DoNotSchedule}, {MaxSkew: 2, TopologyKey: "k", WhenUnsatisfiable: corev1.DoNotSchedule}}}, nil,
			`spec.podSpec.topologySpreadConstraints[1]: Duplicate value: "{k, DoNotSchedule}"`},
		{"priority class not a name", v1alpha1.PodOverrides{PriorityClassName: "High!"}, nil,
			`spec.podSpec.priorityClassName: Invalid value: "High!": a lowercase RFC 1123 subdomain`},
		{"label value too long", v1alpha1.PodOverrides{Labels: map[string]string{"a": strings.Repeat("x", 64)}}, nil,
			"spec.podSpec.labels: Invalid value: \"" + strings.Repeat("x", 64) + "\": must be no more than 63 bytes"},
		{"service annotation key", v1alpha1.PodOverrides{ServiceAnnotations: map[string]string{"a b": "c"}}, nil,
			`spec.podSpec.serviceAnnotations: Invalid value: "a b": name part must consist of`},
		{"hostNetwork with a HostPort external access", v1alpha1.PodOverrides{HostNetwork: true}, []testcluster.Option{hostPort},
			"spec.podSpec.hostNetwork: Invalid value: true: conflicts with spec.externalAccess type HostPort: with hostNetwork " +
				"asd's service port 3000 is already open on the node's address"},
		{"hostNetwork with a rack on one node", v1alpha1.PodOverrides{HostNetwork: true},
			[]testcluster.Option{testcluster.WithRacks(v1alpha1.Rack{ID: 1, NodeName: "n1"})},
			"spec.podSpec.hostNetwork: Invalid value: true: rack 1 places 3 pods on node n1, but with hostNetwork each pod " +
				"opens asd's ports (3000-3003) on its node: only one fits"},
		{"hostNetwork with a rack selecting one host", v1alpha1.PodOverrides{HostNetwork: true},
			[]testcluster.Option{testcluster.WithRacks(v1alpha1.Rack{ID: 1, NodeSelector: map[string]string{corev1.LabelHostname: "n2"}})},
			"rack 1 places 3 pods on node n2"},
		{"hostNetwork with a sidecar host port", v1alpha1.PodOverrides{HostNetwork: true, Sidecars: []v1alpha1.Sidecar{{Container: corev1.Container{
			Name: "s", Image: "i", Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 9090}}}}}}, nil,
			"spec.podSpec.sidecars[0].ports[0].hostPort: Invalid value: 9090: must match `containerPort` when `hostNetwork` is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testcluster.Build(append(tc.opts, testcluster.WithPod(tc.pod))...)
			got := errorStrings(ValidateSpec(c))
			if !strings.Contains(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestRackAndMonitoringRefusals(t *testing.T) {
	c := testcluster.Build(testcluster.WithRacks(v1alpha1.Rack{ID: 1,
		NodeSelector:              map[string]string{"bad key!": "v"},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule}},
	}))
	c.Spec.Monitoring = &v1alpha1.MonitoringSpec{Enabled: true,
		Env: []corev1.EnvVar{{Name: "1BAD"}},
		PodMonitor: &v1alpha1.PodMonitorSpec{Labels: map[string]string{"release": "kube prometheus"},
			Interval: "30s", ScrapeTimeout: "1m"}}
	got := errorStrings(ValidateSpec(c))
	for _, want := range []string{
		`spec.rackConfig.racks[0].nodeSelector: Invalid value: "bad key!": name part must consist of`,
		"spec.rackConfig.racks[0].topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
		`spec.monitoring.env[0].name: Invalid value: "1BAD": a valid environment variable name must consist of`,
		`spec.monitoring.podMonitor.labels: Invalid value: "kube prometheus"`,
		`spec.monitoring.podMonitor.scrapeTimeout: Invalid value: "1m": must not be longer than the interval (30s)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nmissing:\n%s", got, want)
		}
	}
}

// The sample with every pod field passes.
func TestPodSpecSampleIsValid(t *testing.T) {
	c, err := testcluster.SampleNamed("acko_v1alpha1_aerospikecluster_podspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if errs := ValidateSpec(c); len(errs) > 0 {
		t.Error(errs)
	}
}

func TestUnknownFieldsOfInitContainersVolumesAndRackAffinity(t *testing.T) {
	raw := []byte(`{"spec":{"podSpec":{"initContainers":[{"name":"i","imagee":"x"}],"volumes":[{"name":"v","emptyDirr":{}}]},
		"rackConfig":{"racks":[{"id":1,"affinity":{"nodeAfinity":{}}}]}}}`)
	got := errorStrings(SidecarUnknownFields(raw))
	for _, want := range []string{
		`spec.podSpec.initContainers[0]: Invalid value: "imagee": unknown field: an init container is a Kubernetes container`,
		`spec.podSpec.volumes[0]: Invalid value: "emptyDirr": unknown field: a volume is a Kubernetes volume`,
		`spec.rackConfig.racks[0].affinity: Invalid value: "nodeAfinity": unknown field: a rack's affinity is a Kubernetes affinity`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nmissing:\n%s", got, want)
		}
	}
}
