package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/testcluster"
)

func errorStrings(errs field.ErrorList) string {
	if agg := errs.ToAggregate(); agg != nil {
		return agg.Error()
	}
	return ""
}

func TestImmutableChanges(t *testing.T) {
	data := testcluster.Volume("data", "/opt/aerospike/data", "10Gi", "")
	ssd := testcluster.Volume("ssd", "/dev/xvdb", "100Gi", corev1.PersistentVolumeBlock)
	bigger := data
	bigger.Size = resource.MustParse("20Gi")
	moved := data
	moved.Path = "/data"
	classed := data
	classed.StorageClassName = new(string)
	*classed.StorageClassName = "fast"
	block := data
	block.VolumeMode = corev1.PersistentVolumeBlock
	explicitFS := data
	explicitFS.VolumeMode = corev1.PersistentVolumeFilesystem
	const recreateHint = ": create a new cluster and migrate the data"
	for _, tc := range []struct {
		name     string
		old, new *v1alpha1.AerospikeCluster
		want     string
	}{
		{"nothing", testcluster.Build(), testcluster.Build(), ""},
		{"size, image, config and pod spec may change", testcluster.Build(),
			testcluster.Build(func(c *v1alpha1.AerospikeCluster) { c.Spec.Size = 8; c.Spec.Image = "aerospike:ce-8.1.2.0" },
				testcluster.WithPod(v1alpha1.PodOverrides{Labels: map[string]string{"a": "b"}})), ""},
		{"racks may be added and removed", testcluster.Build(testcluster.WithRacks(v1alpha1.Rack{ID: 1})),
			testcluster.Build(testcluster.WithRacks(v1alpha1.Rack{ID: 2}, v1alpha1.Rack{ID: 3})), ""},
		{"volume order and path do not matter", testcluster.Build(testcluster.WithVolumes(data, ssd)),
			testcluster.Build(testcluster.WithVolumes(ssd, moved)), ""},
		{"the default volume mode is Filesystem", testcluster.Build(testcluster.WithVolumes(data)), testcluster.Build(testcluster.WithVolumes(explicitFS)), ""},
		{"single to multi rack", testcluster.Build(), testcluster.Build(testcluster.WithRacks(v1alpha1.Rack{ID: 1})),
			"spec.rackConfig: Forbidden: cannot switch between the single-rack and the multi-rack layout: " +
				"every pod would change its name; create a new cluster and migrate the data"},
		{"multi to single rack", testcluster.Build(testcluster.WithRacks(v1alpha1.Rack{ID: 1})), testcluster.Build(),
			"spec.rackConfig: Forbidden: cannot switch between the single-rack and the multi-rack layout: " +
				"every pod would change its name; create a new cluster and migrate the data"},
		{"volume added and removed", testcluster.Build(testcluster.WithVolumes(data)), testcluster.Build(testcluster.WithVolumes(ssd)),
			`spec.storage.volumes: Forbidden: storage volumes cannot change on an existing cluster ` +
				`(volume "ssd" added; volume "data" removed)` + recreateHint},
		{"a volume may grow (where its class allows: ExpansionRefused)", testcluster.Build(testcluster.WithVolumes(data)),
			testcluster.Build(testcluster.WithVolumes(bigger)), ""},
		{"a volume cannot shrink", testcluster.Build(testcluster.WithVolumes(bigger)), testcluster.Build(testcluster.WithVolumes(data)),
			`spec.storage.volumes: Forbidden: storage volumes cannot change on an existing cluster ` +
				`(volume "data" size 20Gi -> 10Gi: a volume cannot shrink)` + recreateHint},
		{"storage class", testcluster.Build(testcluster.WithVolumes(data)), testcluster.Build(testcluster.WithVolumes(classed)),
			`spec.storage.volumes: Forbidden: storage volumes cannot change on an existing cluster ` +
				`(volume "data" storageClassName "" -> "fast")` + recreateHint},
		{"volume mode", testcluster.Build(testcluster.WithVolumes(data)), testcluster.Build(testcluster.WithVolumes(block)),
			`spec.storage.volumes: Forbidden: storage volumes cannot change on an existing cluster ` +
				`(volume "data" volumeMode Filesystem -> Block)` + recreateHint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorStrings(immutableChanges(tc.old, tc.new)); got != tc.want {
				t.Errorf("ImmutableChanges =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestGrownVolumes(t *testing.T) {
	data := testcluster.Volume("data", "/opt/aerospike/data", "10Gi", "")
	ssd := testcluster.Volume("ssd", "/dev/xvdb", "100Gi", corev1.PersistentVolumeBlock)
	bigger, smaller := ssd, data
	bigger.Size, smaller.Size = resource.MustParse("200Gi"), resource.MustParse("5Gi")
	got := GrownVolumes(testcluster.Build(testcluster.WithVolumes(data, ssd)), testcluster.Build(testcluster.WithVolumes(smaller, bigger)))
	if len(got) != 1 || got[0].Name != "ssd" {
		t.Errorf("grown %v, want ssd only", got)
	}
}

func TestExpansionRefused(t *testing.T) {
	v := testcluster.Volume("data", "/opt/aerospike/data", "10Gi", "")
	class := func(allow *bool) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, AllowVolumeExpansion: allow}
	}
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		class *storagev1.StorageClass
		want  string
	}{
		{"fast", class(&yes), ""},
		{"fast", class(&no), `spec.storage.volumes[data].size: Forbidden: volume "data" cannot grow: StorageClass "fast" ` +
			`does not allow volume expansion (allowVolumeExpansion); create a new cluster and migrate the data`},
		{"fast", class(nil), `spec.storage.volumes[data].size: Forbidden: volume "data" cannot grow: StorageClass "fast" ` +
			`does not allow volume expansion (allowVolumeExpansion); create a new cluster and migrate the data`},
		{"gone", nil, `spec.storage.volumes[data].size: Forbidden: volume "data" cannot grow: StorageClass "gone" not found`},
		{"", nil, `spec.storage.volumes[data].size: Forbidden: volume "data" cannot grow: its claims use the default StorageClass and there is none`},
	} {
		got := ""
		if err := ExpansionRefused(v, tc.name, tc.class); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s %v:\n%s\nwant\n%s", tc.name, tc.class, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	sidecar := func(name, image string) v1alpha1.Sidecar {
		return v1alpha1.Sidecar{Container: corev1.Container{Name: name, Image: image}}
	}
	for _, tc := range []struct {
		name    string
		cluster *v1alpha1.AerospikeCluster
		want    string
	}{
		{"fine", testcluster.Build(
			testcluster.WithVolumes(testcluster.Volume("data", "/opt/aerospike/data", "1Gi", ""), testcluster.Volume("smd", "/opt/aerospike/smd", "1Gi", "")),
			testcluster.WithPod(v1alpha1.PodOverrides{Sidecars: []v1alpha1.Sidecar{sidecar("exporter", "exporter:1")}}),
		), ""},
		{"volumes", testcluster.Build(testcluster.WithVolumes(
			testcluster.Volume(resources.ConfigVolume, "/data", "1Gi", ""),
			testcluster.Volume("b", "/data/", "1Gi", ""),
			testcluster.Volume("c", "/etc/aerospike/extra", "1Gi", ""),
			testcluster.Volume("d", "/opt/aerospike/smd", "1Gi", corev1.PersistentVolumeBlock),
		)), `[spec.storage.volumes[0].name: Invalid value: "aerospike-config": is the name of a volume the operator adds, ` +
			`spec.storage.volumes[1].path: Duplicate value: "/data/", ` +
			`spec.storage.volumes[2].path: Invalid value: "/etc/aerospike/extra": the operator mounts aerospike.conf at /etc/aerospike and /etc/aerospike-configmap, ` +
			`spec.storage.volumes[3].path: Invalid value: "/opt/aerospike/smd": is where asd keeps its system metadata ` +
			`(<work-directory>/smd): it needs a Filesystem volume]`},
		{"init methods", testcluster.Build(testcluster.WithVolumes(
			v1alpha1.VolumeSpec{Name: "a", Path: "/dev/a", VolumeMode: corev1.PersistentVolumeBlock, InitMethod: v1alpha1.VolumeInitDeleteFiles},
			v1alpha1.VolumeSpec{Name: "b", Path: "/b", InitMethod: v1alpha1.VolumeInitHeaderCleanup},
			v1alpha1.VolumeSpec{Name: resources.VolumePlanVolume, Path: "/", InitMethod: v1alpha1.VolumeInitNone},
		)), `[spec.storage.volumes[0].initMethod: Invalid value: "DeleteFiles": DeleteFiles applies to Filesystem volumes; ` +
			`a Block volume takes HeaderCleanup, Zero or None, ` +
			`spec.storage.volumes[1].initMethod: Invalid value: "HeaderCleanup": HeaderCleanup applies to Block volumes; ` +
			`a Filesystem volume takes DeleteFiles or None, ` +
			`spec.storage.volumes[2].name: Invalid value: "acko-volume-plan": is the name of a volume the operator adds, ` +
			`spec.storage.volumes[2].path: Invalid value: "/": a volume cannot be mounted at /]`},
		{"sidecars", testcluster.Build(testcluster.WithPod(v1alpha1.PodOverrides{Sidecars: []v1alpha1.Sidecar{
			sidecar("aerospike-server", "x"), sidecar("", "x"), sidecar("a", ""), sidecar("a", "x"),
		}})), `[spec.podSpec.sidecars[0].name: Duplicate value: "aerospike-server", ` +
			`spec.podSpec.sidecars[1].name: Required value: every sidecar needs a name, ` +
			`spec.podSpec.sidecars[2].image: Required value: every sidecar needs an image, ` +
			`spec.podSpec.sidecars[3].name: Duplicate value: "a"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorStrings(validatePod(tc.cluster)); got != tc.want {
				t.Errorf("Validate =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestSidecarNamedLikeTheExporter(t *testing.T) {
	c := testcluster.Build(testcluster.WithPod(v1alpha1.PodOverrides{Sidecars: []v1alpha1.Sidecar{{Container: corev1.Container{
		Name: v1alpha1.ExporterContainerName, Image: "x"}}}}))
	c.Spec.Monitoring = &v1alpha1.MonitoringSpec{Enabled: true, Port: 9300}
	if errs := validatePod(c); len(errs) != 1 || errs[0].Type != "FieldValueDuplicate" {
		t.Errorf("a sidecar named like the exporter: %v", errs)
	}
}

// LayoutChange is the one rule for the webhook (old spec against new) and the reconciler (the
// StatefulSets that run against the spec).
func TestLayoutChange(t *testing.T) {
	const switched = "spec.rackConfig: Forbidden: cannot switch between the single-rack and the multi-rack layout: " +
		"every pod would change its name; create a new cluster and migrate the data"
	for _, tc := range []struct {
		was, is bool
		want    string
	}{{false, false, ""}, {true, true, ""}, {false, true, switched}, {true, false, switched}} {
		if got := errorStrings(LayoutChange(tc.was, tc.is)); got != tc.want {
			t.Errorf("LayoutChange(%v, %v) = %q, want %q", tc.was, tc.is, got, tc.want)
		}
	}
}
