package liveconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/live"
	"github.com/acko-io/acko/internal/config/params"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/testcluster"
)

var (
	ownConfig       = path.Join(config.ConfigDir, config.FileName)
	projectedConfig = path.Join(config.ConfigMapDir, config.FileName)
)

// simPods stands in for exec into the pods: it reads and copies the pods' config files in the
// simulator, as the local cluster's cat and cp shims do. A warm restart is never expected.
type simPods struct{ sim *aerosim.Sim }

func nodeName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

func (p simPods) PrepareRestart(context.Context, *corev1.Pod, string) error {
	return errors.New("a live change must never restart asd")
}

func (p simPods) SignalRestart(context.Context, *corev1.Pod) error {
	return errors.New("a live change must never restart asd")
}

func (p simPods) ReadConfigs(_ context.Context, pod *corev1.Pod) (own, projected string, err error) {
	if own, err = p.sim.ReadFile(nodeName(pod), ownConfig); err != nil {
		return "", "", err
	}
	projected, err = p.sim.ReadFile(nodeName(pod), projectedConfig)
	return own, projected, err
}

func (p simPods) CopyConfig(_ context.Context, pod *corev1.Pod, configHash string) error {
	conf, err := p.sim.ReadFile(nodeName(pod), projectedConfig)
	if err != nil || config.Hash(conf) != configHash {
		return fmt.Errorf("projected config %s, want %s: %v", config.Hash(conf), configHash, err)
	}
	return p.sim.WriteFile(nodeName(pod), ownConfig, conf)
}

// benchCluster starts the simulated nodes of an n-node AerospikeCluster on its rendered config, each
// with its own copy and the ConfigMap's file, and waits until they form one stable cluster.
func benchCluster(b *testing.B, s *aerosim.Sim, c *ackov1alpha1.AerospikeCluster) []*corev1.Pod {
	b.Helper()
	template := render(b, c)
	dns := map[string][]string{}
	var pods []*corev1.Pod
	for i, name := range c.DesiredPodNames() {
		conf := config.PodFile(template, config.PodValues{NodeID: config.NodeID(0, int32(i))})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ackov1alpha1.AerospikeContainerName, Image: c.Spec.Image}}}}
		st, err := s.AddNode(aerosim.NodeSpec{Name: nodeName(pod), Image: c.Spec.Image, ConfigFile: ownConfig,
			Files: map[string]string{ownConfig: conf, projectedConfig: conf}})
		if err != nil {
			b.Fatal(err)
		}
		pod.Status.PodIP, _, _ = net.SplitHostPort(st.Addr)
		dns[c.PodDNSName(name, ackov1alpha1.DefaultClusterDomain)] = []string{pod.Status.PodIP}
		pods = append(pods, pod)
	}
	if err := s.SetDNS(dns); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, why := stable(context.Background(), pods)
		if ok {
			return pods
		}
		if time.Now().After(deadline) {
			b.Fatalf("the nodes formed no stable cluster: %s", why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// render is the aerospike.conf template of the cluster's first rack (config.PodFile gives a pod's file).
func render(tb testing.TB, c *ackov1alpha1.AerospikeCluster) string {
	tb.Helper()
	conf, err := config.Render(c, c.RackPlan()[0], ackov1alpha1.DefaultClusterDomain)
	if err != nil {
		tb.Fatal(err)
	}
	return conf
}

var infoClient = aerospike.NewClient(aerospike.ClientOptions{})

// stable is the stability gate the rolling restart passes before each node: one reading of every node.
func stable(ctx context.Context, pods []*corev1.Pod) (bool, string) {
	h := aerospike.ClusterHealth{ExpectedSize: len(pods), Nodes: map[string]aerospike.NodeHealth{}}
	names := make([]string, len(pods))
	for i, pod := range pods {
		addr := net.JoinHostPort(pod.Status.PodIP, "3000")
		facts, err := aerospike.ReadNodeFacts(ctx, infoClient, addr, len(pods), false)
		h.Nodes[pod.Name] = aerospike.NodeHealth{Addr: addr, Facts: facts, Err: err, ReadAt: time.Now()}
		names[i] = pod.Name
	}
	return h.Gate(names, time.Now())
}

// BenchmarkLiveChange8Nodes measures a dynamic config change (service.proto-fd-max) applied to an
// 8-node cluster of simulated nodes over TCP as the rolling restart applies it: one node at a time,
// each after the stability gate, each with set-config and its read-back by get-config. It reports the
// slowest node's apply (ms/node, the goal: under 200 ms) and the whole change (ms/change), and
// fails if any node restarted or does not report the new value. The exec into the pod (reading its
// files) is the simulator's file store here; in a cluster it adds the API server's exec round trips.
func BenchmarkLiveChange8Nodes(b *testing.B) {
	s, err := aerosim.New(aerosim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	c := testcluster.New("bench", "live", 8)
	pods := benchCluster(b, s, c)
	applier := &Applier{Pods: simPods{sim: s}, Info: infoClient}
	ctx := context.Background()
	var slowest, whole time.Duration
	value := 20000
	running := render(b, c)
	for b.Loop() {
		value++
		c.Spec.AerospikeConfig.Value["service"] = map[string]any{"proto-fd-max": int64(value)}
		template := render(b, c)
		changes := make([]Change, len(pods))
		for i, pod := range pods {
			own := config.PodValues{NodeID: config.NodeID(0, int32(i))}
			if err := s.WriteFile(nodeName(pod), projectedConfig, config.PodFile(template, own)); err != nil {
				b.Fatal(err)
			}
			// The operator's plan, made in its reconcile from the files it keeps.
			plan, err := live.Compute(config.PodFile(running, own), config.PodFile(template, own), params.Newest())
			if err != nil {
				b.Fatal(err)
			}
			changes[i] = Change{From: config.Hash(running), To: config.Hash(template), Plan: &plan}
		}
		running = template
		start := time.Now()
		for i, pod := range pods {
			if ok, why := stable(ctx, pods); !ok {
				b.Fatalf("gate before %s: %s", pod.Name, why)
			}
			t := time.Now()
			if _, err := applier.Apply(ctx, pod, changes[i]); err != nil {
				b.Fatal(err)
			}
			slowest = max(slowest, time.Since(t))
		}
		whole = max(whole, time.Since(start))
		checkApplied(b, s, pods, strconv.Itoa(value))
	}
	b.ReportMetric(float64(slowest.Microseconds())/1000, "ms/node")
	b.ReportMetric(float64(whole.Microseconds())/1000, "ms/change")
}

// checkApplied: every node runs the value, reports it through get-config, and never restarted (nor
// crashed).
func checkApplied(b *testing.B, s *aerosim.Sim, pods []*corev1.Pod, value string) {
	b.Helper()
	for _, pod := range pods {
		st, err := s.Node(nodeName(pod))
		if err != nil || st.Restarts != 0 || st.Crashes != 0 || !st.ConfigDiffers {
			b.Fatalf("%s restarted or runs its file's values: %+v, %v", pod.Name, st, err)
		}
		cmd := "get-config:context=service"
		answers, err := infoClient.Info(context.Background(), net.JoinHostPort(pod.Status.PodIP, "3000"), cmd)
		if got := aerospike.ParseKV(answers[cmd])["proto-fd-max"]; err != nil || got != value {
			b.Fatalf("%s: get-config proto-fd-max=%s, want %s (%v)", pod.Name, got, value, err)
		}
	}
}
