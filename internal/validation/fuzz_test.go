package validation

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// fuzzCluster builds a cluster from fuzzed parts. ops holds one operation per line: "kind id pod,pod".
func fuzzCluster(size, batch int32, image string, racks []byte, ops string, paused bool, cfg []byte) *ackov1alpha1.AerospikeCluster {
	c := &ackov1alpha1.AerospikeCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "fz"},
		Spec: ackov1alpha1.AerospikeClusterSpec{
			Size: size, Image: image, RollingUpdateBatchSize: &batch, Paused: paused,
		},
	}
	if len(racks) > 0 {
		c.Spec.RackConfig = &ackov1alpha1.RackConfig{}
		for _, b := range racks {
			c.Spec.RackConfig.Racks = append(c.Spec.RackConfig.Racks, ackov1alpha1.Rack{ID: int32(b) - 8})
		}
	}
	for _, line := range strings.Split(ops, "\n") {
		if line == "" {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		fields = append(fields, "", "")
		o := ackov1alpha1.OperationSpec{Kind: ackov1alpha1.OperationKind(fields[0]), ID: fields[1]}
		if fields[2] != "" {
			o.PodList = strings.Split(fields[2], ",")
		}
		c.Spec.Operations = append(c.Spec.Operations, o)
	}
	config := &ackov1alpha1.AerospikeConfig{}
	if config.UnmarshalJSON(cfg) == nil {
		c.Spec.AerospikeConfig = config
	}
	return c
}

// FuzzValidate: no input panics, and the same input always gets the same answer.
func FuzzValidate(f *testing.F) {
	const cfg = `{"namespaces":[{"name":"test","replication-factor":2,"storage-engine":{"type":"memory"}}]}`
	f.Add(int32(3), int32(1), "aerospike:ce-8.1.1.1", []byte{}, "WarmRestart reload fz-0,fz-2", false, "InProgress", []byte(cfg))
	f.Add(int32(4), int32(5), "aerospike:ee-8.1", []byte{9, 10, 9}, "PodRestart a fz-1-0\nX  fz-1-0,fz-1-0", true, "Completed",
		[]byte(`{"namespaces":[{"name":"x","storage-engine":{"type":"device","devices":["/dev/a"]}}],"security":{}}`))
	f.Add(int32(-1), int32(0), "", []byte{8}, "WarmRestart "+strings.Repeat("y", 21), false, "", []byte(`[]`))
	f.Fuzz(func(t *testing.T, size, batch int32, image string, racks []byte, ops string, paused bool, phase string, cfg []byte) {
		c := fuzzCluster(size, batch, image, racks, ops, paused, cfg)
		old := c.DeepCopy()
		old.Spec.Operations = nil
		old.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: "reload", Phase: ackov1alpha1.OperationPhase(phase)}

		w1, e1 := ValidateCreate(c, domain)
		w2, e2 := ValidateCreate(c, domain)
		if !slices.Equal(w1, w2) || !slices.Equal(messages(e1), messages(e2)) {
			t.Fatalf("ValidateCreate not deterministic:\n%q %q\n%q %q", w1, messages(e1), w2, messages(e2))
		}
		if !slices.Equal(messages(e1), messages(slices.Concat(ValidateSpec(c), ConfigViolations(c, domain)))) {
			t.Fatalf("ValidateCreate is not ValidateSpec and ConfigViolations")
		}
		u1, f1 := ValidateUpdate(old, c, domain)
		u2, f2 := ValidateUpdate(old, c, domain)
		if !slices.Equal(u1, u2) || !slices.Equal(messages(f1), messages(f2)) {
			t.Fatalf("ValidateUpdate not deterministic:\n%q %q\n%q %q", u1, messages(f1), u2, messages(f2))
		}
		for _, e := range append(e1, f1...) {
			if e.Field == "" || e.Detail == "" && e.Type != field.ErrorTypeDuplicate {
				t.Fatalf("error without a field or a reason: %#v", e)
			}
		}
	})
}

// FuzzSidecarUnknownFields: no raw object panics, and the answer is deterministic.
func FuzzSidecarUnknownFields(f *testing.F) {
	f.Add([]byte(`{"spec":{"podSpec":{"sidecars":[{"name":"a","imagee":"b","ports":[{"x":1}]}]}}}`))
	f.Add([]byte(`{"spec":{"podSpec":{"sidecars":[{"name":"a","name":"b"}]}}}`))
	f.Add([]byte(`{"spec":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, b := SidecarUnknownFields(raw), SidecarUnknownFields(raw)
		if !slices.Equal(messages(a), messages(b)) {
			t.Fatalf("not deterministic: %q vs %q", messages(a), messages(b))
		}
	})
}
