package validation

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// SidecarUnknownFields finds, in an AerospikeCluster's raw JSON, fields of the schema-less Kubernetes
// objects of the spec that their type does not have (a typo such as "imagee" or "Image"): sidecars and
// init containers (containers), extra volumes, racks' affinities. The typed API drops them on decode,
// since a refusal there would break the decoding of every list the operator watches; only the webhook
// sees the raw request, so only it can refuse them. The reconciler cannot repeat this check.
func SidecarUnknownFields(raw []byte) field.ErrorList {
	var obj struct {
		Spec struct {
			PodSpec struct {
				Sidecars       []json.RawMessage `json:"sidecars"`
				InitContainers []json.RawMessage `json:"initContainers"`
				Volumes        []json.RawMessage `json:"volumes"`
			} `json:"podSpec"`
			RackConfig struct {
				Racks []struct {
					Affinity json.RawMessage `json:"affinity"`
				} `json:"racks"`
			} `json:"rackConfig"`
		} `json:"spec"`
	}
	// Malformed JSON is the typed decoder's to refuse; this check has nothing to add.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
		return nil
	}
	const container = "a Kubernetes container (see kubectl explain pod.spec.containers)"
	var errs field.ErrorList
	pod := specPath.Child("podSpec")
	for i, s := range obj.Spec.PodSpec.Sidecars {
		errs = append(errs, unknownFields(s, &corev1.Container{}, pod.Child("sidecars").Index(i), "a sidecar is "+container)...)
	}
	for i, s := range obj.Spec.PodSpec.InitContainers {
		errs = append(errs, unknownFields(s, &corev1.Container{}, pod.Child("initContainers").Index(i),
			"an init container is "+container)...)
	}
	for i, v := range obj.Spec.PodSpec.Volumes {
		errs = append(errs, unknownFields(v, &corev1.Volume{}, pod.Child("volumes").Index(i),
			"a volume is a Kubernetes volume (see kubectl explain pod.spec.volumes)")...)
	}
	for i, r := range obj.Spec.RackConfig.Racks {
		if len(r.Affinity) > 0 {
			errs = append(errs, unknownFields(r.Affinity, &corev1.Affinity{},
				specPath.Child("rackConfig", "racks").Index(i).Child("affinity"),
				"a rack's affinity is a Kubernetes affinity (see kubectl explain pod.spec.affinity)")...)
		}
	}
	return errs
}

// unknownFields decodes raw into into strictly and reports each field into's type does not have.
func unknownFields(raw json.RawMessage, into any, path *field.Path, what string) field.ErrorList {
	// Case-sensitive, as the API server decodes pods: "Image" is not "image".
	strict, err := sigsjson.UnmarshalStrict(raw, into, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil // a type error also fails the typed decode, which refuses the request
	}
	var errs field.ErrorList
	for _, e := range strict {
		name := e.Error()
		if fe, ok := e.(sigsjson.FieldError); ok {
			name = fe.FieldPath()
		}
		errs = append(errs, field.Invalid(path, name, "unknown field: "+what))
	}
	return errs
}
