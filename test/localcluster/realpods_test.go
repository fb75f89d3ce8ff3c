package localcluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/proc"
	"github.com/acko-io/acko/test/realnode"
	"github.com/acko-io/acko/test/testcluster"
)

// A real pod's volumes are directories: the emptyDir at /etc/aerospike holds the copy the
// copy-config init container made of the pod's own file, the ConfigMap volume its keys, a claim its
// own directory (shared by the pods of the claim), a subPath a directory inside.
func TestRealPodMounts(t *testing.T) {
	pod, cm := acko(t)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}})
	c := aerospikeContainer(pod)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/opt/aerospike/data", SubPath: "ns1"})
	vols, _, err := startFiles(pod, configMapLister(t, cm))
	if err != nil {
		t.Fatal(err)
	}
	podDir, claims := t.TempDir(), t.TempDir()
	dirs, err := realVolumeDirs(pod, podDir, func(claim string) (string, error) {
		return filepath.Join(claims, claim+"@uid-9"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeRealVolumes(dirs, vols); err != nil {
		t.Fatal(err)
	}
	mounts, err := realMounts(c, dirs)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]realnode.Mount{}
	for _, m := range mounts {
		byPath[m.Path] = m
	}
	own := cm.Data[config.PodFileKey("db-0", "")]
	read := func(dir, file string) string {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		return string(b)
	}
	if got := read(byPath["/etc/aerospike"].Source, "aerospike.conf"); got != own {
		t.Errorf("/etc/aerospike/aerospike.conf: %q", got)
	}
	if got := read(byPath["/etc/aerospike-configmap"].Source, "db-0.conf"); got != own {
		t.Errorf("/etc/aerospike-configmap/db-0.conf: %q", got)
	}
	if got, want := byPath["/opt/aerospike/data"].Source, filepath.Join(claims, "ns", "data-db-0@uid-9", "ns1"); got != want {
		t.Errorf("claim mount from %s, want %s", got, want)
	}
	if fi, err := os.Stat(byPath["/opt/aerospike/data"].Source); err != nil || !fi.IsDir() {
		t.Errorf("subPath not made: %v", err)
	}
	c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvdb"}}
	if _, err := realMounts(c, dirs); err == nil || !strings.Contains(err.Error(), "block volumes") {
		t.Errorf("a block volume: %v", err)
	}
}

func TestHostsFile(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1"}, Status: corev1.PodStatus{PodIP: "198.18.0.3"}}
	got := string(hostsFile(pod, map[string][]string{
		"db-headless.ns.svc.cluster.local":      {"198.18.0.2", "198.18.0.3"},
		"db-0.db-headless.ns.svc.cluster.local": {"198.18.0.2"},
	}))
	for _, line := range []string{"127.0.0.1\tlocalhost\n", "198.18.0.3\tdb-1\n", "198.18.0.2\tdb-0.db-headless.ns.svc.cluster.local\n",
		"198.18.0.2\tdb-headless.ns.svc.cluster.local\n198.18.0.3\tdb-headless.ns.svc.cluster.local\n"} {
		if !strings.Contains(got, line) {
			t.Errorf("no %q in\n%s", line, got)
		}
	}
}

// ACKO's pods of a 3-node cluster, made of files as a kubelet would (the copy-config init container,
// the ConfigMap, the cluster DNS as /etc/hosts), run real asd nodes that form one cluster with the
// node ids the operator gave them. Needs root and the binaries: ACKO_REAL=1 (make test-real).
func TestRealPodsFormACluster(t *testing.T) {
	if os.Getenv("ACKO_REAL") == "" {
		t.Skip("real nodes: set ACKO_REAL=1 (make test-real); they need root and " + realnode.EnvASDDir)
	}
	lock, err := proc.Lock("acko-realpods-test.lock", func(path string) { t.Logf("waiting for %s", path) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Close() }()
	dir := filepath.Join(LocalOptions().Dir, "realpods-test")
	l, err := realnode.New(t.Context(), realnode.Options{Dir: filepath.Join(dir, "realnodes"), Bridge: "acko-rptest",
		Subnet: netip.MustParsePrefix("198.19.129.0/24"), DieWithParent: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Cleanup(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, pods := startRealPods(ctx, t, l, dir)
	awaitRealPods(ctx, t, c, pods)
}

// startRealPods starts ACKO's 3 pods of a cluster as real nodes, made of files as the sync loop makes them.
func startRealPods(ctx context.Context, t *testing.T, l *realnode.Launcher, dir string) (*ackov1alpha1.AerospikeCluster, []*corev1.Pod) {
	t.Helper()
	c := testcluster.New("ns", "db", 3)
	rack := c.RackPlan()[0]
	conf, err := config.Render(c, rack, ackov1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	sts := resources.StatefulSet(c, rack, config.Hash(conf))
	cms := configMapLister(t, resources.ConfigMap(c, rack, conf, nil))
	var pods []*corev1.Pod
	for i, name := range c.DesiredPodNames() {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Labels: sts.Spec.Template.Labels}, Spec: *sts.Spec.Template.Spec.DeepCopy()}
		pod.Spec.Hostname, pod.Spec.Subdomain = name, sts.Spec.ServiceName
		pod.Status.PodIP = fmt.Sprintf("198.19.129.%d", 10+i)
		pods = append(pods, pod)
	}
	records := dnsRecords([]*corev1.Service{resources.HeadlessService(c)}, pods)
	for _, pod := range pods {
		vols, _, err := startFiles(pod, cms)
		if err != nil {
			t.Fatal(err)
		}
		dirs, err := realVolumeDirs(pod, filepath.Join(dir, "pods", pod.Name), nil)
		if err == nil {
			err = writeRealVolumes(dirs, vols)
		}
		if err != nil {
			t.Fatal(err)
		}
		mounts, err := realMounts(aerospikeContainer(pod), dirs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Start(ctx, realnode.NodeSpec{Name: pod.Namespace + "/" + pod.Name,
			IP: netip.MustParseAddr(pod.Status.PodIP), Hosts: hostsFile(pod, records), Mounts: mounts}); err != nil {
			t.Fatal(err)
		}
	}
	return c, pods
}

// awaitRealPods waits until every pod's node answers with its node id in one cluster of them all.
func awaitRealPods(ctx context.Context, t *testing.T, c *ackov1alpha1.AerospikeCluster, pods []*corev1.Pod) {
	t.Helper()
	info := aerospike.NewClient(aerospike.ClientOptions{})
	for {
		keys, why := map[string]bool{}, ""
		for _, pod := range pods {
			got, err := info.Info(ctx, pod.Status.PodIP+":3000", "node", "statistics")
			stats := aerospike.ParseKV(got["statistics"])
			switch {
			case err != nil:
				why = err.Error()
			case got["node"] != config.PodNodeID(c, pod.Name) || stats["cluster_size"] != strconv.Itoa(len(pods)):
				why = fmt.Sprintf("%s: node %s in a cluster of %s", pod.Name, got["node"], stats["cluster_size"])
			default:
				keys[stats["cluster_key"]] = true
			}
		}
		if why == "" && len(keys) == 1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no cluster of the 3 pods: %s, keys %v", why, keys)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
