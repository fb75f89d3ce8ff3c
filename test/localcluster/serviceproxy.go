package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// LoadBalancerClass is the spec.loadBalancerClass the load-balancer stand-in serves, besides
// Services without a class. A Service of another class gets no ingress, as in a cluster without
// that class's controller.
const LoadBalancerClass = "acko.io/local-lb"

// How the proxy stand-in works. The local cluster has no kube-proxy and no cloud: nothing would
// answer a Service's nodePort, a Service's load-balancer ingress or a pod's hostPort. The service
// proxy plays both from the Services, Pods and Nodes, with plain TCP forwarders on this machine:
//   - a nodePort (Services of type NodePort and LoadBalancer) listens on every node's InternalIP and
//     ExternalIP and forwards to the Service's endpoints; with externalTrafficPolicy Local only a node
//     that hosts an endpoint listens, and forwards to the endpoints it hosts. Every kwok node's
//     InternalIP is 127.0.0.1: there a connection goes to an endpoint on any node.
//   - a Service of type LoadBalancer (of LoadBalancerClass, or of no class) gets an ingress IP from
//     Options.LoadBalancerNet in its status, for as long as it exists, and each of its ports listens
//     there and forwards to its endpoints.
//   - a container port with a hostPort listens on its node's InternalIP and ExternalIP (or its hostIP)
//     and forwards to the pod's IP; a second pod on that node with the same hostPort (which the
//     scheduler would not have placed there) gets nothing.
//
// A Service's endpoints are its running pods with an IP that its selector matches, ready ones only
// unless it publishes not-ready addresses, never a terminating one; the target port is the
// Service port's targetPort, by number or by the pod's port of that name. Like kube-proxy's
// conntrack flush, a connection whose endpoint goes (or whose rule goes) is closed, so an address
// that no longer routes stops answering. Only TCP is forwarded.

// Timing of the proxy's connections.
const (
	proxyDialTimeout = 3 * time.Second
	proxyKey         = "rules"
)

// serviceProxy keeps the forwarders and the load-balancer ingresses in step with the cluster.
type serviceProxy struct {
	kube     kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	lbNet    string // first three octets of the ingress IPs
	logf     func(format string, args ...any)
	queue    workqueue.TypedRateLimitingInterface[string]
	// Touched by the single worker only.
	forwarders map[string]*forwarder // listen address → its forwarder
	bindErrors map[string]string     // listen address → the error binding it, logged once
	ingress    map[types.UID]string  // Service → its ingress IP
}

// newServiceProxy registers the proxy's informers on factory (start it after this); lbNet is the
// first three octets of the ingress IPs.
func newServiceProxy(kube kubernetes.Interface, factory informers.SharedInformerFactory, lbNet string,
	logf func(string, ...any)) (*serviceProxy, error) {
	services, pods, nodes := factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	p := &serviceProxy{kube: kube, services: services.Lister(), pods: pods.Lister(), nodes: nodes.Lister(),
		lbNet: lbNet, logf: logf,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](
			100*time.Millisecond, 5*time.Second)),
		forwarders: map[string]*forwarder{}, bindErrors: map[string]string{}, ingress: map[types.UID]string{}}
	enqueue := func(any) { p.queue.Add(proxyKey) }
	for _, informer := range []cache.SharedIndexInformer{services.Informer(), pods.Informer(), nodes.Informer()} {
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}); err != nil {
			return nil, err
		}
		p.synced = append(p.synced, informer.HasSynced)
	}
	return p, nil
}

// run keeps the rules until ctx ends, then closes every listener and connection it opened.
func (p *serviceProxy) run(ctx context.Context) {
	defer p.closeAll()
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return
	}
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for {
		key, quit := p.queue.Get()
		if quit {
			return
		}
		if err := p.sync(ctx); err != nil {
			if ctx.Err() == nil {
				p.logf("service proxy: %v (retrying)", err)
			}
			p.queue.AddRateLimited(key)
		} else {
			p.queue.Forget(key)
		}
		p.queue.Done(key)
	}
}

func (p *serviceProxy) closeAll() {
	for addr, f := range p.forwarders {
		f.close()
		delete(p.forwarders, addr)
	}
}

// sync gives the load balancers their ingress, then makes the forwarders what the objects say.
func (p *serviceProxy) sync(ctx context.Context) error {
	services, err := p.services.List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := p.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	nodes, err := p.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	ingressErr := p.syncIngress(ctx, services)
	p.apply(p.rules(services, pods, nodes))
	return ingressErr
}

// servedLB: a Service of type LoadBalancer that the stand-in is the controller of.
func servedLB(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		(svc.Spec.LoadBalancerClass == nil || *svc.Spec.LoadBalancerClass == LoadBalancerClass)
}

// syncIngress gives every served load balancer an ingress IP of the pool and writes it to its
// status, and takes it back from Services that are gone or no longer served. A Service whose status
// holds an IP of the pool keeps it (a sync loop that restarted).
func (p *serviceProxy) syncIngress(ctx context.Context, services []*corev1.Service) error {
	errs := []error{p.releaseIngress(ctx, services)}
	taken := map[string]bool{}
	for _, ip := range p.ingress {
		taken[ip] = true
	}
	for _, svc := range services {
		if _, held := p.ingress[svc.UID]; held || !servedLB(svc) {
			continue
		}
		if ip := ingressIP(svc); strings.HasPrefix(ip, p.lbNet+".") && !taken[ip] {
			p.ingress[svc.UID], taken[ip] = ip, true
		}
	}
	for _, svc := range services {
		if !servedLB(svc) {
			continue
		}
		ip, ok := p.ingress[svc.UID]
		if !ok {
			if ip, ok = p.freeIP(); !ok {
				errs = append(errs, fmt.Errorf("no ingress IP left in %s.0/24 for %s/%s", p.lbNet, svc.Namespace, svc.Name))
				continue
			}
			p.ingress[svc.UID] = ip
			p.logf("+ ingress %s for load balancer %s/%s", ip, svc.Namespace, svc.Name)
		}
		if ingressIP(svc) != ip || len(svc.Status.LoadBalancer.Ingress) != 1 {
			errs = append(errs, p.writeIngress(ctx, svc, []corev1.LoadBalancerIngress{{IP: ip}}))
		}
	}
	return errors.Join(errs...)
}

// releaseIngress takes the ingress IPs back from Services that are gone or no longer served, and
// clears the status of the latter.
func (p *serviceProxy) releaseIngress(ctx context.Context, services []*corev1.Service) error {
	var errs []error
	exists := map[types.UID]*corev1.Service{}
	for _, svc := range services {
		exists[svc.UID] = svc
	}
	for uid, ip := range p.ingress {
		switch svc := exists[uid]; {
		case svc == nil:
			delete(p.ingress, uid)
			p.logf("- ingress %s (its Service is gone)", ip)
		case !servedLB(svc):
			delete(p.ingress, uid)
			p.logf("- ingress %s of %s/%s (no longer a load balancer of class %s)", ip, svc.Namespace, svc.Name,
				LoadBalancerClass)
			if ingressIP(svc) == ip {
				errs = append(errs, p.writeIngress(ctx, svc, nil))
			}
		}
	}
	return errors.Join(errs...)
}

// ingressIP is the first ingress IP of the Service's status, if any.
func ingressIP(svc *corev1.Service) string {
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return ""
	}
	return svc.Status.LoadBalancer.Ingress[0].IP
}

// freeIP is the lowest IP of the pool that no Service holds.
func (p *serviceProxy) freeIP() (string, bool) {
	held := map[string]bool{}
	for _, ip := range p.ingress {
		held[ip] = true
	}
	for n := 1; n < 255; n++ {
		if ip := fmt.Sprintf("%s.%d", p.lbNet, n); !held[ip] {
			return ip, true
		}
	}
	return "", false
}

func (p *serviceProxy) writeIngress(ctx context.Context, svc *corev1.Service, ingress []corev1.LoadBalancerIngress) error {
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer.Ingress = ingress
	_, err := p.kube.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// rule is what one listen address forwards to, and why (for the log).
type rule struct {
	backends []string // "podIP:port"
	reasons  []string
}

// ruleSet is the rules by listen address ("ip:port").
type ruleSet map[string]*rule

// add makes ip:port forward to backends too; no backend, no rule.
func (rs ruleSet) add(ip string, port int32, backends []string, reason string) {
	if len(backends) == 0 {
		return
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(int(port)))
	r := rs[addr]
	if r == nil {
		r = &rule{}
		rs[addr] = r
	}
	for _, b := range backends {
		if !slices.Contains(r.backends, b) {
			r.backends = append(r.backends, b)
		}
	}
	if !slices.Contains(r.reasons, reason) {
		r.reasons = append(r.reasons, reason)
	}
}

// rules are the forwarders the objects call for.
func (p *serviceProxy) rules(services []*corev1.Service, pods []*corev1.Pod, nodes []*corev1.Node) ruleSet {
	rules := ruleSet{}
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			p.addServiceRules(rules, svc, serviceEndpoints(svc, pods), nodes)
		}
	}
	for _, hp := range hostPorts(pods, nodes) {
		rules.add(hp.ip, hp.port, []string{hp.backend}, "hostPort of "+hp.pod)
	}
	return rules
}

// addServiceRules adds the rules of a Service's nodePorts and load-balancer ingress.
func (p *serviceProxy) addServiceRules(rules ruleSet, svc *corev1.Service, eps []*corev1.Pod, nodes []*corev1.Node) {
	name := svc.Namespace + "/" + svc.Name
	local := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	ingress, lb := p.ingress[svc.UID]
	for _, sp := range svc.Spec.Ports {
		if !isTCP(sp.Protocol) {
			continue
		}
		if sp.NodePort != 0 {
			for _, node := range nodes {
				backends := targets(eps, sp, func(pod *corev1.Pod) bool { return !local || pod.Spec.NodeName == node.Name })
				for _, ip := range nodeIPs(node) {
					rules.add(ip, sp.NodePort, backends, "nodePort of "+name)
				}
			}
		}
		if lb && servedLB(svc) {
			rules.add(ingress, sp.Port, targets(eps, sp, func(*corev1.Pod) bool { return true }), "load balancer "+name)
		}
	}
}

func isTCP(p corev1.Protocol) bool { return p == "" || p == corev1.ProtocolTCP }

// serviceEndpoints are the Service's endpoint pods.
func serviceEndpoints(svc *corev1.Service, pods []*corev1.Pod) []*corev1.Pod {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	var out []*corev1.Pod
	for _, pod := range pods {
		if pod.Namespace == svc.Namespace && selector.Matches(labels.Set(pod.Labels)) && running(pod) &&
			(svc.Spec.PublishNotReadyAddresses || podReady(pod)) {
			out = append(out, pod)
		}
	}
	return out
}

// targets are the addresses a Service port forwards to among the pods that keep says.
func targets(pods []*corev1.Pod, sp corev1.ServicePort, keep func(*corev1.Pod) bool) []string {
	var out []string
	for _, pod := range pods {
		if port, ok := targetPort(pod, sp); ok && keep(pod) {
			out = append(out, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))))
		}
	}
	return out
}

// targetPort is the pod's port a Service port forwards to: targetPort's number, the pod's port of
// that name, or the Service port itself when targetPort is not set.
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) (int32, bool) {
	switch {
	case sp.TargetPort.Type == intstr.String:
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal && isTCP(cp.Protocol) {
					return cp.ContainerPort, true
				}
			}
		}
		return 0, false
	case sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal, true
	default:
		return sp.Port, true
	}
}

// nodeIPs are the node's InternalIPs and ExternalIPs.
func nodeIPs(node *corev1.Node) []string {
	var ips []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			ips = append(ips, a.Address)
		}
	}
	return ips
}

// hostPortRule is one address a pod's hostPort listens on.
type hostPortRule struct {
	ip, backend, pod string
	port             int32
}

// hostPortClaim is a node's hostPort (on one hostIP, or on all when empty).
type hostPortClaim struct {
	node, ip string
	port     int32
}

// hostPorts are the listen addresses of the running pods' hostPorts, the oldest pod first on a
// node where two ask for the same one.
func hostPorts(pods []*corev1.Pod, nodes []*corev1.Node) []hostPortRule {
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	claimed := map[hostPortClaim]bool{}
	var out []hostPortRule
	for _, pod := range pods {
		if node := byName[pod.Spec.NodeName]; node != nil && running(pod) {
			out = append(out, podHostPorts(pod, node, claimed)...)
		}
	}
	return out
}

// podHostPorts are the listen addresses of the pod's hostPorts that no other pod claimed on its node.
func podHostPorts(pod *corev1.Pod, node *corev1.Node, claimed map[hostPortClaim]bool) []hostPortRule {
	var out []hostPortRule
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			claim := hostPortClaim{node: node.Name, ip: cp.HostIP, port: cp.HostPort}
			if cp.HostPort == 0 || !isTCP(cp.Protocol) || claimed[claim] {
				continue
			}
			claimed[claim] = true
			ips := nodeIPs(node)
			if cp.HostIP != "" && cp.HostIP != "0.0.0.0" {
				ips = []string{cp.HostIP}
			}
			backend := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(cp.ContainerPort)))
			for _, ip := range ips {
				out = append(out, hostPortRule{ip: ip, port: cp.HostPort, backend: backend,
					pod: pod.Namespace + "/" + pod.Name})
			}
		}
	}
	return out
}

// apply opens, changes and closes forwarders to match rules.
func (p *serviceProxy) apply(rules ruleSet) {
	for addr, f := range p.forwarders {
		if rules[addr] == nil {
			f.close()
			delete(p.forwarders, addr)
			p.logf("- forward %s (%s)", addr, strings.Join(f.reasons, ", "))
		}
	}
	for addr := range p.bindErrors {
		if rules[addr] == nil {
			delete(p.bindErrors, addr)
		}
	}
	for addr, r := range rules {
		slices.Sort(r.backends)
		if f := p.forwarders[addr]; f != nil {
			if f.update(r.backends) {
				p.logf("~ forward %s → %s (%s)", addr, strings.Join(r.backends, ", "), strings.Join(r.reasons, ", "))
			}
			f.reasons = r.reasons
			continue
		}
		f, err := listen(addr, r.backends)
		if err != nil {
			if p.bindErrors[addr] != err.Error() {
				p.logf("! forward %s (%s): %v", addr, strings.Join(r.reasons, ", "), err)
				p.bindErrors[addr] = err.Error()
			}
			continue
		}
		delete(p.bindErrors, addr)
		f.reasons = r.reasons
		p.forwarders[addr] = f
		p.logf("+ forward %s → %s (%s)", addr, strings.Join(r.backends, ", "), strings.Join(r.reasons, ", "))
	}
}

// forwarder accepts connections on one address and splices each with a connection to one of its
// backends, in turn.
type forwarder struct {
	ln      net.Listener
	reasons []string // touched by the proxy's worker only

	mu       sync.Mutex
	backends []string
	next     int
	closed   bool
	conns    map[*splice]struct{}
}

// splice is a client's connection and the one to the backend it was given.
type splice struct {
	client, backend net.Conn
	target          string
}

func (s *splice) close() {
	_ = s.client.Close()
	_ = s.backend.Close()
}

func listen(addr string, backends []string) (*forwarder, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, backends: backends, conns: map[*splice]struct{}{}}
	go f.serve()
	return f, nil
}

func (f *forwarder) serve() {
	for {
		client, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		go f.forward(client)
	}
}

// forward connects the client to a backend and copies both ways until either side closes.
func (f *forwarder) forward(client net.Conn) {
	target, ok := f.pick()
	if !ok {
		_ = client.Close()
		return
	}
	backend, err := net.DialTimeout("tcp", target, proxyDialTimeout)
	if err != nil {
		_ = client.Close()
		return
	}
	s := &splice{client: client, backend: backend, target: target}
	if !f.track(s) {
		s.close()
		return
	}
	defer f.untrack(s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(backend, client)
		s.close()
	}()
	_, _ = io.Copy(client, backend)
	s.close()
	<-done
}

func (f *forwarder) pick() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || len(f.backends) == 0 {
		return "", false
	}
	f.next = (f.next + 1) % len(f.backends)
	return f.backends[f.next], true
}

// track registers a live connection, unless its backend went while it was dialled.
func (f *forwarder) track(s *splice) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || !slices.Contains(f.backends, s.target) {
		return false
	}
	f.conns[s] = struct{}{}
	return true
}

func (f *forwarder) untrack(s *splice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, s)
}

// update sets the backends and closes the connections to those that went; it reports whether
// they changed.
func (f *forwarder) update(backends []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.Equal(f.backends, backends) {
		return false
	}
	f.backends = backends
	for s := range f.conns {
		if !slices.Contains(backends, s.target) {
			s.close()
		}
	}
	return true
}

// close stops listening and closes every live connection.
func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	_ = f.ln.Close()
	for s := range f.conns {
		s.close()
	}
}
