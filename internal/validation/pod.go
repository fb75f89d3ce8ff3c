package validation

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
)

const recreate = "create a new cluster and migrate the data"

// immutableChanges reports the spec changes an existing cluster cannot take, each with what to do instead:
//   - storage volumes: they are the StatefulSets' volume claim templates, which Kubernetes never lets
//     change (a volume's path may change: it only lives in the pod template; a volume may grow, where
//     its StorageClass allows expansion, see ExpansionRefused: the operator resizes each claim and
//     replaces the StatefulSet without its pods);
//   - switching between the single-rack and the multi-rack layout: every pod and StatefulSet would be
//     renamed (<cluster>-<ordinal> against <cluster>-<rackID>-<ordinal>).
//
// StatefulSet selectors cannot change through the spec at all: they hold only the cluster name and the
// rack id, and a new rack id is a new StatefulSet. Adding and removing racks is allowed.
func immutableChanges(oldCluster, newCluster *v1alpha1.AerospikeCluster) field.ErrorList {
	errs := LayoutChange(oldCluster.MultiRack(), newCluster.MultiRack())
	if changes := volumeChanges(resources.StorageVolumes(oldCluster), resources.StorageVolumes(newCluster)); len(changes) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "storage", "volumes"), fmt.Sprintf(
			"storage volumes cannot change on an existing cluster (%s): %s", strings.Join(changes, "; "), recreate)))
	}
	return errs
}

// LayoutChange refuses a switch between the single-rack and the multi-rack layout (multiRack is the
// spec's, wasMultiRack the running cluster's). The webhook compares the old spec; the reconciler, which
// re-checks it because a webhook can be bypassed, compares the StatefulSets that run.
func LayoutChange(wasMultiRack, multiRack bool) field.ErrorList {
	if wasMultiRack == multiRack {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "rackConfig"),
		"cannot switch between the single-rack and the multi-rack layout: every pod would change its name; "+recreate)}
}

// volumeChanges describes how the claim templates of two sorted volume lists differ.
func volumeChanges(oldVols, newVols []v1alpha1.VolumeSpec) []string {
	var changes []string
	byName := map[string]v1alpha1.VolumeSpec{}
	for _, v := range oldVols {
		byName[v.Name] = v
	}
	for _, nv := range newVols {
		ov, existed := byName[nv.Name]
		delete(byName, nv.Name)
		switch {
		case !existed:
			changes = append(changes, fmt.Sprintf("volume %q added", nv.Name))
		case ov.Size.Cmp(nv.Size) > 0:
			changes = append(changes, fmt.Sprintf("volume %q size %s -> %s: a volume cannot shrink", nv.Name,
				ov.Size.String(), nv.Size.String()))
		case ptrString(ov.StorageClassName) != ptrString(nv.StorageClassName):
			changes = append(changes, fmt.Sprintf("volume %q storageClassName %q -> %q", nv.Name,
				ptrString(ov.StorageClassName), ptrString(nv.StorageClassName)))
		case resources.VolumeMode(ov) != resources.VolumeMode(nv):
			changes = append(changes, fmt.Sprintf("volume %q volumeMode %s -> %s", nv.Name,
				resources.VolumeMode(ov), resources.VolumeMode(nv)))
		}
	}
	for _, ov := range oldVols {
		if _, removed := byName[ov.Name]; removed {
			changes = append(changes, fmt.Sprintf("volume %q removed", ov.Name))
		}
	}
	return changes
}

// GrownVolumes are the volumes of the new spec that are larger than in the old one.
func GrownVolumes(oldCluster, newCluster *v1alpha1.AerospikeCluster) []v1alpha1.VolumeSpec {
	sizes := map[string]v1alpha1.VolumeSpec{}
	for _, v := range resources.StorageVolumes(oldCluster) {
		sizes[v.Name] = v
	}
	var out []v1alpha1.VolumeSpec
	for _, v := range resources.StorageVolumes(newCluster) {
		if o, ok := sizes[v.Name]; ok && o.Size.Cmp(v.Size) < 0 {
			out = append(out, v)
		}
	}
	return out
}

// ExpansionRefused refuses to grow a volume whose StorageClass (nil: none found under that name, ""
// for the default class) does not allow expansion: Kubernetes would refuse every claim's resize.
func ExpansionRefused(v v1alpha1.VolumeSpec, className string, class *storagev1.StorageClass) *field.Error {
	p := field.NewPath("spec", "storage", "volumes").Key(v.Name).Child("size")
	switch {
	case class == nil && className == "":
		return field.Forbidden(p, fmt.Sprintf("volume %q cannot grow: its claims use the default StorageClass and there is none",
			v.Name))
	case class == nil:
		return field.Forbidden(p, fmt.Sprintf("volume %q cannot grow: StorageClass %q not found", v.Name, className))
	case class.AllowVolumeExpansion == nil || !*class.AllowVolumeExpansion:
		return field.Forbidden(p, fmt.Sprintf("volume %q cannot grow: StorageClass %q does not allow volume expansion "+
			"(allowVolumeExpansion); %s", v.Name, class.Name, recreate))
	}
	return nil
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// validatePod reports pod settings the builders cannot turn into a pod the API server accepts: storage
// volumes named like the operator's own volumes or mounted over its config directory or twice at one
// path, and sidecars without a name or image or named like the Aerospike container.
func validatePod(c *v1alpha1.AerospikeCluster) field.ErrorList {
	return append(validateVolumes(c), validateSidecars(c)...)
}

func validateVolumes(c *v1alpha1.AerospikeCluster) field.ErrorList {
	if c.Spec.Storage == nil {
		return nil
	}
	var errs field.ErrorList
	smd := map[string]bool{}
	for _, r := range c.RackPlan() {
		smd[config.SMDPath(c, r)] = true
	}
	paths := map[string]bool{}
	for i, v := range c.Spec.Storage.Volumes {
		p := field.NewPath("spec", "storage", "volumes").Index(i)
		if v.Name == resources.ConfigVolume || v.Name == resources.ConfigMapVolume || v.Name == resources.SMDVolume ||
			v.Name == resources.VolumePlanVolume {
			errs = append(errs, field.Invalid(p.Child("name"), v.Name, "is the name of a volume the operator adds"))
		}
		errs = append(errs, validateInitMethod(p.Child("initMethod"), v)...)
		clean := path.Clean(v.Path)
		switch {
		case clean == "/":
			errs = append(errs, field.Invalid(p.Child("path"), v.Path, "a volume cannot be mounted at /"))
		case paths[clean]:
			errs = append(errs, field.Duplicate(p.Child("path"), v.Path))
		case under(clean, config.ConfigDir) || under(clean, config.ConfigMapDir):
			errs = append(errs, field.Invalid(p.Child("path"), v.Path,
				"the operator mounts aerospike.conf at "+config.ConfigDir+" and "+config.ConfigMapDir))
		case resources.VolumeMode(v) == corev1.PersistentVolumeBlock && smd[clean]:
			errs = append(errs, field.Invalid(p.Child("path"), v.Path,
				"is where asd keeps its system metadata (<work-directory>/smd): it needs a Filesystem volume"))
		}
		paths[clean] = true
	}
	return errs
}

// validateInitMethod refuses a method the volume's mode cannot take: files are deleted from a
// filesystem, a device's bytes are zeroed.
func validateInitMethod(p *field.Path, v v1alpha1.VolumeSpec) field.ErrorList {
	block := resources.VolumeMode(v) == corev1.PersistentVolumeBlock
	switch v.InitMethod {
	case v1alpha1.VolumeInitDeleteFiles:
		if block {
			return field.ErrorList{field.Invalid(p, v.InitMethod, "DeleteFiles applies to Filesystem volumes; "+
				"a Block volume takes HeaderCleanup, Zero or None")}
		}
	case v1alpha1.VolumeInitHeaderCleanup, v1alpha1.VolumeInitZero:
		if !block {
			return field.ErrorList{field.Invalid(p, v.InitMethod, string(v.InitMethod)+" applies to Block volumes; "+
				"a Filesystem volume takes DeleteFiles or None")}
		}
	}
	return nil
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func validateSidecars(c *v1alpha1.AerospikeCluster) field.ErrorList {
	if c.Spec.PodSpec == nil {
		return nil
	}
	var errs field.ErrorList
	names := map[string]bool{v1alpha1.AerospikeContainerName: true, v1alpha1.ExporterContainerName: c.MonitoringEnabled()}
	for i, s := range c.Spec.PodSpec.Sidecars {
		p := field.NewPath("spec", "podSpec", "sidecars").Index(i)
		switch {
		case s.Container.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "every sidecar needs a name"))
		case names[s.Container.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), s.Container.Name))
		}
		if s.Container.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), "every sidecar needs an image"))
		}
		names[s.Container.Name] = true
	}
	return errs
}
