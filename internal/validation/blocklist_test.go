package validation

import (
	"strings"
	"testing"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

func TestNodeBlockListRefusals(t *testing.T) {
	c := testcluster.Build(testcluster.WithRacks(v1alpha1.Rack{ID: 1}, v1alpha1.Rack{ID: 2, NodeName: "n3"}))
	c.Spec.NodeBlockList = []string{"n1", "", "n1", "Bad_Node", "n3"}
	got := errorStrings(ValidateSpec(c))
	for _, want := range []string{
		"spec.nodeBlockList[1]: Required value: a node name (kubernetes.io/hostname) is required",
		`spec.nodeBlockList[2]: Duplicate value: "n1"`,
		`spec.nodeBlockList[3]: Invalid value: "Bad_Node": a lowercase RFC 1123 subdomain must consist of`,
		"spec.nodeBlockList: Forbidden: node n3 is blocked, but its nodeName pins the pods of rack 2 to it",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nmissing:\n%s", got, want)
		}
	}
	c.Spec.NodeBlockList = []string{"n1", "n2.example"}
	if errs := validateNodeBlockList(c); len(errs) > 0 {
		t.Errorf("a valid list is refused: %v", errs)
	}
}
