package resources

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// PodAddress is where clients outside Kubernetes reach a pod (spec.externalAccess): the address and
// port its node advertises, and the Kubernetes node it runs on when the address is the node's.
type PodAddress struct {
	Node    string
	Address string
	Port    int32
}

// PodAddresses are the pods' external addresses that are known, by pod name.
type PodAddresses map[string]PodAddress

// Of is the pod's address, nil when it is not known.
func (a PodAddresses) Of(pod string) *PodAddress {
	if addr, ok := a[pod]; ok {
		return &addr
	}
	return nil
}

// PodConfigFile is the pod's own file in its rack's ConfigMap: its key and content. ok is false while
// the pod has external access and its address is not known (addr nil): the pod gets no file, so its
// init container waits rather than start a node that advertises a wrong address.
func PodConfigFile(c *v1alpha1.AerospikeCluster, pod, template string, addr *PodAddress) (key, content string, ok bool) {
	values := config.PodValues{NodeID: config.PodNodeID(c, pod)}
	if c.Spec.ExternalAccess == nil {
		return config.PodFileKey(pod, ""), config.PodFile(template, values), true
	}
	if addr == nil {
		return "", "", false
	}
	values.Address, values.Port = addr.Address, addr.Port
	node := ""
	if c.AddressFollowsNode() {
		node = addr.Node
	}
	return config.PodFileKey(pod, node), config.PodFile(template, values), true
}

// PodFileKeyOf is the key of the file the pod's init container copied, and that a restart in place
// copies again: the pod says it (its init container reads NODE_NAME when its file follows its node).
func PodFileKeyOf(pod *corev1.Pod) string {
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name != ConfigInitContainer {
			continue
		}
		for _, e := range ic.Env {
			if e.Name == nodeNameEnv {
				return config.PodFileKey(pod.Name, pod.Spec.NodeName)
			}
		}
	}
	return config.PodFileKey(pod.Name, "")
}

// PodService is a pod's own Service (spec.externalAccess NodePort or LoadBalancer), named like the pod:
// its client port only, published before the pod is Ready (a starting node's peers announce it to
// clients as soon as it joins). A NodePort keeps traffic on the pod's node (externalTrafficPolicy
// Local), since the pod advertises that node's address; a load balancer may reach it through any node.
func PodService(c *v1alpha1.AerospikeCluster, pod string) *corev1.Service {
	a := c.Spec.ExternalAccess
	svc := service(c, c.PodServiceName(pod), aerospikePorts[:1])
	svc.Labels[v1alpha1.LabelPodService] = pod
	svc.Spec.Selector[appsv1.StatefulSetPodNameLabel] = pod
	svc.Spec.Type = corev1.ServiceTypeNodePort
	svc.Spec.PublishNotReadyAddresses = true
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if len(a.ServiceAnnotations) > 0 {
		svc.Annotations = maps.Clone(a.ServiceAnnotations)
	}
	if a.Type == v1alpha1.ExternalLoadBalancer {
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		svc.Spec.LoadBalancerClass = a.LoadBalancerClass
	}
	listOwnedLabels(svc)
	return svc
}

// nodeNameEnv is the init container's variable holding its pod's Kubernetes node (the downward API),
// when the pod's file follows its node.
const nodeNameEnv = "NODE_NAME"
