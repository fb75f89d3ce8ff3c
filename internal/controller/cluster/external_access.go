package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// resolveAddresses works out where clients outside Kubernetes reach each pod of the cluster, desired
// or existing (spec.externalAccess): the pod's own Service's node port or load balancer ingress, and
// the address of the node the pod runs on. What is not known yet is recorded in st.awaiting: that
// pod gets no file, so its init container waits instead of starting a node that advertises a wrong
// address, and the Reconciling condition says what it waits for.
func (r *AerospikeClusterReconciler) resolveAddresses(ctx context.Context, st *clusterState) error {
	c := st.cluster
	st.addresses, st.awaiting = nil, nil
	if c.Spec.ExternalAccess == nil {
		return nil
	}
	st.addresses, st.awaiting = resources.PodAddresses{}, map[string]string{}
	for _, name := range st.desiredAndExisting() {
		addr, awaiting, err := r.podAddress(ctx, st, name)
		switch {
		case err != nil:
			return err
		case addr != nil:
			st.addresses[name] = *addr
		case st.pods[name] != nil:
			// A pod not created yet waits for nothing but its StatefulSet.
			st.awaiting[name] = awaiting
			st.setWork(ackov1alpha1.ReasonAwaitingAddress, "Pod %s waits for %s to advertise to clients outside Kubernetes",
				name, awaiting)
		}
	}
	return nil
}

// podAddress is the pod's external address, or what it waits for.
func (r *AerospikeClusterReconciler) podAddress(ctx context.Context, st *clusterState, name string) (
	*resources.PodAddress, string, error) {
	c := st.cluster
	if !c.PodServices() {
		return r.nodeAddress(ctx, st, name, c.ExternalHostPort())
	}
	svc := &corev1.Service{}
	svcName := c.PodServiceName(name)
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: svcName}, svc)
	switch {
	case apierrors.IsNotFound(err) || err == nil && !ownedBy(svc, c):
		return nil, "its Service " + svcName, nil // created by applyChildren, which reports a conflict
	case err != nil:
		return nil, "", err
	}
	if c.ExternalAccessType() == ackov1alpha1.ExternalLoadBalancer {
		if host := ingressHost(svc); host != "" {
			return &resources.PodAddress{Address: host, Port: config.ServicePort}, "", nil
		}
		return nil, "the load balancer's ingress of Service " + svcName, nil
	}
	port := nodePort(svc)
	if port == 0 {
		return nil, "the node port of Service " + svcName, nil
	}
	return r.nodeAddress(ctx, st, name, port)
}

// nodeAddress is the address of the Kubernetes node the pod runs on, at port, or what it waits for.
func (r *AerospikeClusterReconciler) nodeAddress(ctx context.Context, st *clusterState, name string, port int32) (
	*resources.PodAddress, string, error) {
	pod := st.pods[name]
	if pod == nil || pod.Spec.NodeName == "" {
		return nil, "a Kubernetes node (the pod is not scheduled)", nil
	}
	node := &corev1.Node{}
	switch err := r.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); {
	case apierrors.IsNotFound(err):
		return nil, "its node " + pod.Spec.NodeName + ", which does not exist", nil
	case err != nil:
		return nil, "", err
	}
	kind := st.cluster.ExternalNodeAddress()
	for _, a := range node.Status.Addresses {
		if a.Type == kind && a.Address != "" {
			return &resources.PodAddress{Node: node.Name, Address: a.Address, Port: port}, "", nil
		}
	}
	return nil, fmt.Sprintf("an %s of its node %s", kind, node.Name), nil
}

// ingressHost is the load balancer's first ingress: its IP, else its host name.
func ingressHost(svc *corev1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}

// nodePort is the node port the API server allocated to the Service's client port.
func nodePort(svc *corev1.Service) int32 {
	for _, p := range svc.Spec.Ports {
		if p.Port == config.ServicePort {
			return p.NodePort
		}
	}
	return 0
}

// podServices are the per-pod Services the cluster needs now: one for every desired pod and for every
// pod that still exists (a leaving pod keeps its address until it is gone).
func (st *clusterState) podServices() []client.Object {
	c := st.cluster
	if !c.PodServices() {
		return nil
	}
	names := st.desiredAndExisting()
	out := make([]client.Object, 0, len(names))
	for _, name := range names {
		out = append(out, resources.PodService(c, name))
	}
	return out
}

// desiredAndExisting are the pods that need an external address: every desired pod and every pod that
// still exists (a leaving pod keeps its address until it is gone), sorted.
func (st *clusterState) desiredAndExisting() []string {
	names := st.cluster.DesiredPodNames()
	for name := range st.pods {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// removePodServices deletes the per-pod Services no pod needs: their pod is gone and not desired, or
// the cluster no longer has per-pod Services and the pod already runs without its external address
// (a pod still to roll keeps the address it advertises until its turn).
func (r *AerospikeClusterReconciler) removePodServices(ctx context.Context, st *clusterState) error {
	c := st.cluster
	list := &corev1.ServiceList{}
	if err := r.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingLabels(c.SelectorLabels()),
		client.HasLabels{ackov1alpha1.LabelPodService}); err != nil {
		return err
	}
	desired := c.DesiredPodNames()
	for i := range list.Items {
		svc := &list.Items[i]
		pod := svc.Labels[ackov1alpha1.LabelPodService]
		if !ownedBy(svc, c) || st.needsPodService(pod, desired) {
			continue
		}
		if err := r.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
			return err
		}
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventDeleted, "Delete", svc,
			"Deleted Service %s: pod %s no longer needs an external address", svc.Name, pod)
	}
	return nil
}

func (st *clusterState) needsPodService(pod string, desired []string) bool {
	if st.cluster.PodServices() {
		return st.pods[pod] != nil || slices.Contains(desired, pod)
	}
	return st.stillAdvertises(pod)
}

// stillAdvertises: the pod still runs a template from before external access changed (it rolls
// later), so its node advertises the external address it started with.
func (st *clusterState) stillAdvertises(pod string) bool {
	return st.pods[pod] != nil && st.isOutdated(pod)
}

// addressMoved reports a pod whose node advertises an external address that is no longer the pod's: its
// Kubernetes node's address changed, its Service was recreated with another node port, or its load
// balancer has another ingress. Its file already holds the new one, but asd reads it only when it starts,
// so the pod is recreated (under the safety rule, like any roll). Only a Ready pod's own node is judged,
// by a reading of the asd its container runs now, and only when the node advertises external addresses
// at all (one started without them runs another template, which the roll replaces anyway).
func (st *clusterState) addressMoved(pod *corev1.Pod) bool {
	want, ok := st.addresses[pod.Name]
	n, read := st.health.Nodes[pod.Name]
	if !ok || !read || n.Err != nil || !resources.PodReady(pod) {
		return false
	}
	started := resources.AerospikeStartedAt(pod)
	if started.IsZero() || st.health.NodeStarted(pod.Name).Before(started.Add(-readingSlack)) {
		return false // a reading of the asd of an earlier container
	}
	advertised := n.Facts.ServiceAlt
	if !st.cluster.AdvertisesAlternate() {
		advertised = n.Facts.ServiceStd
	}
	return advertised != "" &&
		!slices.Contains(strings.Split(advertised, ","), net.JoinHostPort(want.Address, strconv.Itoa(int(want.Port))))
}

// readingSlack is how far a node's start, estimated from its uptime in whole seconds, may lie before its
// container's start by the kubelet's clock.
const readingSlack = 2 * time.Second
