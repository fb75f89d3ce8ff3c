package localcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// renderPodReady renders the pod-ready stage's status template for pod with the functions kwok
// gives it (stand-ins for the IP allocators; sprig's contains), as kwok does.
func renderPodReady(t *testing.T, pod *corev1.Pod) corev1.PodStatus {
	t.Helper()
	b, err := kwokFiles.ReadFile("kwok/pod-stages.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tmpl string
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var stage struct {
			Metadata struct{ Name string }
			Spec     struct {
				Next struct{ StatusTemplate string }
			}
		}
		if err := dec.Decode(&stage); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if stage.Metadata.Name == "pod-ready" {
			tmpl = stage.Spec.Next.StatusTemplate
		}
	}
	funcs := template.FuncMap{
		"Now":         func() string { return "2025-01-01T00:00:00Z" },
		"Quote":       func(v any) string { b, _ := json.Marshal(v); return string(b) },
		"NodeIPsWith": func(string) []string { return []string{"127.0.0.1"} },
		"PodIPsWith":  func(...any) []string { return []string{"127.21.0.9"} },
		"contains":    func(substr, s string) bool { return strings.Contains(s, substr) },
	}
	parsed, err := template.New("pod-ready").Funcs(funcs).Parse(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := parsed.Execute(&out, obj); err != nil {
		t.Fatal(err)
	}
	var st corev1.PodStatus
	if err := yaml.UnmarshalStrict(out.Bytes(), &st); err != nil {
		t.Fatalf("%v in\n%s", err, out.String())
	}
	return st
}

func TestPodReadyStage(t *testing.T) {
	pod, _ := acko(t)
	pod.Spec.NodeName = "kwok-zone-a-1"
	pod.Spec.ReadinessGates = nil
	st := renderPodReady(t, pod)
	if st.Phase != corev1.PodRunning || !podReadyIn(st) || st.PodIP != "127.21.0.9" || !st.ContainerStatuses[0].Ready ||
		st.InitContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("a plain pod: %+v", st)
	}

	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "acko.io/aerospike-ready"}}
	st = renderPodReady(t, pod)
	r := condition(st.Conditions, corev1.PodReady)
	if st.Phase != corev1.PodRunning || r.Status != corev1.ConditionFalse || r.Reason != reasonGatesNotReady ||
		r.Message != `corresponding condition of pod readiness gate "acko.io/aerospike-ready" does not exist.` ||
		condition(st.Conditions, "acko.io/aerospike-ready") != nil {
		t.Fatalf("a gated pod: %+v", st.Conditions)
	}
	// The sync loop agrees with the stage, so it writes nothing more.
	pod.Status = st
	if _, changed := desiredStatus(pod, nil, nil, nil, r.LastTransitionTime.Time); changed {
		t.Error("the sync loop would rewrite the stage's Ready")
	}

}

// An image whose tag says "broken" never starts: ImagePullBackOff, and the pod stays Pending.
func TestPodReadyStageBrokenImage(t *testing.T) {
	pod, _ := acko(t)
	pod.Spec.NodeName = "kwok-zone-a-1"
	pod.Spec.InitContainers[0].Image = "aerospike:ce-8.1.1.1-broken"
	pod.Spec.Containers[0].Image = "aerospike:ce-8.1.1.1-broken"
	st := renderPodReady(t, pod)
	init, main := st.InitContainerStatuses[0], st.ContainerStatuses[0]
	if st.Phase != corev1.PodPending || podReadyIn(st) || init.State.Waiting == nil || init.State.Waiting.Reason != "ImagePullBackOff" ||
		init.State.Waiting.Message != `Back-off pulling image "aerospike:ce-8.1.1.1-broken"` ||
		main.State.Waiting == nil || main.State.Waiting.Reason != "ImagePullBackOff" {
		t.Fatalf("a broken image: %+v", st)
	}
	if c := condition(st.Conditions, corev1.PodInitialized); c.Status != corev1.ConditionFalse ||
		c.Message != "containers with incomplete status: [copy-config report-config]" {
		t.Errorf("Initialized: %+v", c)
	}
}

func podReadyIn(st corev1.PodStatus) bool {
	c := condition(st.Conditions, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// A container whose readiness probe runs `false` (a sidecar whose probe never passes) runs and is never
// ready: the pod is Running and not Ready, the other containers ready.
func TestPodReadyStageNeverReadyProbe(t *testing.T) {
	pod, _ := acko(t)
	pod.Spec.NodeName = "kwok-zone-a-1"
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "probe", Image: "busybox",
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}},
		corev1.Container{Name: "passes", Image: "busybox",
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}})
	st := renderPodReady(t, pod)
	ready := map[string]bool{}
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running == nil {
			t.Errorf("%s does not run: %+v", cs.Name, cs.State)
		}
		ready[cs.Name] = cs.Ready
	}
	if want := map[string]bool{"aerospike-server": true, "probe": false, "passes": true}; !reflect.DeepEqual(ready, want) {
		t.Errorf("ready %v, want %v", ready, want)
	}
	r := condition(st.Conditions, corev1.PodReady)
	if st.Phase != corev1.PodRunning || r.Status != corev1.ConditionFalse || r.Message != "containers with unready status: [probe]" {
		t.Fatalf("a never-ready sidecar: %+v", st)
	}
	// The sync loop agrees with the stage, so it writes nothing more.
	pod.Status = st
	if _, changed := desiredStatus(pod, nil, nil, nil, r.LastTransitionTime.Time); changed {
		t.Error("the sync loop would rewrite the stage's status")
	}
}
