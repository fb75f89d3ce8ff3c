package localcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// Addresses of the proxy's test, away from those of the local and e2e clusters: two nodes sharing
// an InternalIP (as kwok's do) with ExternalIPs of their own, the load balancers' pool, the pods.
const (
	testInternalIP = "127.0.90.1"
	testLBNet      = "127.0.92"
)

func testExternalIP(node int) string { return fmt.Sprintf("127.0.91.%d", node) }
func testPodIP(n int) string         { return fmt.Sprintf("127.0.93.%d", n) }

// proxyWorld is a fake cluster with the service proxy running on it.
type proxyWorld struct {
	t    *testing.T
	kube kubernetes.Interface
}

func newProxyWorld(t *testing.T) *proxyWorld {
	t.Helper()
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	p, err := newServiceProxy(kube, factory, testLBNet, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	factory.Start(ctx.Done())
	go func() {
		defer close(done)
		p.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
	w := &proxyWorld{t: t, kube: kube}
	for i := 1; i <= 2; i++ {
		w.create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + strconv.Itoa(i)},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: testInternalIP},
				{Type: corev1.NodeExternalIP, Address: testExternalIP(i)}, {Type: corev1.NodeHostName, Address: "node"}}}})
	}
	return w
}

func (w *proxyWorld) create(obj any) {
	w.t.Helper()
	ctx := context.Background()
	var err error
	switch o := obj.(type) {
	case *corev1.Node:
		_, err = w.kube.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Pod:
		_, err = w.kube.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Service:
		_, err = w.kube.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// pod starts a TCP "pod" at its IP that says its name, then echoes, and creates its running Pod on
// node with the port named service; hostPort, when not 0, is that port's.
func (w *proxyWorld) pod(name string, ip, node int, ready bool, hostPort int32) *corev1.Pod {
	w.t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(testPodIP(ip), "0"))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = fmt.Fprintln(c, name)
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	readiness := corev1.ConditionFalse
	if ready {
		readiness = corev1.ConditionTrue
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		Labels: map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": name}},
		Spec: corev1.PodSpec{NodeName: "node-" + strconv.Itoa(node), Containers: []corev1.Container{{Name: "aerospike-server",
			Ports: []corev1.ContainerPort{{Name: "service", ContainerPort: int32(ln.Addr().(*net.TCPAddr).Port),
				HostPort: hostPort}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: testPodIP(ip),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: readiness}}}}
	w.create(pod)
	return pod
}

// service creates a Service of the pods that selector selects, with port 3000 to the pods' port
// named service.
func (w *proxyWorld) service(name string, typ corev1.ServiceType, nodePort int32, policy corev1.ServiceExternalTrafficPolicy,
	notReady bool, selector map[string]string) {
	w.t.Helper()
	w.create(newService(name, typ, nodePort, policy, notReady, selector))
}

func newService(name string, typ corev1.ServiceType, nodePort int32, policy corev1.ServiceExternalTrafficPolicy,
	notReady bool, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.ServiceSpec{Type: typ, Selector: selector, ExternalTrafficPolicy: policy,
			PublishNotReadyAddresses: notReady,
			Ports: []corev1.ServicePort{{Name: "service", Port: 3000, TargetPort: intstr.FromString("service"),
				NodePort: nodePort}}}}
}

func podSelector(pod string) map[string]string {
	return map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": pod}
}

// freePort is a port nothing listens on at the test's addresses.
func freePort(t *testing.T) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", testInternalIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// conn is a connection through the proxy, and the name of the pod that answered it.
type conn struct {
	net.Conn
	r   *bufio.Reader
	pod string
}

func dial(ip string, port int32) (*conn, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))), time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	name, err := r.ReadString('\n')
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("no pod answered: %w", err)
	}
	return &conn{Conn: c, r: r, pod: strings.TrimSpace(name)}, nil
}

// answers waits until a connection to ip:port reaches pod.
func answers(t *testing.T, ip string, port int32, pod string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := dial(ip, port)
		if err == nil {
			_ = c.Close()
			if c.pod == pod {
				return
			}
			err = fmt.Errorf("pod %s answered", c.pod)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:%d: %v, want pod %s", ip, port, err, pod)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refused checks that nothing listens at ip:port.
func refused(t *testing.T, ip string, port int32) {
	t.Helper()
	if c, err := dial(ip, port); err == nil {
		_ = c.Close()
		t.Fatalf("%s:%d reached pod %s, want nothing listening", ip, port, c.pod)
	}
}

// NodePorts: with externalTrafficPolicy Local, only the node of the endpoint listens (and the
// InternalIP all nodes share); with Cluster, every node. A not-ready pod is an endpoint only of a
// Service that publishes not-ready addresses.
func TestServiceProxyNodePort(t *testing.T) {
	w := newProxyWorld(t)
	w.pod("db-0", 1, 1, false, 0)
	w.pod("db-1", 2, 2, true, 0)
	local, cluster, ready := freePort(t), freePort(t), freePort(t)
	w.service("db-0", corev1.ServiceTypeNodePort, local, corev1.ServiceExternalTrafficPolicyLocal, true, podSelector("db-0"))
	w.service("db-1", corev1.ServiceTypeNodePort, cluster, corev1.ServiceExternalTrafficPolicyCluster, true,
		podSelector("db-1"))
	w.service("db", corev1.ServiceTypeNodePort, ready, corev1.ServiceExternalTrafficPolicyCluster, false,
		map[string]string{"app": "db"})

	answers(t, testExternalIP(1), local, "db-0")
	answers(t, testInternalIP, local, "db-0")
	refused(t, testExternalIP(2), local)
	answers(t, testExternalIP(1), cluster, "db-1")
	answers(t, testExternalIP(2), cluster, "db-1")
	for range 4 {
		answers(t, testExternalIP(1), ready, "db-1")
	}
}

// A load balancer of the stand-in's class, or of none, gets an ingress IP of the pool and forwards
// its port there; one of another class gets nothing. A deleted one's listener goes.
func TestServiceProxyLoadBalancer(t *testing.T) {
	w := newProxyWorld(t)
	w.pod("db-0", 1, 1, true, 0)
	w.service("lb-0", corev1.ServiceTypeLoadBalancer, 0, corev1.ServiceExternalTrafficPolicyCluster, true,
		podSelector("db-0"))
	for name, class := range map[string]string{"lb-ours": LoadBalancerClass, "lb-other": "example.com/other"} {
		svc := newService(name, corev1.ServiceTypeLoadBalancer, 0, corev1.ServiceExternalTrafficPolicyCluster, true,
			podSelector("db-0"))
		svc.Spec.LoadBalancerClass = ptrTo(class)
		w.create(svc)
	}
	ctx := context.Background()
	ingress := func(name string) string {
		svc, err := w.kube.CoreV1().Services("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ingressIP(svc)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ingress("lb-0") == "" || ingress("lb-ours") == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no ingress: lb-0 %q, lb-ours %q", ingress("lb-0"), ingress("lb-ours"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	ip0, ipOurs := ingress("lb-0"), ingress("lb-ours")
	if !strings.HasPrefix(ip0, testLBNet+".") || !strings.HasPrefix(ipOurs, testLBNet+".") || ip0 == ipOurs {
		t.Fatalf("ingress IPs %s and %s, want two of %s.0/24", ip0, ipOurs, testLBNet)
	}
	answers(t, ip0, 3000, "db-0")
	answers(t, ipOurs, 3000, "db-0")
	if ip := ingress("lb-other"); ip != "" {
		t.Errorf("a load balancer of another class got ingress %s", ip)
	}
	if err := w.kube.CoreV1().Services("ns").Delete(ctx, "lb-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		c, err := dial(ip0, 3000)
		if err != nil {
			break
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the deleted load balancer still forwards")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A hostPort listens on its node's addresses only; a second pod asking for it on that node gets
// nothing.
func TestServiceProxyHostPort(t *testing.T) {
	w := newProxyWorld(t)
	port := freePort(t)
	w.pod("db-0", 1, 2, true, port)
	answers(t, testExternalIP(2), port, "db-0")
	answers(t, testInternalIP, port, "db-0")
	refused(t, testExternalIP(1), port)
	second := w.pod("db-1", 2, 2, true, port)
	second.CreationTimestamp = metav1.NewTime(time.Now().Add(time.Hour))
	if _, err := w.kube.CoreV1().Pods("ns").Update(context.Background(), second, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for range 4 {
		answers(t, testExternalIP(2), port, "db-0")
	}
}

// A live connection is spliced both ways, and closed when its rule goes (its Service deleted) or
// its endpoint does (the pod no longer running).
func TestServiceProxyClosesLiveConnections(t *testing.T) {
	w := newProxyWorld(t)
	pod := w.pod("db-0", 1, 1, true, 0)
	np, np2 := freePort(t), freePort(t)
	w.service("db-0", corev1.ServiceTypeNodePort, np, corev1.ServiceExternalTrafficPolicyLocal, true, podSelector("db-0"))
	w.service("db", corev1.ServiceTypeNodePort, np2, corev1.ServiceExternalTrafficPolicyCluster, true,
		podSelector("db-0"))
	answers(t, testExternalIP(1), np, "db-0")
	answers(t, testExternalIP(1), np2, "db-0")
	byRule, err := dial(testExternalIP(1), np)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = byRule.Close() }()
	byEndpoint, err := dial(testExternalIP(1), np2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = byEndpoint.Close() }()
	if _, err := fmt.Fprintln(byRule, "ping"); err != nil {
		t.Fatal(err)
	}
	if line, err := byRule.r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo through the proxy: %q, %v", line, err)
	}

	ctx := context.Background()
	if err := w.kube.CoreV1().Services("ns").Delete(ctx, "db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	assertClosed(t, byRule)
	pod.Status.Phase = corev1.PodSucceeded
	if _, err := w.kube.CoreV1().Pods("ns").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	assertClosed(t, byEndpoint)
	refused(t, testExternalIP(1), np2)
}

func assertClosed(t *testing.T, c *conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.r.ReadString('\n'); err != io.EOF {
		t.Fatalf("the connection is still open (%v)", err)
	}
}
