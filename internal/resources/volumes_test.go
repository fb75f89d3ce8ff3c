package resources

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/acko-io/acko/api/v1alpha1"
)

var (
	dataDevice = v1alpha1.VolumeSpec{Name: "data", Path: "/dev/xvdb", Size: resource.MustParse("10Gi"),
		VolumeMode: corev1.PersistentVolumeBlock}
	workDir = v1alpha1.VolumeSpec{Name: "work", Path: "/opt/aerospike", Size: resource.MustParse("1Gi")}
)

// The prepare-volumes container runs first, mounts every storage volume as the Aerospike container
// does, and sees the plan annotation; without storage there is neither container nor plan volume.
func TestPrepareVolumesContainer(t *testing.T) {
	c := newCluster(withVolumes(workDir, dataDevice))
	spec := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template.Spec
	if len(spec.InitContainers) != 3 || spec.InitContainers[0].Name != PrepareVolumesContainer ||
		spec.InitContainers[1].Name != ConfigInitContainer || spec.InitContainers[2].Name != ConfigReportContainer {
		t.Fatalf("init containers = %v, want prepare-volumes, copy-config, then report-config", names(spec.InitContainers))
	}
	prep, asd := spec.InitContainers[0], spec.Containers[0]
	if prep.Image != c.Spec.Image {
		t.Errorf("image %q, want the Aerospike image %q", prep.Image, c.Spec.Image)
	}
	if !slices.Equal(prep.VolumeDevices, asd.VolumeDevices) {
		t.Errorf("devices %v, want the Aerospike container's %v", prep.VolumeDevices, asd.VolumeDevices)
	}
	if !slices.ContainsFunc(prep.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "work" && m.MountPath == "/opt/aerospike"
	}) {
		t.Errorf("mounts %v lack the work volume", prep.VolumeMounts)
	}
	want := []string{"data", "/dev/xvdb", "work", "/opt/aerospike"}
	if got := prep.Command[len(prep.Command)-4:]; !slices.Equal(got, want) {
		t.Errorf("command ends %q, want the volumes by name %q", got, want)
	}
	if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == VolumePlanVolume && v.DownwardAPI != nil &&
			strings.Contains(v.DownwardAPI.Items[0].FieldRef.FieldPath, v1alpha1.AnnotationVolumePlan)
	}) {
		t.Errorf("no downward API volume of the plan annotation in %v", spec.Volumes)
	}

	plain := newCluster()
	spec = StatefulSet(plain, plain.RackPlan()[0], "h").Spec.Template.Spec
	if slices.Contains(names(spec.InitContainers), PrepareVolumesContainer) || slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == VolumePlanVolume }) {
		t.Errorf("without storage: init containers %v, volumes %v", names(spec.InitContainers), spec.Volumes)
	}
}

// A volume's method is not in the template: changing it restarts no pod.
func TestInitMethodChangesNoPod(t *testing.T) {
	a := newCluster(withVolumes(dataDevice))
	zero := dataDevice
	zero.InitMethod = v1alpha1.VolumeInitZero
	b := newCluster(withVolumes(zero))
	if PodSpecHash(StatefulSet(a, a.RackPlan()[0], "h").Spec.Template) != PodSpecHash(StatefulSet(b, b.RackPlan()[0], "h").Spec.Template) {
		t.Error("the pod template depends on initMethod")
	}
}

func TestInitMethodDefaults(t *testing.T) {
	for _, tc := range []struct {
		v    v1alpha1.VolumeSpec
		want v1alpha1.VolumeInitMethod
	}{
		{dataDevice, v1alpha1.VolumeInitHeaderCleanup},
		{workDir, v1alpha1.VolumeInitDeleteFiles},
		{v1alpha1.VolumeSpec{Name: "x", InitMethod: v1alpha1.VolumeInitNone}, v1alpha1.VolumeInitNone},
	} {
		if got := InitMethod(tc.v); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.v.Name, got, tc.want)
		}
	}
}

func TestVolumePlanRoundTrip(t *testing.T) {
	plan := []PlannedVolume{{"data", v1alpha1.VolumeInitHeaderCleanup, "u-1"}, {"work", v1alpha1.VolumeInitNone, "u-2"}}
	s := FormatVolumePlan(plan)
	if s != "data=HeaderCleanup:u-1 work=None:u-2" {
		t.Errorf("formatted %q", s)
	}
	got, err := ParseVolumePlan(s)
	if err != nil || !slices.Equal(got, plan) {
		t.Errorf("parsed %v, %v", got, err)
	}
	if _, err := ParseVolumePlan("data=HeaderCleanup"); err == nil {
		t.Error("an entry without a claim UID parsed")
	}
}

// prepareBed is a pod's volumes on this machine: a filesystem volume with files, a "device" file
// whose first bytes are not zero, the config emptyDir for the marks, and the plan file.
type prepareBed struct {
	dir, fs, dev, marks, plan string
}

func newPrepareBed(t *testing.T) prepareBed {
	t.Helper()
	d := t.TempDir()
	b := prepareBed{dir: d, fs: filepath.Join(d, "work"), dev: filepath.Join(d, "dev"), marks: filepath.Join(d, "etc"),
		plan: filepath.Join(d, "plan")}
	for _, p := range []string{b.fs, b.marks, filepath.Join(b.fs, "sub")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a.dat", ".hidden", "sub/b.dat"} {
		if err := os.WriteFile(filepath.Join(b.fs, f), []byte("old records"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(b.dev, bytes.Repeat([]byte{0xAE}, 9<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs the container's script as the kubelet would, with the bed's paths.
func (b prepareBed) run(t *testing.T, plan string, vols ...string) (string, error) {
	t.Helper()
	if err := os.WriteFile(b.plan, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := PrepareVolumesCommand(nil)
	args := append([]string{cmd[1], cmd[2], cmd[3], b.plan, b.marks}, vols...)
	out, err := exec.Command(cmd[0], args...).CombinedOutput()
	return string(out), err
}

func (b prepareBed) fsEntries(t *testing.T) []string {
	entries, err := os.ReadDir(b.fs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// The script itself, run by sh: DeleteFiles empties a filesystem (hidden files too), HeaderCleanup
// zeroes the first 8 MiB of a device and nothing after, and a volume done in this pod is never done
// again when the init container runs a second time.
func TestPrepareVolumesScript(t *testing.T) {
	b := newPrepareBed(t)
	out, err := b.run(t, "work=DeleteFiles:u1 data=HeaderCleanup:u2", "data", b.dev, "work", b.fs)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if left := b.fsEntries(t); len(left) != 0 {
		t.Errorf("files left after DeleteFiles: %v", left)
	}
	dev, _ := os.ReadFile(b.dev)
	if len(dev) != 9<<20 || !bytes.Equal(dev[:8<<20], make([]byte, 8<<20)) || dev[8<<20] != 0xAE {
		t.Errorf("device: size %d, first 8 MiB zero %v, byte after %x", len(dev),
			bytes.Equal(dev[:8<<20], make([]byte, 8<<20)), dev[8<<20])
	}

	// asd has written since; the init container runs again in the same pod.
	if err := os.WriteFile(filepath.Join(b.fs, "new.dat"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := b.run(t, "work=DeleteFiles:u1 data=HeaderCleanup:u2", "data", b.dev, "work", b.fs); err != nil {
		t.Fatalf("rerun: %v: %s", err, out)
	}
	if left := b.fsEntries(t); !slices.Equal(left, []string{"new.dat"}) {
		t.Errorf("a rerun prepared the volume again: files %v", left)
	}
}

func TestPrepareVolumesScriptNone(t *testing.T) {
	b := newPrepareBed(t)
	if out, err := b.run(t, "work=None:u1", "work", b.fs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if left := b.fsEntries(t); len(left) != 3 {
		t.Errorf("None changed the volume: %v", left)
	}
}

// Zero writes until the device is full: dd's "No space left on device" is success (/dev/full is a
// device that is always full).
func TestPrepareVolumesScriptZero(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	b := newPrepareBed(t)
	if out, err := b.run(t, "data=Zero:u1", "data", "/dev/full"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// A volume the plan does not name, or an unknown method, fails the container with the reason.
func TestPrepareVolumesScriptRefuses(t *testing.T) {
	b := newPrepareBed(t)
	for plan, want := range map[string]string{
		"data=None:u1":  "volume work: not in the plan",
		"work=Shred:u1": "volume work: unknown method Shred",
	} {
		out, err := b.run(t, plan, "work", b.fs)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("plan %q: %v, %q; want failure %q", plan, err, out, want)
		}
	}
	if len(b.fsEntries(t)) != 3 {
		t.Error("a refused plan changed the volume")
	}
}

func names(cs []corev1.Container) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestVolumeSizes(t *testing.T) {
	c := newCluster(withVolumes(workDir, dataDevice))
	s := VolumeSizes(c)
	if s != "data=10Gi,work=1Gi" {
		t.Fatalf("VolumeSizes = %q", s)
	}
	got := ParseVolumeSizes(s + ",bad=x,junk")
	data, work := got["data"], got["work"]
	if len(got) != 2 || data.String() != "10Gi" || work.String() != "1Gi" {
		t.Errorf("parsed %v: want data and work only", got)
	}
	if len(ParseVolumeSizes("")) != 0 {
		t.Error("an empty annotation has sizes")
	}
}
