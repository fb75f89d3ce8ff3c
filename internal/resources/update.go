package resources

import (
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/api/v1alpha1"
)

// NeedsUpdate reports whether an existing child differs from the builder's desired one in a field the
// operator owns. Fields the API server or other controllers fill in (clusterIP, sessionAffinity,
// revisionHistoryLimit, pod template defaults, status, extra labels and annotations) are ignored, so a
// child the operator created and left alone never needs an update. What is compared, per kind:
//   - every kind: the labels the operator sets, and for a child that lists them (AnnotationOwnedLabels)
//     that no label it set earlier is left over;
//   - ConfigMap: data;
//   - Service: type, selector, publishNotReadyAddresses, ports (name, port, targetPort, protocol), and
//     for a per-pod Service its externalTrafficPolicy, loadBalancerClass and annotations (a node port
//     the API server allocated is kept: it is the address the pod advertises);
//   - StatefulSet: replicas, update strategy, PVC retention policy, the Aerospike image and the config
//     and pod spec hash annotations of the template (the hashes stand for the rest of the template,
//     which the API server fills with defaults);
//   - PodDisruptionBudget: maxUnavailable, minAvailable, selector and annotations;
//   - an unstructured child (the PodMonitor): its spec.
//
// Kinds the builders do not make are never reported.
func NeedsUpdate(existing, desired client.Object) bool {
	if !containsAll(existing.GetLabels(), desired.GetLabels()) || ownedLabelsDiffer(existing, desired) {
		return true
	}
	switch d := desired.(type) {
	case *corev1.ConfigMap:
		e, ok := existing.(*corev1.ConfigMap)
		return !ok || !maps.Equal(e.Data, d.Data)
	case *corev1.Service:
		e, ok := existing.(*corev1.Service)
		return !ok || serviceDiffers(e, d)
	case *appsv1.StatefulSet:
		e, ok := existing.(*appsv1.StatefulSet)
		return !ok || statefulSetDiffers(e, d)
	case *policyv1.PodDisruptionBudget:
		e, ok := existing.(*policyv1.PodDisruptionBudget)
		return !ok || budgetDiffers(e, d)
	case *unstructured.Unstructured:
		e, ok := existing.(*unstructured.Unstructured)
		return !ok || !equality.Semantic.DeepEqual(e.Object["spec"], d.Object["spec"])
	}
	return false
}

// budgetDiffers: the budget's limits, selector or annotations are not the desired ones.
func budgetDiffers(e, d *policyv1.PodDisruptionBudget) bool {
	return !equality.Semantic.DeepEqual(e.Spec.MaxUnavailable, d.Spec.MaxUnavailable) ||
		!equality.Semantic.DeepEqual(e.Spec.MinAvailable, d.Spec.MinAvailable) ||
		!equality.Semantic.DeepEqual(e.Spec.Selector, d.Spec.Selector) ||
		!containsAll(e.Annotations, d.Annotations)
}

// ApplyOwnedFields copies the fields NeedsUpdate compares from desired into existing (a StatefulSet gets
// the whole desired template), keeping everything else, including the fields Kubernetes will not let
// change (StatefulSet selector and volume claim templates, a Service's clusterIP). Afterwards
// NeedsUpdate(existing, desired) is false and existing is ready for an Update.
func ApplyOwnedFields(existing, desired client.Object) {
	applyLabels(existing, desired)
	switch d := desired.(type) {
	case *corev1.ConfigMap:
		if e, ok := existing.(*corev1.ConfigMap); ok {
			e.Data = maps.Clone(d.Data)
		}
	case *corev1.Service:
		if e, ok := existing.(*corev1.Service); ok {
			applyServiceFields(e, d)
		}
	case *appsv1.StatefulSet:
		if e, ok := existing.(*appsv1.StatefulSet); ok {
			e.Spec.Replicas = d.Spec.Replicas
			e.Spec.UpdateStrategy = d.Spec.UpdateStrategy
			e.Spec.PersistentVolumeClaimRetentionPolicy = d.Spec.PersistentVolumeClaimRetentionPolicy.DeepCopy()
			e.Spec.Template = *d.Spec.Template.DeepCopy()
		}
	case *policyv1.PodDisruptionBudget:
		if e, ok := existing.(*policyv1.PodDisruptionBudget); ok {
			e.Spec.MaxUnavailable, e.Spec.MinAvailable = d.Spec.MaxUnavailable, d.Spec.MinAvailable
			e.Spec.Selector = d.Spec.Selector.DeepCopy()
			if e.Annotations == nil {
				e.Annotations = map[string]string{}
			}
			maps.Copy(e.Annotations, d.Annotations)
		}
	case *unstructured.Unstructured:
		if e, ok := existing.(*unstructured.Unstructured); ok {
			e.Object["spec"] = runtime.DeepCopyJSONValue(d.Object["spec"])
		}
	}
}

// applyLabels puts the desired labels on existing, keeping others' labels but, where the desired child
// lists the labels the operator sets (AnnotationOwnedLabels), not those it set earlier and no longer does.
func applyLabels(existing, desired client.Object) {
	labels := existing.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if owned, ok := desired.GetAnnotations()[v1alpha1.AnnotationOwnedLabels]; ok {
		for _, k := range ownedLabels(existing) {
			delete(labels, k) // the desired labels go back on below
		}
		annotations := existing.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.AnnotationOwnedLabels] = owned
		existing.SetAnnotations(annotations)
	}
	maps.Copy(labels, desired.GetLabels())
	existing.SetLabels(labels)
}

// ownedLabelsDiffer: the desired child lists the labels the operator sets, and the existing one lists
// others (or none: it was made before the list), so a label may be left over from an earlier spec.
func ownedLabelsDiffer(existing, desired client.Object) bool {
	want, ok := desired.GetAnnotations()[v1alpha1.AnnotationOwnedLabels]
	if !ok {
		return false
	}
	have, ok := existing.GetAnnotations()[v1alpha1.AnnotationOwnedLabels]
	return !ok || have != want
}

// ownedLabels are the keys of the labels the operator set on the child, as it listed them.
func ownedLabels(obj client.Object) []string {
	if v := obj.GetAnnotations()[v1alpha1.AnnotationOwnedLabels]; v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

func containsAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func applyServiceFields(e, d *corev1.Service) {
	e.Spec.Type = d.Spec.Type
	e.Spec.Selector = maps.Clone(d.Spec.Selector)
	e.Spec.PublishNotReadyAddresses = d.Spec.PublishNotReadyAddresses
	e.Spec.Ports = keepNodePorts(e.Spec.Ports, d.Spec.Ports)
	if d.Spec.ExternalTrafficPolicy != "" {
		e.Spec.ExternalTrafficPolicy = d.Spec.ExternalTrafficPolicy
	}
	e.Spec.LoadBalancerClass = d.Spec.LoadBalancerClass
	if len(d.Annotations) > 0 && e.Annotations == nil {
		e.Annotations = map[string]string{}
	}
	maps.Copy(e.Annotations, d.Annotations)
}

// keepNodePorts is the desired ports with the node ports the existing ones were allocated.
func keepNodePorts(existing, desired []corev1.ServicePort) []corev1.ServicePort {
	out := append([]corev1.ServicePort(nil), desired...)
	for i := range out {
		for _, e := range existing {
			if out[i].NodePort == 0 && e.Name == out[i].Name {
				out[i].NodePort = e.NodePort
			}
		}
	}
	return out
}

func serviceDiffers(e, d *corev1.Service) bool {
	if orDefault(e.Spec.Type, corev1.ServiceTypeClusterIP) != orDefault(d.Spec.Type, corev1.ServiceTypeClusterIP) ||
		!maps.Equal(e.Spec.Selector, d.Spec.Selector) ||
		e.Spec.PublishNotReadyAddresses != d.Spec.PublishNotReadyAddresses ||
		d.Spec.ExternalTrafficPolicy != "" && e.Spec.ExternalTrafficPolicy != d.Spec.ExternalTrafficPolicy ||
		!ptr.Equal(e.Spec.LoadBalancerClass, d.Spec.LoadBalancerClass) ||
		!containsAll(e.Annotations, d.Annotations) ||
		len(e.Spec.Ports) != len(d.Spec.Ports) {
		return true
	}
	for i, dp := range d.Spec.Ports {
		ep := e.Spec.Ports[i]
		if ep.Name != dp.Name || ep.Port != dp.Port || ep.TargetPort != dp.TargetPort ||
			orDefault(ep.Protocol, corev1.ProtocolTCP) != orDefault(dp.Protocol, corev1.ProtocolTCP) {
			return true
		}
	}
	return false
}

func statefulSetDiffers(e, d *appsv1.StatefulSet) bool {
	et, dt := e.Spec.Template, d.Spec.Template
	return replicas(e) != replicas(d) ||
		orDefault(e.Spec.UpdateStrategy.Type, appsv1.RollingUpdateStatefulSetStrategyType) != d.Spec.UpdateStrategy.Type ||
		!equality.Semantic.DeepEqual(retention(e), retention(d)) ||
		aerospikeImage(et.Spec) != aerospikeImage(dt.Spec) ||
		et.Annotations[v1alpha1.AnnotationConfigHash] != dt.Annotations[v1alpha1.AnnotationConfigHash] ||
		et.Annotations[v1alpha1.AnnotationPodSpecHash] != dt.Annotations[v1alpha1.AnnotationPodSpecHash] ||
		et.Annotations[v1alpha1.AnnotationNodeBlockList] != dt.Annotations[v1alpha1.AnnotationNodeBlockList]
}

// retention is the StatefulSet's PVC retention policy with the API's default (Retain, Retain).
func retention(s *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if r := s.Spec.PersistentVolumeClaimRetentionPolicy; r != nil {
		p.WhenDeleted = orDefault(r.WhenDeleted, p.WhenDeleted)
		p.WhenScaled = orDefault(r.WhenScaled, p.WhenScaled)
	}
	return p
}

// replicas is spec.replicas with the API's default of 1.
func replicas(s *appsv1.StatefulSet) int32 {
	if s.Spec.Replicas == nil {
		return 1
	}
	return *s.Spec.Replicas
}

func orDefault[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}
