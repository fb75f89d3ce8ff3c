package cluster

import (
	"context"
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// External access in the model (issue 38): a cluster with spec.externalAccess LoadBalancer has a
// Service per pod; the world's load-balancer controller gives each an ingress IP, each node advertises
// what its file says (alternate-access-address and -port, read by the operator as service-clear-alt),
// and the cloud may move a load balancer to another IP: the pod advertises an address that no longer
// routes until the operator recreates it (AddressChanged), through the door like every take-down.

// withLoadBalancers gives every pod its own LoadBalancer Service (spec.externalAccess).
func withLoadBalancers(c *ackov1alpha1.AerospikeCluster) {
	c.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalLoadBalancer}
}

// loadBalancers is the cloud's controller: a LoadBalancer Service without an ingress gets an IP of its own.
func (w *modelWorld) loadBalancers(ctx context.Context) {
	list := &corev1.ServiceList{}
	w.list(list)
	for i := range list.Items {
		svc := &list.Items[i]
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.DeletionTimestamp == nil && len(svc.Status.LoadBalancer.Ingress) == 0 {
			w.setIngress(ctx, svc)
		}
	}
}

// setIngress gives the Service a new ingress IP.
func (w *modelWorld) setIngress(ctx context.Context, svc *corev1.Service) {
	w.lbSeq++
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("203.0.%d.%d", 113+w.lbSeq/250, w.lbSeq%250+1)}}
	if err := w.api.Status().Update(ctx, svc); err != nil {
		panic(err)
	}
	w.logf("load balancer of Service %s at %s", svc.Name, svc.Status.LoadBalancer.Ingress[0].IP)
}

var (
	alternateAddressLine = regexp.MustCompile(`alternate-access-address\s+(\S+)`)
	alternatePortLine    = regexp.MustCompile(`alternate-access-port\s+(\d+)`)
)

// advertisedAlternate is what a node started on conf answers to service-clear-alt ("" without one).
func advertisedAlternate(conf string) string {
	addr, port := alternateAddressLine.FindStringSubmatch(conf), alternatePortLine.FindStringSubmatch(conf)
	if addr == nil || port == nil {
		return ""
	}
	return addr[1] + ":" + port[1]
}

// eventLoadBalancerMoves: the cloud moves the load balancer of a serving pod to another IP.
func (m *modelRun) eventLoadBalancerMoves() bool {
	pod := m.pick(m.servingPods())
	if pod == "" || !m.mayFault() {
		return false
	}
	ctx := context.Background()
	svc := &corev1.Service{}
	if err := m.w.api.Get(ctx, client.ObjectKey{Namespace: m.w.ns, Name: m.w.cluster().PodServiceName(pod)}, svc); err != nil {
		return false
	}
	m.w.logf("event: the cloud moves the load balancer of %s", pod)
	m.w.setIngress(ctx, svc)
	return true
}
