package resources

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// PrepareVolumesContainer is the init container that prepares each storage volume of a new claim
// (spec.storage.volumes initMethod) before asd first runs on it. It runs before ConfigInitContainer,
// with the Aerospike image's shell and coreutils, and waits for the pod's AnnotationVolumePlan.
const PrepareVolumesContainer = "prepare-volumes"

// VolumePlanVolume projects the pod's AnnotationVolumePlan (the downward API) into the
// prepare-volumes container at volumePlanDir: the kubelet refreshes it when the annotation is set.
const VolumePlanVolume = "acko-volume-plan"

const (
	volumePlanDir  = "/etc/acko/volume-plan"
	volumePlanFile = "plan"
	// planWaitSeconds bounds the wait for the plan; the kubelet then runs the container again.
	planWaitSeconds = 600
)

// prepareVolumesScript runs as `sh -c SCRIPT prepare-volumes PLAN MARKS NAME PATH...`. PLAN is the
// projected annotation ("name=Method:claimUID ..."), MARKS the pod's config emptyDir: a volume done in
// this pod is marked there, so that a rerun of the init container (the pod's sandbox restarted before
// the operator recorded the claim) never prepares it a second time. dd on a whole device ends with
// "No space left on device", which is its success.
const prepareVolumesScript = `set -u
plan=$1 marks=$2
shift 2
waited=0
until [ -s "$plan" ]; do
  if [ "$waited" -ge ` + "%d" + ` ]; then
    echo "no volume plan from the operator after $waited s (pod annotation ` + v1alpha1.AnnotationVolumePlan + `)" >&2
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done
entries=$(cat "$plan")
while [ $# -ge 2 ]; do
  name=$1 dir=$2
  shift 2
  entry=""
  for e in $entries; do
    case $e in "$name="*) entry=${e#*=} ;; esac
  done
  if [ -z "$entry" ]; then
    echo "volume $name: not in the plan" >&2
    exit 1
  fi
  method=${entry%%:*}
  if [ -e "$marks/.prepared-$name" ]; then
    echo "volume $name: prepared already in this pod"
    continue
  fi
  case $method in
  None | InUse) ;;
  DeleteFiles) rm -rf -- "$dir"/* "$dir"/.[!.]* "$dir"/..?* || exit 1 ;;
  HeaderCleanup) dd if=/dev/zero of="$dir" bs=1M count=8 conv=notrunc,fsync status=none || exit 1 ;;
  Zero)
    out=$(dd if=/dev/zero of="$dir" bs=1M conv=notrunc,fsync status=none 2>&1)
    case $out in *"No space left on device"*) ;; *) echo "volume $name: $out" >&2; exit 1 ;; esac
    ;;
  *)
    echo "volume $name: unknown method $method" >&2
    exit 1
    ;;
  esac
  touch "$marks/.prepared-$name" || exit 1
  echo "volume $name ($dir): $method"
done
`

// InitMethod is the volume's init method with the default of its mode: DeleteFiles for Filesystem,
// HeaderCleanup for Block. Both make a fresh cloud volume and one that held other data start clean.
func InitMethod(v v1alpha1.VolumeSpec) v1alpha1.VolumeInitMethod {
	switch {
	case v.InitMethod != "":
		return v.InitMethod
	case VolumeMode(v) == corev1.PersistentVolumeBlock:
		return v1alpha1.VolumeInitHeaderCleanup
	default:
		return v1alpha1.VolumeInitDeleteFiles
	}
}

// PrepareVolumesCommand is the prepare-volumes container's command for the volumes (sorted by name).
// Only names and paths are in it, not the methods: changing a volume's method changes no pod.
func PrepareVolumesCommand(vols []v1alpha1.VolumeSpec) []string {
	cmd := make([]string, 0, 6+2*len(vols))
	cmd = append(cmd, "sh", "-c", fmt.Sprintf(prepareVolumesScript, planWaitSeconds), PrepareVolumesContainer,
		path.Join(volumePlanDir, volumePlanFile), config.ConfigDir)
	for _, v := range vols {
		cmd = append(cmd, v.Name, v.Path)
	}
	return cmd
}

// prepareVolumesContainer is nil without storage volumes.
func prepareVolumesContainer(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides) *corev1.Container {
	vols := StorageVolumes(c)
	if len(vols) == 0 {
		return nil
	}
	ctr := &corev1.Container{
		Name:    PrepareVolumesContainer,
		Image:   c.Spec.Image,
		Command: PrepareVolumesCommand(vols),
		VolumeMounts: []corev1.VolumeMount{
			{Name: ConfigVolume, MountPath: config.ConfigDir},
			{Name: VolumePlanVolume, MountPath: volumePlanDir, ReadOnly: true},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	addStorageMounts(ctr, vols)
	ctr.SecurityContext = securityContext(o)
	if o.Resources != nil {
		ctr.Resources = *o.Resources
	}
	return ctr
}

// addStorageMounts mounts Filesystem volumes and attaches Block volumes at their paths.
func addStorageMounts(ctr *corev1.Container, vols []v1alpha1.VolumeSpec) {
	for _, v := range vols {
		if VolumeMode(v) == corev1.PersistentVolumeBlock {
			ctr.VolumeDevices = append(ctr.VolumeDevices, corev1.VolumeDevice{Name: v.Name, DevicePath: v.Path})
		} else {
			ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: v.Path})
		}
	}
}

// volumePlanVolume projects the plan annotation (an empty file until it is set).
func volumePlanVolume() corev1.Volume {
	return corev1.Volume{Name: VolumePlanVolume, VolumeSource: corev1.VolumeSource{
		DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
			Path: volumePlanFile,
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1",
				FieldPath: "metadata.annotations['" + v1alpha1.AnnotationVolumePlan + "']"},
		}}},
	}}
}

// ClaimName is the PersistentVolumeClaim the StatefulSet controller creates for a pod's volume.
func ClaimName(volume, pod string) string { return volume + "-" + pod }

// PlannedVolume is one entry of a pod's volume plan.
type PlannedVolume struct {
	Name     string
	Method   v1alpha1.VolumeInitMethod
	ClaimUID types.UID
}

// FormatVolumePlan is the AnnotationVolumePlan value of the entries.
func FormatVolumePlan(plan []PlannedVolume) string {
	parts := make([]string, 0, len(plan))
	for _, p := range plan {
		parts = append(parts, p.Name+"="+string(p.Method)+":"+string(p.ClaimUID))
	}
	return strings.Join(parts, " ")
}

// ParseVolumePlan reads an AnnotationVolumePlan value.
func ParseVolumePlan(s string) ([]PlannedVolume, error) {
	var plan []PlannedVolume
	for _, f := range strings.Fields(s) {
		name, rest, ok1 := strings.Cut(f, "=")
		method, uid, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || name == "" || method == "" || uid == "" {
			return nil, fmt.Errorf("volume plan entry %q is not name=Method:claimUID", f)
		}
		plan = append(plan, PlannedVolume{Name: name, Method: v1alpha1.VolumeInitMethod(method), ClaimUID: types.UID(uid)})
	}
	return plan, nil
}

// PreparesVolumes reports whether the pod waits for a volume plan (its template has the container).
func PreparesVolumes(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool {
		return c.Name == PrepareVolumesContainer
	})
}

// VolumesPrepared reports whether the pod's prepare-volumes container has completed: its status says
// so, or the Aerospike container has started (init containers all completed before it could).
func VolumesPrepared(pod *corev1.Pod) bool {
	if s := containerStatus(pod.Status.InitContainerStatuses, PrepareVolumesContainer); s != nil &&
		s.State.Terminated != nil && s.State.Terminated.ExitCode == 0 {
		return true
	}
	return AerospikeStarted(pod)
}

// AerospikeStarted reports whether the pod's Aerospike container has ever started.
func AerospikeStarted(pod *corev1.Pod) bool {
	s := containerStatus(pod.Status.ContainerStatuses, v1alpha1.AerospikeContainerName)
	return s != nil && (s.State.Running != nil || s.State.Terminated != nil || s.RestartCount > 0 ||
		s.LastTerminationState.Terminated != nil)
}

// VolumeSizes is the AnnotationVolumeSizes value the spec asks for: "name=size,..." by name.
func VolumeSizes(c *v1alpha1.AerospikeCluster) string {
	vols := StorageVolumes(c)
	parts := make([]string, 0, len(vols))
	for _, v := range vols {
		parts = append(parts, v.Name+"="+v.Size.String())
	}
	return strings.Join(parts, ",")
}

// ParseVolumeSizes reads an AnnotationVolumeSizes value (volume → size); an entry that does not parse
// is left out, as if the size were unknown.
func ParseVolumeSizes(s string) map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	for _, part := range strings.Split(s, ",") {
		name, size, ok := strings.Cut(part, "=")
		if q, err := resource.ParseQuantity(size); ok && err == nil {
			out[name] = q
		}
	}
	return out
}
