package localcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// asdConfigFile is the file the Aerospike image's entrypoint starts asd with.
const asdConfigFile = "/etc/aerospike/aerospike.conf"

// How a pod's files are simulated. kwok mounts nothing: the sync loop works out the files the
// Aerospike container would see, the way a kubelet fills the pod's volumes: a ConfigMap volume
// holds the ConfigMap's keys (projected again, after a delay, when the ConfigMap changes), an
// emptyDir starts empty, and an init container whose command is `cp SOURCE DEST` copies a file
// between volumes before the containers start. The simulator holds those files for the pod's node
// (asd reads its config from them at every start) and the exec shims read and change them.

// volumeFiles are the files of each volume of a pod (volume name → path in the volume → content).
type volumeFiles map[string]map[string]string

// aerospikeContainer is the container whose asd the simulator runs: the one ACKO names, else the
// first.
func aerospikeContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == ackov1alpha1.AerospikeContainerName {
			return &pod.Spec.Containers[i]
		}
	}
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	return &pod.Spec.Containers[0]
}

// configMapFiles is what the kubelet projects of a ConfigMap into a volume: every key, or the
// volume's items (key → path).
func configMapFiles(src *corev1.ConfigMapVolumeSource, cm *corev1.ConfigMap) map[string]string {
	files := map[string]string{}
	if len(src.Items) == 0 {
		maps.Copy(files, cm.Data)
		return files
	}
	for _, item := range src.Items {
		if v, ok := cm.Data[item.Key]; ok {
			files[item.Path] = v
		}
	}
	return files
}

// startFiles are the pod's volumes as its containers find them when they start: ConfigMaps
// projected as they are now, then the init containers' copies. It also returns what was projected
// of each ConfigMap volume (its digest). An init container that fails stops there, with an
// *initError: the containers do not start.
func startFiles(pod *corev1.Pod, configMaps corelisters.ConfigMapLister) (volumeFiles, map[string]string, error) {
	vols := volumeFiles{}
	projected := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = map[string]string{}
		if v.ConfigMap == nil {
			continue
		}
		files, err := projectedFiles(pod.Namespace, v.ConfigMap, configMaps)
		if err != nil {
			return nil, nil, err
		}
		vols[v.Name], projected[v.Name] = files, digest(files)
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == resources.PrepareVolumesContainer && pod.Annotations[ackov1alpha1.AnnotationVolumePlan] == "" {
			return nil, nil, &initError{container: c.Name, waiting: true}
		}
		if err := runInit(pod, c, vols); err != nil {
			return nil, nil, err
		}
	}
	return vols, projected, nil
}

// initError is an init container that exited with an error, and what it printed; or, waiting, one
// that runs and waits (prepare-volumes, for its plan): the containers after it do not start yet.
type initError struct {
	container string
	output    string
	waiting   bool
}

func (e *initError) Error() string { return "init container " + e.container + ": " + e.output }

// projectedFiles are a ConfigMap volume's files now (none for a missing optional ConfigMap).
func projectedFiles(namespace string, src *corev1.ConfigMapVolumeSource,
	configMaps corelisters.ConfigMapLister) (map[string]string, error) {
	cm, err := configMaps.ConfigMaps(namespace).Get(src.Name)
	if err != nil {
		if src.Optional != nil && *src.Optional {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("ConfigMap %s of a volume: %w", src.Name, err)
	}
	return configMapFiles(src, cm), nil
}

// terminationLogs is, among a pod's volumes, what each init container copied to its termination log, by
// container (no volume can be named like a path): the kubelet keeps its last 4 KiB in the container's
// status (maxTerminationMessage), where the operator reads which config the pod copied.
const terminationLogs = corev1.TerminationMessagePathDefault

// maxTerminationMessage is how much of a termination log the kubelet keeps: the end of it.
const maxTerminationMessage = 4096

func terminationLogPath(c *corev1.Container) string {
	if c.TerminationMessagePath != "" {
		return c.TerminationMessagePath
	}
	return corev1.TerminationMessagePathDefault
}

// runInit applies an init container's `cp SOURCE DEST` to the volumes; other commands change no
// file the simulator knows of. A SOURCE in a volume that is not there fails the container, with
// GNU cp's message (the Aerospike image's); a SOURCE outside the volumes is the image's, which the
// simulator does not know: the copy is skipped.
func runInit(pod *corev1.Pod, c *corev1.Container, vols volumeFiles) error {
	argv := append(slices.Clone(c.Command), c.Args...)
	for i := range argv {
		argv[i] = expandEnv(argv[i], pod, c)
	}
	if len(argv) != 3 || argv[0] != "cp" {
		return nil
	}
	srcVol, srcPath, ok := volumeOf(c.VolumeMounts, argv[1])
	if !ok {
		return nil
	}
	content, ok := vols[srcVol][srcPath]
	if !ok {
		return &initError{container: c.Name, output: fmt.Sprintf("cp: cannot stat '%s': No such file or directory", argv[1])}
	}
	if argv[2] == terminationLogPath(c) {
		if vols[terminationLogs] == nil {
			vols[terminationLogs] = map[string]string{}
		}
		vols[terminationLogs][c.Name] = content[max(0, len(content)-maxTerminationMessage):]
		return nil
	}
	dstVol, dstPath, ok := volumeOf(c.VolumeMounts, argv[2])
	if !ok {
		return nil
	}
	if dstPath == "" || isMountPoint(c.VolumeMounts, argv[2]) {
		dstPath = path.Join(dstPath, path.Base(srcPath))
	}
	if vols[dstVol] == nil {
		vols[dstVol] = map[string]string{}
	}
	vols[dstVol][dstPath] = content
	return nil
}

// expandEnv expands $(NAME) in a command word as the kubelet does, from the container's env: plain
// values and the downward API's fields (downwardField); $$ is a literal $, and a reference to no
// variable stays as it is.
func expandEnv(word string, pod *corev1.Pod, c *corev1.Container) string {
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			if v, ok := downwardField(pod, e.ValueFrom.FieldRef.FieldPath); ok {
				vars[e.Name] = v
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(word); i++ {
		if word[i] != '$' || i+1 == len(word) {
			b.WriteByte(word[i])
			continue
		}
		switch word[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(word[i:], ')')
			if end < 0 {
				b.WriteString(word[i:])
				return b.String()
			}
			ref := word[i : i+end+1]
			if v, ok := vars[ref[2:len(ref)-1]]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(ref)
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// downwardField is the value the kubelet gives an env var from a downward API fieldRef, for the
// fields a command can use (labels and annotations are left out). The pod's addresses are those of
// its status: the kubelet starts the containers once the sandbox has them.
func downwardField(pod *corev1.Pod, fieldPath string) (string, bool) {
	switch fieldPath {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "status.hostIP":
		return pod.Status.HostIP, true
	case "status.podIP":
		return pod.Status.PodIP, true
	}
	return "", false
}

// volumeOf maps a path in a container to a volume and the path inside it.
func volumeOf(mounts []corev1.VolumeMount, p string) (volume, rel string, ok bool) {
	p = path.Clean(p)
	best := -1
	for i, m := range mounts {
		mp := path.Clean(m.MountPath)
		if (p == mp || strings.HasPrefix(p, mp+"/")) && (best < 0 || len(mp) > len(path.Clean(mounts[best].MountPath))) {
			best = i
		}
	}
	if best < 0 {
		return "", "", false
	}
	m := mounts[best]
	rel = strings.TrimPrefix(strings.TrimPrefix(p, path.Clean(m.MountPath)), "/")
	return m.Name, path.Join(m.SubPath, rel), true
}

func isMountPoint(mounts []corev1.VolumeMount, p string) bool {
	return slices.ContainsFunc(mounts, func(m corev1.VolumeMount) bool { return path.Clean(m.MountPath) == path.Clean(p) })
}

// containerFiles are the files as the container sees them (absolute path → content).
func containerFiles(c *corev1.Container, vols volumeFiles) map[string]string {
	files := map[string]string{}
	for _, m := range c.VolumeMounts {
		for rel, content := range vols[m.Name] {
			switch {
			case m.SubPath == "":
				files[path.Join(m.MountPath, rel)] = content
			case rel == m.SubPath:
				files[path.Clean(m.MountPath)] = content
			case strings.HasPrefix(rel, m.SubPath+"/"):
				files[path.Join(m.MountPath, strings.TrimPrefix(rel, m.SubPath+"/"))] = content
			}
		}
	}
	return files
}

// mountsCover reports whether a mount of the container holds file.
func mountsCover(c *corev1.Container, file string) bool {
	_, _, ok := volumeOf(c.VolumeMounts, file)
	return ok
}

// nodeSpec is the simulated node of a running pod: asd reads its config from the pod's own files
// when a volume is mounted where it reads it (ACKO's pods), else the pod is a simple node of the
// cluster its instance label names.
func nodeSpec(pod *corev1.Pod, vols volumeFiles) aerosim.NodeSpec {
	spec := aerosim.NodeSpec{Name: simclient.NodeName(pod.Namespace, pod.Name), IP: pod.Status.PodIP}
	c := aerospikeContainer(pod)
	if c != nil && mountsCover(c, asdConfigFile) {
		spec.ConfigFile, spec.Files, spec.Image = asdConfigFile, containerFiles(c, vols), c.Image
		spec.Volume = claimsMounted(pod, c)
		spec.LoadRate, _ = strconv.ParseInt(pod.Annotations[AnnotationLoadRate], 10, 64)
		return spec
	}
	spec.Cluster = simclient.ClusterName(pod.Namespace, pod.Labels[ackov1alpha1.LabelInstance])
	return spec
}

// claimsMounted names the PersistentVolumeClaims the container mounts ("<namespace>/<claim>", sorted,
// comma-separated): the simulator keeps a persistent namespace's records with them, so that a pod
// recreated on the same claims finds its records, and a pod without one (emptyDir) loses them.
func claimsMounted(pod *corev1.Pod, c *corev1.Container) string {
	var claims []string
	for _, v := range pod.Spec.Volumes {
		mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name })
		if v.PersistentVolumeClaim != nil && mounted {
			claims = append(claims, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		}
	}
	slices.Sort(claims)
	return strings.Join(claims, ",")
}

// erasedClaims are the claims (as claimsMounted names them) the pod's prepare-volumes container
// erases by its plan: a method other than None. The pod's claim decides, as the script prepares
// whatever volume is mounted.
func erasedClaims(pod *corev1.Pod) ([]string, error) {
	plan, err := resources.ParseVolumePlan(pod.Annotations[ackov1alpha1.AnnotationVolumePlan])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range plan {
		if p.Method == ackov1alpha1.VolumeInitNone || p.Method == ackov1alpha1.VolumeInUse {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == p.Name && v.PersistentVolumeClaim != nil {
				out = append(out, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	return out, nil
}

// mountPaths is the JSON array of a container's mount paths, for the exec shims.
func mountPaths(c *corev1.Container) string {
	paths := make([]string, 0, len(c.VolumeMounts))
	for _, m := range c.VolumeMounts {
		paths = append(paths, m.MountPath)
	}
	b, _ := json.Marshal(paths)
	return string(b)
}

func digest(files map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%q=%q\n", k, files[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
