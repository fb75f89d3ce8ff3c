package localcluster

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/crilog"
)

// backupPod is a pod of a backup Job as ACKO makes it: ACKO's labels, asbackup with the real
// tool's flags, the backup claim mounted at /backup with a subPath, and an emptyDir at /tmp.
func backupPod(args ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "nightly-x7k2p", UID: "uid-9",
		Labels: map[string]string{ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "asbackup", Command: []string{"asbackup"}, Args: args,
			VolumeMounts: []corev1.VolumeMount{{Name: "backup", MountPath: "/backup", SubPath: "mycluster"},
				{Name: "tmp", MountPath: "/tmp"}}}},
			Volumes: []corev1.Volume{
				{Name: "backup", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "backups"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
}

// A pod whose first container runs asbackup or asrestore is a tool pod, and no Aerospike node even
// with ACKO's label.
func TestToolPod(t *testing.T) {
	pod := backupPod()
	if toolName(pod) != "asbackup" || simulated(pod) {
		t.Fatalf("backup pod: tool %q, simulated %v", toolName(pod), simulated(pod))
	}
	pod.Spec.Containers[0].Command = []string{"/usr/bin/asrestore"}
	if toolName(pod) != "asrestore" {
		t.Errorf("asrestore by path: %q", toolName(pod))
	}
	for _, cmd := range [][]string{nil, {"sh", "-c", "asbackup"}, {"asd"}} {
		pod.Spec.Containers[0].Command = cmd
		if toolName(pod) != "" || !simulated(pod) {
			t.Errorf("command %q: tool %q, simulated %v", cmd, toolName(pod), simulated(pod))
		}
	}
}

var toolRecords = map[string][]string{
	"mycluster.ns1.svc.cluster.local":             {"127.21.0.5", "127.21.0.6"},
	"mycluster-0.mycluster.ns1.svc.cluster.local": {"127.21.0.5"},
	"other.ns2.svc.cluster.local":                 {"127.21.0.9"},
}

// A --host name resolves as in a pod of the namespace: the short and the full forms of a headless
// Service's name, and a pod's; each address with the name's port. IPs stay; a name that does not
// resolve is an error.
func TestResolveHosts(t *testing.T) {
	for list, want := range map[string]string{
		"mycluster.ns1.svc.cluster.local:3000":      "127.21.0.5:3000,127.21.0.6:3000",
		"mycluster.ns1.svc:3000":                    "127.21.0.5:3000,127.21.0.6:3000",
		"mycluster.ns1":                             "127.21.0.5,127.21.0.6",
		"mycluster:4000":                            "127.21.0.5:4000,127.21.0.6:4000",
		"mycluster.ns1.svc.cluster.local.:3000":     "127.21.0.5:3000,127.21.0.6:3000",
		"mycluster-0.mycluster:3000,127.0.0.1:3001": "127.21.0.5:3000,127.0.0.1:3001",
		"other.ns2.svc,10.0.0.1":                    "127.21.0.9,10.0.0.1",
	} {
		got, err := resolveHosts(list, toolRecords, "ns1")
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", list, got, err, want)
		}
	}
	for _, list := range []string{"other:3000", "mycluster.ns1.svc.", "nowhere.ns1.svc.cluster.local", "mycluster,x.y"} {
		if got, err := resolveHosts(list, toolRecords, "ns1"); err == nil ||
			!strings.Contains(err.Error(), "no such host") {
			t.Errorf("%s: %q, %v; want no such host", list, got, err)
		}
	}
}

// A path under the claim's mount is in the claim's directory, with the mount's subPath; any other
// path (an emptyDir's included) in the pod's scratch directory.
func TestHostPath(t *testing.T) {
	c := &backupPod().Spec.Containers[0]
	claims := map[string]string{"backup": "/state/claims/ns1/backups@uid-1"}
	for p, want := range map[string]string{
		"/backup/nightly/20261203-101500-abc": "/state/claims/ns1/backups@uid-1/mycluster/nightly/20261203-101500-abc",
		"/backup":                             "/state/claims/ns1/backups@uid-1/mycluster",
		"/backup/../etc/passwd":               "/scratch/etc/passwd",
		"/backups/x":                          "/scratch/backups/x",
		"/tmp/out.asb":                        "/scratch/tmp/out.asb",
		"out.asb":                             "/scratch/out.asb",
	} {
		if got := hostPath(c, p, claims, "/scratch"); got != filepath.FromSlash(want) {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
	c.WorkingDir = "/backup"
	if got := hostPath(c, "x/y", claims, "/scratch"); got != "/state/claims/ns1/backups@uid-1/mycluster/x/y" {
		t.Errorf("relative to the working directory: %s", got)
	}
}

// toolArgs rewrites the hosts and paths of every flag form the tools parse, and nothing else.
func TestToolArgs(t *testing.T) {
	resolve := func(list string) (string, error) {
		return resolveHosts(list, toolRecords, "ns1")
	}
	paths := func(p string) (string, error) { return hostPath(&backupPod().Spec.Containers[0], p, nil, "/s"), nil }
	args := []string{"--host", "mycluster.ns1.svc.cluster.local:3000", "--namespace", "test",
		"--directory", "/backup/b1", "--parallel", "2", "-d=/tmp/d", "-o", "/tmp/o.asb", "--input-file=/i.asb",
		"-h=mycluster:3000", "-r", "--set", "/not/a/path", "-i"}
	got, err := toolArgs(args, resolve, paths)
	want := []string{"--host", "127.21.0.5:3000,127.21.0.6:3000", "--namespace", "test",
		"--directory", "/s/backup/b1", "--parallel", "2", "-d=/s/tmp/d", "-o", "/s/tmp/o.asb", "--input-file=/s/i.asb",
		"-h=127.21.0.5:3000,127.21.0.6:3000", "-r", "--set", "/not/a/path", "-i"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
	if got[1] == args[1] {
		t.Error("the pod's args changed")
	}
	if _, err := toolArgs([]string{"-h", "nowhere:3000", "-d", "/backup"}, resolve, paths); err == nil ||
		err.Error() != "host nowhere: no such host" {
		t.Errorf("unresolved host: %v", err)
	}
}

// When the tool exits, the pod ends as the kubelet ends it: Succeeded or Failed, its readiness
// False (PodCompleted), the container terminated with the exit code and the run's times.
func TestTerminatedStatus(t *testing.T) {
	pod := started(backupPod())
	pod.Status.ContainerStatuses[0].Name = "asbackup"
	pod.Status.PodIP = "127.21.0.30"
	start := time.Date(2026, 12, 3, 10, 15, 0, 0, time.UTC)
	end := start.Add(5 * time.Second)
	for code, want := range map[int]struct {
		phase  corev1.PodPhase
		reason string
	}{0: {corev1.PodSucceeded, reasonCompleted}, 1: {corev1.PodFailed, reasonError}, 2: {corev1.PodFailed, reasonError}} {
		st := terminatedStatus(pod, code, start, end)
		cs := st.ContainerStatuses[0]
		term := cs.State.Terminated
		if st.Phase != want.phase || cs.Ready || *cs.Started || term == nil || int(term.ExitCode) != code ||
			term.Reason != want.reason || !term.StartedAt.Time.Equal(start) || !term.FinishedAt.Time.Equal(end) ||
			st.PodIP != "127.21.0.30" {
			t.Errorf("exit %d: %s %+v", code, st.Phase, cs)
		}
		assertCompleted(t, st, end)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Error("the pod's status changed")
	}
}

// assertCompleted: the status says the pod is not ready since at, as the kubelet does of a pod that ended.
func assertCompleted(t *testing.T, st *corev1.PodStatus, at time.Time) {
	t.Helper()
	for _, ct := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		if c := condition(st.Conditions, ct); c.Status != corev1.ConditionFalse || c.Reason != reasonPodCompleted ||
			!c.LastTransitionTime.Time.Equal(at) {
			t.Errorf("%s %s: %+v", st.Phase, ct, c)
		}
	}
}

// The tool's output is the container's log in the CRI format: a line each, the stream named, a line
// not ended written at the end, and the pod's paths where the tool says the host's.
func TestCRIWriter(t *testing.T) {
	var log strings.Builder
	paths := strings.NewReplacer("/state/claims/ns1/backups@uid-1/mycluster/b1", "/backup/b1")
	out := &crilog.Writer{W: &log, Stream: "stdout", Rewrite: paths.Replace}
	errs := &crilog.Writer{W: &log, Stream: "stderr", Rewrite: paths.Replace}
	_, _ = out.Write([]byte("Backed up 3 record(s), "))
	_, _ = errs.Write([]byte("asbackup: directory /state/claims/ns1/backups@uid-1/mycluster/b1 already holds backup files (x)\n"))
	_, _ = out.Write([]byte("100 byte(s) in total\nlast"))
	out.Flush()
	errs.Flush()
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	want := []string{"stderr F asbackup: directory /backup/b1 already holds backup files (x)",
		"stdout F Backed up 3 record(s), 100 byte(s) in total", "stdout F last"}
	if len(lines) != len(want) {
		t.Fatalf("log %q", log.String())
	}
	for i, l := range lines {
		at, rest, _ := strings.Cut(l, " ")
		if _, err := time.Parse(time.RFC3339Nano, at); err != nil || rest != want[i] {
			t.Errorf("line %d: %q", i, l)
		}
	}
}

// The pod's tool runs against the cluster's pods, in the directory of its claim (named with the
// claim's UID, its parent made), and says the pod's paths; a host that does not resolve leaves the
// pod's arguments, and the error the tool fails with.
func TestToolCallOf(t *testing.T) {
	dir := t.TempDir()
	pod := backupPod("--host", "db.ns1.svc:3000", "-n", "test", "--directory", "/backup/b1")
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "backups", UID: "uid-1"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "db"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"}}}
	db := dnsPod("db-0", "127.21.0.5", true)
	db.Namespace = "ns1"
	s := &Syncer{claimsDir: filepath.Join(dir, "claims"), scratchDir: filepath.Join(dir, "scratch"),
		claims:   corelisters.NewPersistentVolumeClaimLister(indexer(t, claim)),
		services: corelisters.NewServiceLister(indexer(t, svc)),
		pods:     corelisters.NewPodLister(indexer(t, db, pod))}
	call, err := s.toolCallOf(pod, "asbackup")
	if err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(dir, "claims", "ns1", "backups@uid-1", "mycluster", "b1")
	want := []string{"--host", "127.21.0.5:3000", "-n", "test", "--directory", host}
	if call.err != nil || !reflect.DeepEqual(call.args, want) || call.tool != "asbackup" {
		t.Fatalf("call %q %v, want %q", call.args, call.err, want)
	}
	if fi, err := os.Stat(filepath.Dir(host)); err != nil || !fi.IsDir() {
		t.Errorf("the claim's directory: %v", err)
	}
	if got := call.paths.Replace("cannot open " + host + "/x.asb"); got != "cannot open /backup/b1/x.asb" {
		t.Errorf("paths put back: %s", got)
	}
	pod.Spec.Containers[0].Args[1] = "nowhere:3000"
	if call, err := s.toolCallOf(pod, "asbackup"); err != nil || call.err == nil ||
		!reflect.DeepEqual(call.args, pod.Spec.Containers[0].Args) {
		t.Errorf("unresolved host: %q %v %v", call.args, call.err, err)
	}
	pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "missing"
	if _, err := s.toolCallOf(pod, "asbackup"); err == nil {
		t.Error("a claim not seen yet must hold the start")
	}
}
