package validation

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// SidecarUnknownFields finds, in an AerospikeCluster's raw JSON, sidecar fields a Kubernetes container
// does not have (a typo such as "imagee" or "Image"). The typed API drops them on decode, since a
// refusal there would break the decoding of every list the operator watches; only the webhook sees
// the raw request, so only it can refuse them. The reconciler cannot repeat this check.
func SidecarUnknownFields(raw []byte) field.ErrorList {
	var obj struct {
		Spec struct {
			PodSpec struct {
				Sidecars []json.RawMessage `json:"sidecars"`
			} `json:"podSpec"`
		} `json:"spec"`
	}
	// Malformed JSON is the typed decoder's to refuse; this check has nothing to add.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
		return nil
	}
	var errs field.ErrorList
	for i, s := range obj.Spec.PodSpec.Sidecars {
		path := specPath.Child("podSpec", "sidecars").Index(i)
		// Case-sensitive, as the API server decodes pods: "Image" is not "image".
		strict, err := sigsjson.UnmarshalStrict(s, &corev1.Container{}, sigsjson.DisallowUnknownFields)
		if err != nil {
			continue // a type error also fails the typed decode, which refuses the request
		}
		for _, e := range strict {
			name := e.Error()
			if fe, ok := e.(sigsjson.FieldError); ok {
				name = fe.FieldPath()
			}
			errs = append(errs, field.Invalid(path, name,
				"unknown field: a sidecar is a Kubernetes container (see kubectl explain pod.spec.containers)"))
		}
	}
	return errs
}
