package localcluster

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/fakeinit"
	"github.com/acko-io/acko/test/testcluster"
)

const cmPath = "/etc/aerospike-configmap/aerospike.conf"

// acko is a pod of ACKO's StatefulSet for a 3-node cluster, and its rack's ConfigMap.
func acko(t *testing.T) (*corev1.Pod, *corev1.ConfigMap) {
	t.Helper()
	c := testcluster.New("ns", "db", 3)
	rack := c.RackPlan()[0]
	conf, err := config.Render(c, rack, ackov1alpha1.DefaultClusterDomain)
	if err != nil {
		t.Fatal(err)
	}
	sts := resources.StatefulSet(c, rack, config.Hash(conf))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-0", UID: "uid-1",
		Labels: sts.Spec.Template.Labels}, Spec: sts.Spec.Template.Spec}
	pod.Status.PodIP = "127.21.0.5"
	return pod, resources.ConfigMap(c, rack, conf, nil)
}

func configMapLister(t *testing.T, cms ...*corev1.ConfigMap) corelisters.ConfigMapLister {
	t.Helper()
	return corelisters.NewConfigMapLister(indexer(t, cms...))
}

// indexer holds objects for a lister.
func indexer[T any](t *testing.T, objs ...T) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// A pod's persistent data lives on the claims its aerospike container mounts; without one it lives
// and dies with the pod.
func TestVolumeOfACKOPod(t *testing.T) {
	pod, cm := acko(t)
	vols, _, err := startFiles(pod, configMapLister(t, cm))
	if err != nil {
		t.Fatal(err)
	}
	if spec := nodeSpec(pod, vols); spec.Volume != "" {
		t.Fatalf("no claim, volume %q", spec.Volume)
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
		corev1.Volume{Name: "unmounted", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "other"}}})
	c := aerospikeContainer(pod)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/opt/aerospike/data"})
	if spec := nodeSpec(pod, vols); spec.Volume != "ns/data-db-0" {
		t.Fatalf("volume %q", spec.Volume)
	}
}

// ACKO's pod: the ConfigMap mounted at /etc/aerospike-configmap, and asd's own copy in an emptyDir
// at /etc/aerospike, made by the copy-config init container from the pod's own file ($(POD_NAME)
// expanded from the downward API).
func TestFilesOfACKOPod(t *testing.T) {
	pod, cm := acko(t)
	vols, digests, err := startFiles(pod, configMapLister(t, cm))
	if err != nil {
		t.Fatal(err)
	}
	spec := nodeSpec(pod, vols)
	own := cm.Data[config.PodFileKey("db-0", "")]
	if spec.ConfigFile != asdConfigFile || spec.Cluster != "" || spec.Name != "ns/db-0" || spec.IP != "127.21.0.5" ||
		spec.Image != testcluster.Image {
		t.Fatalf("spec: %+v", spec)
	}
	if !strings.Contains(own, "\tnode-id A00000\n") || spec.Files[asdConfigFile] != own ||
		spec.Files["/etc/aerospike-configmap/db-0.conf"] != own || len(spec.Files) != 1+len(cm.Data) {
		t.Fatalf("files: %v", slices.Sorted(maps.Keys(spec.Files)))
	}
	if digests[resources.ConfigMapVolume] != digest(cm.Data) || len(digests) != 1 {
		t.Errorf("digests: %v", digests)
	}
	if _, _, err := startFiles(pod, configMapLister(t)); err == nil {
		t.Error("a missing ConfigMap must hold the pod's start")
	}
}

// A pod of an older ACKO: the ConfigMap, which held one file, mounted where asd reads its config.
func TestFilesOfPodMountingTheConfigMap(t *testing.T) {
	pod, cm := acko(t)
	cm.Data = map[string]string{config.FileName: cm.Data[config.PodFileKey(pod.Name, "")]}
	pod.Spec.InitContainers = nil
	c := aerospikeContainer(pod)
	c.VolumeMounts = []corev1.VolumeMount{{Name: resources.ConfigMapVolume, MountPath: "/etc/aerospike"}}
	vols, _, err := startFiles(pod, configMapLister(t, cm))
	if err != nil {
		t.Fatal(err)
	}
	if spec := nodeSpec(pod, vols); spec.Files[asdConfigFile] != cm.Data[config.FileName] || len(spec.Files) != 1 {
		t.Fatalf("files: %v", spec.Files)
	}
	// With subPath, one key as one file.
	c.VolumeMounts = []corev1.VolumeMount{{Name: resources.ConfigMapVolume, MountPath: asdConfigFile,
		SubPath: config.FileName}}
	if spec := nodeSpec(pod, vols); spec.Files[asdConfigFile] != cm.Data[config.FileName] || len(spec.Files) != 1 {
		t.Fatalf("subPath files: %v", spec.Files)
	}
}

// A pod with nothing mounted where asd reads its config (the self-test's) is a simple node of
// the cluster its instance label names.
func TestSimpleNodePod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "selftest", Name: "selftest-0",
		Labels: map[string]string{ackov1alpha1.LabelInstance: "selftest"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "aerospike-server",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/opt/aerospike/data"}}}},
			Volumes: []corev1.Volume{{Name: "data"}}}}
	vols, _, err := startFiles(pod, configMapLister(t))
	if err != nil {
		t.Fatal(err)
	}
	if spec := nodeSpec(pod, vols); spec.Cluster != "selftest/selftest" || spec.ConfigFile != "" || spec.Files != nil {
		t.Fatalf("spec: %+v", spec)
	}
}

func TestExecFor(t *testing.T) {
	pod, _ := acko(t)
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar",
		VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}})
	e := execFor(pod, "")
	if e.GetName() != "db-0" || e.GetNamespace() != "ns" || e.GetKind() != "Exec" {
		t.Fatalf("%v", e)
	}
	execs := e.Object["spec"].(map[string]any)["execs"].([]any)
	envs := func(i int) map[string]string {
		out := map[string]string{}
		for _, e := range execs[i].(map[string]any)["local"].(map[string]any)["envs"].([]any) {
			m := e.(map[string]any)
			out[m["name"].(string)] = m["value"].(string)
		}
		return out
	}
	want := map[string]string{"POD_NAME": "db-0", "POD_NAMESPACE": "ns", fakeinit.EnvSimFiles: "true",
		fakeinit.EnvMounts: `["/etc/aerospike","/etc/aerospike-configmap","/opt/aerospike/smd"]`}
	if got := envs(0); !reflect.DeepEqual(got, want) {
		t.Errorf("aerospike-server envs %v, want %v", got, want)
	}
	if got := envs(1); got[fakeinit.EnvSimFiles] != "false" || got[fakeinit.EnvMounts] != `["/shared"]` {
		t.Errorf("sidecar envs %v", got)
	}
	if c := execs[1].(map[string]any)["containers"]; !reflect.DeepEqual(c, []any{"sidecar"}) {
		t.Errorf("sidecar containers %v", c)
	}

	pod.Annotations = map[string]string{AnnotationExecHang: "10m"}
	execs = execFor(pod, "").Object["spec"].(map[string]any)["execs"].([]any)
	if envs(0)[fakeinit.EnvHang] != "10m" || envs(1)[fakeinit.EnvHang] != "10m" {
		t.Errorf("a pod annotated to hang: envs %v and %v", envs(0), envs(1))
	}
}

func dnsPod(name, ip string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{Hostname: name, Subdomain: "db-headless"},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func TestDNSRecords(t *testing.T) {
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-headless"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"},
			PublishNotReadyAddresses: true}}
	client := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Selector: map[string]string{"app": "db"}}}
	pods := []*corev1.Pod{dnsPod("db-1", "127.0.0.11", false), dnsPod("db-0", "127.0.0.10", true),
		dnsPod("db-2", "", true)}
	pods = append(pods, dnsPod("other", "127.0.0.12", true))
	pods[3].Labels = nil
	got := dnsRecords([]*corev1.Service{headless, client}, pods)
	want := map[string][]string{
		"db-headless.ns.svc.cluster.local":      {"127.0.0.10", "127.0.0.11"},
		"db-0.db-headless.ns.svc.cluster.local": {"127.0.0.10"},
		"db-1.db-headless.ns.svc.cluster.local": {"127.0.0.11"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	headless.Spec.PublishNotReadyAddresses = false
	got = dnsRecords([]*corev1.Service{headless}, pods)
	if len(got) != 2 || len(got["db-headless.ns.svc.cluster.local"]) != 1 {
		t.Errorf("only ready pods: %v", got)
	}
}

// started is a pod with exactly these readiness gates as kwok's pod-ready stage leaves it.
func started(pod *corev1.Pod, gates ...corev1.PodConditionType) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Spec.ReadinessGates = nil
	for _, g := range gates {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "aerospike-server", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return pod
}

func readyOf(st *corev1.PodStatus) corev1.PodCondition {
	return *condition(st.Conditions, corev1.PodReady)
}

// A pod is Ready only when every readiness gate's condition is True, with the kubelet's messages.
func TestReadinessGates(t *testing.T) {
	base, _ := acko(t)
	const gate = "acko.io/aerospike-ready"
	pod := started(base, gate)
	now := time.Now()
	st, changed := desiredStatus(pod, nil, nil, nil, now)
	r := readyOf(st)
	if !changed || r.Status != corev1.ConditionFalse || r.Reason != reasonGatesNotReady ||
		r.Message != `corresponding condition of pod readiness gate "acko.io/aerospike-ready" does not exist.` {
		t.Fatalf("no gate condition: %v %+v", changed, r)
	}
	pod.Status = *st
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: gate, Status: corev1.ConditionFalse})
	if st, _ := desiredStatus(pod, nil, nil, nil, now); readyOf(st).Message !=
		`the status of pod readiness gate "acko.io/aerospike-ready" is not "True", but False` {
		t.Fatalf("gate False: %+v", readyOf(st))
	}
	condition(pod.Status.Conditions, gate).Status = corev1.ConditionTrue
	st, changed = desiredStatus(pod, nil, nil, nil, now.Add(time.Second))
	if r := readyOf(st); !changed || r.Status != corev1.ConditionTrue || r.Reason != "" || !r.LastTransitionTime.Time.Equal(now.Add(time.Second)) {
		t.Fatalf("gate True: %+v", r)
	}
	pod.Status = *st
	if _, changed := desiredStatus(pod, nil, nil, nil, now.Add(time.Minute)); changed {
		t.Error("nothing to change")
	}
	if _, changed := desiredStatus(started(base), nil, nil, nil, now); changed {
		t.Error("a pod without gates is Ready as kwok made it")
	}
}

// While the simulator's asd refuses its config, the container crash-loops with the asd error as
// its last termination message; once it runs, the container is running and ready again.
func TestCrashLoopShown(t *testing.T) {
	base, _ := acko(t)
	pod := started(base)
	node := &aerosim.NodeState{Phase: aerosim.PhaseFailed, Crashes: 2,
		Error: "CRITICAL (config): line 3 :: 'rack-id' is enterprise-only"}
	now := time.Now()
	st, changed := desiredStatus(pod, node, nil, nil, now)
	cs := st.ContainerStatuses[0]
	if !changed || cs.Ready || cs.RestartCount != 2 || cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoop ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.Message != node.Error ||
		cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("crash loop: %+v", cs)
	}
	if r := readyOf(st); r.Status != corev1.ConditionFalse || r.Reason != reasonContainersNotReady ||
		r.Message != "containers with unready status: [aerospike-server]" {
		t.Fatalf("Ready: %+v", r)
	}
	pod.Status = *st
	assertRunsAgain(t, pod, node, now)
}

func assertRunsAgain(t *testing.T, pod *corev1.Pod, node *aerosim.NodeState, now time.Time) {
	t.Helper()
	if _, changed := desiredStatus(pod, node, nil, nil, now.Add(time.Second)); changed {
		t.Error("the same crash loop changes nothing")
	}
	node.Phase = aerosim.PhaseJoining
	st, _ := desiredStatus(pod, node, nil, nil, now.Add(time.Second))
	if cs := st.ContainerStatuses[0]; !cs.Ready || cs.State.Running == nil || cs.RestartCount != 2 ||
		cs.LastTerminationState.Terminated == nil || readyOf(st).Status != corev1.ConditionTrue {
		t.Fatalf("running again: %+v", cs)
	}
}

func TestProjectionKeepsSubPathMounts(t *testing.T) {
	c := &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "cm", MountPath: "/etc/aerospike-configmap"},
		{Name: "cm", MountPath: "/etc/aerospike/aerospike.conf", SubPath: "aerospike.conf"},
	}}
	vols := volumeFiles{"cm": {"aerospike.conf": "x"}}
	files := containerFiles(c, vols)
	if files[cmPath] != "x" || files[asdConfigFile] != "x" || len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	if vol, rel, ok := volumeOf(c.VolumeMounts, "/etc/aerospike-configmap/a/b"); !ok || vol != "cm" || rel != "a/b" {
		t.Errorf("volumeOf: %q %q %v", vol, rel, ok)
	}
	if _, _, ok := volumeOf(c.VolumeMounts, "/etc/aerospike-configmap2/x"); ok {
		t.Error("a sibling directory is not in the mount")
	}
	if got := mountPaths(c); got != `["/etc/aerospike-configmap","/etc/aerospike/aerospike.conf"]` {
		t.Errorf("mount paths %s", got)
	}
}

func TestExpandEnv(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-1-0", UID: "uid-7"},
		Spec:   corev1.PodSpec{NodeName: "kwok-zone-b-1"},
		Status: corev1.PodStatus{HostIP: "127.0.0.1", PodIP: "127.21.0.9"}}
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	c := &corev1.Container{Env: []corev1.EnvVar{
		field("POD_NAME", "metadata.name"), field("NS", "metadata.namespace"), field("NODE_NAME", "spec.nodeName"),
		field("UID", "metadata.uid"), field("HOST_IP", "status.hostIP"), field("POD_IP", "status.podIP"),
		field("APP", "metadata.labels['app']"),
		{Name: "DIR", Value: "/etc"},
	}}
	for word, want := range map[string]string{
		"$(DIR)/$(POD_NAME).conf":            "/etc/db-1-0.conf",
		"$(POD_NAME)_$(NODE_NAME).conf":      "db-1-0_kwok-zone-b-1.conf",
		"$(UID) $(HOST_IP) $(POD_IP) $(APP)": "uid-7 127.0.0.1 127.21.0.9 $(APP)",
		"$(NS)-$$(POD_NAME)":                 "ns-$(POD_NAME)",
		"$(UNSET) $(DIR":                     "$(UNSET) $(DIR",
		"cost$":                              "cost$",
	} {
		if got := expandEnv(word, pod, c); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", word, got, want)
		}
	}
}
