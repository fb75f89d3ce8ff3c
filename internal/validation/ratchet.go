package validation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// ConfigViolations are the rules a cluster accepted before ACKO checked them may already break: the
// Aerospike server's own rules on aerospikeConfig (its parameter table for the image's version,
// Community Edition's limits, the checks asd makes when it starts; see config.Check), a server version
// older than any table, and the Kubernetes name limits of the cluster's children. A new cluster must
// keep all of them; an update must not break them anew (see Ratchet). The reconciler can report them
// instead of stopping when nothing new would reach a pod.
func ConfigViolations(c *ackov1alpha1.AerospikeCluster, clusterDomain string) field.ErrorList {
	_, violations := config.Check(c)
	return slices.Concat(imageVersionViolations(c), validateNames(c, clusterDomain), violations)
}

// Ratchet splits the violations of an updated spec: refused are those the update brings (a key it adds
// or changes, or a value a new server version refuses); untouched are those the stored spec already had
// at the same place with the same value. An update is then never blocked (a pause, an operation, a
// revert) by a key it leaves alone.
func Ratchet(old, c *ackov1alpha1.AerospikeCluster, clusterDomain string) (refused, untouched field.ErrorList) {
	before := map[string]bool{}
	for _, e := range ConfigViolations(old, clusterDomain) {
		before[e.Field+"|"+string(e.Type)] = true
	}
	oldSpec, newSpec := specTree(old), specTree(c)
	for _, e := range ConfigViolations(c, clusterDomain) {
		was, wasFound := valueAt(oldSpec, e.Field)
		is, isFound := valueAt(newSpec, e.Field)
		if before[e.Field+"|"+string(e.Type)] && wasFound && isFound && apiequality.Semantic.DeepEqual(was, is) {
			untouched = append(untouched, e)
			continue
		}
		refused = append(refused, e)
	}
	return refused, untouched
}

// untouchedWarning is the admission warning of a violation an update leaves alone.
func untouchedWarning(e *field.Error) string {
	return fmt.Sprintf("%s (allowed because this update leaves it unchanged: change it to a value the rule accepts)",
		e.Error())
}

// specTree is the cluster as JSON values, for looking values up by field path.
func specTree(c *ackov1alpha1.AerospikeCluster) map[string]any {
	data, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var tree map[string]any
	if json.Unmarshal(data, &tree) != nil {
		return nil
	}
	return tree
}

// pathStep is one step of a field path: ".name" or "[index]".
var pathStep = regexp.MustCompile(`^(?:\.?([^.\[\]]+)|\[(\d+)\])`)

// valueAt finds the value at a field path such as spec.aerospikeConfig.namespaces[0].bogus.
func valueAt(tree map[string]any, path string) (any, bool) {
	var v any = tree
	for path != "" {
		m := pathStep.FindStringSubmatch(path)
		if m == nil {
			return nil, false
		}
		path = path[len(m[0]):]
		switch node := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = node[m[1]]; !ok || m[1] == "" {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(m[2])
			if err != nil || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}
