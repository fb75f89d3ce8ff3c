package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
)

// validateNodeBlockList refuses spec.nodeBlockList entries that name no node (empty, or not a name a
// Kubernetes node can have), a node named twice, and a node a rack is pinned to (rack nodeName, or a
// kubernetes.io/hostname node selector): that rack's pods would have nowhere to go.
func validateNodeBlockList(c *v1alpha1.AerospikeCluster) field.ErrorList {
	var errs field.ErrorList
	p := specPath.Child("nodeBlockList")
	seen := map[string]bool{}
	for i, node := range c.Spec.NodeBlockList {
		switch {
		case node == "":
			errs = append(errs, field.Required(p.Index(i), "a node name (kubernetes.io/hostname) is required"))
			continue
		case seen[node]:
			errs = append(errs, field.Duplicate(p.Index(i), node))
			continue
		}
		seen[node] = true
		for _, msg := range utilvalidation.IsDNS1123Subdomain(node) {
			errs = append(errs, field.Invalid(p.Index(i), node, msg))
		}
	}
	o := c.Spec.PodSpec
	if o == nil {
		o = &v1alpha1.PodOverrides{}
	}
	for _, rack := range c.RackPlan() {
		if node := pinnedNode(o, rack); node != "" && seen[node] {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("node %s is blocked, but %s pins the pods of rack %d to it: "+
				"they could run nowhere; place the rack elsewhere first", node, pinnedBy(rack), rack.ID)))
		}
	}
	return errs
}

// pinnedBy names the field that pins a rack's pods to one node.
func pinnedBy(rack v1alpha1.RackPlacement) string {
	switch {
	case rack.Rack != nil && rack.Rack.NodeName != "":
		return "its nodeName"
	case rack.Rack != nil && rack.Rack.NodeSelector[corev1.LabelHostname] != "":
		return "its nodeSelector"
	}
	return "spec.podSpec.nodeSelector"
}
