package localcluster

import (
	"bytes"
	"errors"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func TestNodesManifest(t *testing.T) {
	o := LocalOptions()
	b, err := o.nodesManifest()
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	zones := map[string][]string{}
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
		zones[n.Labels[LabelZone]] = append(zones[n.Labels[LabelZone]], n.Name)
	}
	if len(zones) != len(o.Zones) {
		t.Fatalf("zones %v", zones)
	}
	for z, nodes := range zones {
		// A drain of one node needs another in the zone for the pods pinned there.
		if len(nodes) < 2 || nodes[0] == nodes[1] {
			t.Errorf("zone %s has nodes %v, want at least 2", z, nodes)
		}
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
