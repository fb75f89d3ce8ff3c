package localcluster

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// dnsRecords is the cluster DNS as the simulated nodes resolve it (the local cluster runs no
// EndpointSlice controller, so it is worked out from the pods and Services): a headless Service's
// name resolves to the addresses of the pods its selector matches (ready ones only, unless it
// publishes not-ready addresses), in pod-name order; a pod whose hostname and subdomain name it
// resolves as <hostname>.<service>.<namespace>.svc.cluster.local.
func dnsRecords(services []*corev1.Service, pods []*corev1.Pod) map[string][]string {
	domain := ackov1alpha1.DefaultClusterDomain
	records := map[string][]string{}
	for _, svc := range services {
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Selector) == 0 {
			continue
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		suffix := strings.Join([]string{svc.Name, svc.Namespace, "svc", domain}, ".")
		for _, pod := range endpoints(svc, selector, pods) {
			records[suffix] = append(records[suffix], pod.Status.PodIP)
			if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
				records[pod.Spec.Hostname+"."+suffix] = []string{pod.Status.PodIP}
			}
		}
	}
	return records
}

// endpoints are the Service's pods, sorted by name.
func endpoints(svc *corev1.Service, selector labels.Selector, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if pod.Namespace != svc.Namespace || !selector.Matches(labels.Set(pod.Labels)) || pod.Status.PodIP == "" ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if !svc.Spec.PublishNotReadyAddresses && (!podReady(pod) || pod.DeletionTimestamp != nil) {
			continue
		}
		out = append(out, pod)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// podReady reads the pod's Ready condition.
func podReady(pod *corev1.Pod) bool {
	c := condition(pod.Status.Conditions, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func condition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
