package validation

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// validateExternalAccess refuses the spec.externalAccess combinations that cannot work: a host port
// where a rack places several pods on one node (the scheduler would leave all but one Pending), a host
// port a sidecar also takes, and per-pod Service annotations Kubernetes refuses. (The type-specific
// fields are CEL rules the API server enforces.)
func validateExternalAccess(c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	a := c.Spec.ExternalAccess
	if a == nil {
		return nil
	}
	path := specPath.Child("externalAccess")
	errs := apivalidation.ValidateAnnotations(a.ServiceAnnotations, path.Child("serviceAnnotations"))
	if a.Type != ackov1alpha1.ExternalHostPort {
		return errs
	}
	port := c.ExternalHostPort()
	for _, rack := range c.RackPlan() {
		if rack.Rack != nil && rack.Rack.NodeName != "" && rack.Size > 1 {
			errs = append(errs, field.Invalid(path.Child("type"), a.Type, fmt.Sprintf("rack %d places %d pods on node %s "+
				"(nodeName), but a host port takes one pod per node: the others would stay Pending; use NodePort, "+
				"or spread the rack", rack.ID, rack.Size, rack.Rack.NodeName)))
		}
	}
	if c.Spec.PodSpec == nil {
		return errs
	}
	for i, s := range c.Spec.PodSpec.Sidecars {
		for j, p := range s.Container.Ports {
			if p.HostPort == port {
				errs = append(errs, field.Duplicate(specPath.Child("podSpec", "sidecars").Index(i).Child("ports").Index(j).
					Child("hostPort"), fmt.Sprintf("%d: spec.externalAccess takes this host port for the Aerospike service port", port)))
			}
		}
	}
	return errs
}
