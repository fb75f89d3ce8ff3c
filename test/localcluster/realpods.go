package localcluster

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/test/realnode"
)

// Real pods: the pods whose Aerospike container runs a real asd through the launcher of
// test/realnode instead of a simulated node. What a kubelet gives a container is made of files of
// this machine: each volume is a directory, filled as the pod's volumes are when its containers
// start (startFiles: ConfigMaps projected, then the init containers' copies), and bound at the
// container's mount paths; the cluster DNS is the node's /etc/hosts.

// Labels and taints of the node whose pods run real Aerospike nodes.
const (
	// LabelTestBackend marks (and, as a taint key, guards) the node whose pods run real asd.
	LabelTestBackend = "acko.io/test-backend"
	// TestBackendReal is the value of LabelTestBackend and of its taint.
	TestBackendReal = "real"
	// EnvBackend set to TestBackendReal makes `make run-local` (hack/localcluster) and the e2e suite
	// run real nodes (Options.RealNodes).
	EnvBackend = "ACKO_BACKEND"
)

// realVolumeDirs are the directories of this machine that hold a pod's volumes (volume name → dir):
// a claim's is claimDir's (the same for every pod of the claim, new for a new claim), any other
// volume's is a directory of the pod (UID) under podDir.
func realVolumeDirs(pod *corev1.Pod, podDir string, claimDir func(claim string) (string, error)) (map[string]string, error) {
	dirs := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			dir, err := claimDir(pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return nil, err
			}
			dirs[v.Name] = dir
		default:
			dirs[v.Name] = filepath.Join(podDir, "volumes", v.Name)
		}
	}
	return dirs, nil
}

// writeRealVolumes writes the files of each volume (startFiles) into its directory; a volume's
// files that are not in vols are left as they are (a claim's data).
func writeRealVolumes(dirs map[string]string, vols volumeFiles) error {
	for name, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for rel, content := range vols[name] {
			file := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+rel)))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// realMounts are the container's volume mounts as bind mounts of the volumes' directories (a
// subPath is a directory or file inside, made as a directory when missing, as a kubelet does).
// Block volumes (volumeDevices) are refused: no stand-in for a raw device yet.
func realMounts(c *corev1.Container, dirs map[string]string) ([]realnode.Mount, error) {
	if len(c.VolumeDevices) > 0 {
		return nil, fmt.Errorf("container %s: block volumes (volumeDevices) cannot run on real nodes", c.Name)
	}
	mounts := make([]realnode.Mount, 0, len(c.VolumeMounts))
	for _, m := range c.VolumeMounts {
		dir, ok := dirs[m.Name]
		if !ok {
			return nil, fmt.Errorf("container %s: mount of volume %s, which the pod does not have", c.Name, m.Name)
		}
		src := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+m.SubPath)))
		if _, err := os.Stat(src); os.IsNotExist(err) {
			if err := os.MkdirAll(src, 0o755); err != nil {
				return nil, err
			}
		}
		mounts = append(mounts, realnode.Mount{Path: path.Clean(m.MountPath), Source: src, ReadOnly: m.ReadOnly})
	}
	return mounts, nil
}

// hostsFile is a real pod's /etc/hosts: the kubelet's lines (localhost, the pod's own names) and
// the cluster DNS (dnsRecords) as a name a line, addresses in the records' order.
func hostsFile(pod *corev1.Pod, records map[string][]string) []byte {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file (localcluster: and the cluster DNS).\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if pod.Status.PodIP != "" {
		fmt.Fprintf(&b, "%s\t%s\n", pod.Status.PodIP, cmp.Or(pod.Spec.Hostname, pod.Name))
	}
	for _, name := range slices.Sorted(maps.Keys(records)) {
		for _, ip := range records[name] {
			fmt.Fprintf(&b, "%s\t%s\n", ip, name)
		}
	}
	return []byte(b.String())
}
