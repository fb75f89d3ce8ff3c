package localcluster

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func TestNodesManifest(t *testing.T) {
	o := LocalOptions()
	b, err := o.nodesManifest()
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	zones := map[string]string{}
	var plain *corev1.Node
	for {
		var n corev1.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if n.Labels[LabelKwok] == TestInitPlain {
			plain = &n
			continue
		}
		zones[n.Labels[LabelZone]] = n.Name
	}
	if len(zones) != len(o.Zones) {
		t.Fatalf("zones %v", zones)
	}
	if plain == nil || plain.Labels[LabelTestInit] != TestInitPlain || len(plain.Spec.Taints) != 1 ||
		plain.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("plain node %+v", plain)
	}
}

func TestKwokFilesAreEmbedded(t *testing.T) {
	for _, k := range LocalOptions().kwokInstances() {
		for _, s := range k.stages {
			if _, err := kwokFiles.ReadFile("kwok/" + s); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestExecFor(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-0", Namespace: "ns"}}
	e := execFor(pod)
	if e.GetName() != "a-0" || e.GetNamespace() != "ns" || e.GetKind() != "Exec" {
		t.Fatalf("%v", e)
	}
	local := e.Object["spec"].(map[string]any)["execs"].([]any)[0].(map[string]any)["local"].(map[string]any)
	want := []any{map[string]any{"name": "POD_NAME", "value": "a-0"}, map[string]any{"name": "POD_NAMESPACE", "value": "ns"}}
	if !reflect.DeepEqual(local["envs"], want) {
		t.Fatalf("envs %v, want %v", local["envs"], want)
	}
}
