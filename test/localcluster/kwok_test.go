package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNodesManifest(t *testing.T) {
	o := LocalOptions()
	b, err := o.nodesManifest()
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	zones := map[string][]string{}
	var plain *corev1.Node
	for {
		var n corev1.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if n.Labels[LabelKwok] == TestInitPlain {
			plain = &n
			continue
		}
		zones[n.Labels[LabelZone]] = append(zones[n.Labels[LabelZone]], n.Name)
	}
	if len(zones) != len(o.Zones) {
		t.Fatalf("zones %v", zones)
	}
	for z, nodes := range zones {
		// A drain of one node needs another in the zone for the pods pinned there.
		if len(nodes) < 2 || nodes[0] == nodes[1] {
			t.Errorf("zone %s has nodes %v, want at least 2", z, nodes)
		}
	}
	if plain == nil || plain.Labels[LabelTestInit] != TestInitPlain || len(plain.Spec.Taints) != 1 ||
		plain.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("plain node %+v", plain)
	}
}

func TestKwokFilesAreEmbedded(t *testing.T) {
	for _, k := range LocalOptions().kwokInstances() {
		for _, s := range k.stages {
			if _, err := kwokFiles.ReadFile("kwok/" + s); err != nil {
				t.Error(err)
			}
		}
	}
}

// Every kwok node has an ExternalIP of its own, and the presets' (local, each e2e instance) never meet.
func TestNodeExternalIPs(t *testing.T) {
	local := LocalOptions().nodeExternalIPs()
	all := []map[string]string{local}
	for i := range E2EInstances {
		all = append(all, E2EOptions(i).nodeExternalIPs())
	}
	if len(local) != len(LocalOptions().zoneNodes())+1 || local["kwok-zone-a-1"] != "127.0.1.1" ||
		local[PlainNode] != fmt.Sprintf("127.0.1.%d", len(local)) {
		t.Fatalf("local ExternalIPs %v", local)
	}
	seen := map[string]bool{}
	for _, ips := range all {
		for node, ip := range ips {
			if seen[ip] || net.ParseIP(ip) == nil || !net.ParseIP(ip).IsLoopback() || ip == "127.0.0.1" {
				t.Errorf("node %s: ExternalIP %s shared or not a loopback address of its own", node, ip)
			}
			seen[ip] = true
		}
	}
}

// The presets side by side: no port, state directory, address range or bridge is shared.
func TestPresetsShareNothing(t *testing.T) {
	presets := []Options{LocalOptions()}
	for i := range E2EInstances {
		presets = append(presets, E2EOptions(i))
	}
	owner := map[string]int{}
	claim := func(preset int, what string) {
		if other, taken := owner[what]; taken {
			t.Errorf("presets %d and %d share %s", other, preset, what)
		}
		owner[what] = preset
	}
	var ranges []netip.Prefix
	for i, o := range presets {
		p := o.Ports
		for _, port := range []int{p.Etcd, p.EtcdPeer, p.APIServer, p.ControllerManager, p.Scheduler, p.Kwok,
			p.KwokPlain, p.KwokReal, p.Metrics, p.Health, p.Webhook, p.Prometheus, p.S3} {
			claim(i, fmt.Sprintf("port %d", port))
		}
		// The simulator's shards take the ports after its first (up to 10 in `make bench-scale`).
		for shard := range 10 {
			claim(i, fmt.Sprintf("port %d", p.Aerosim+shard))
		}
		claim(i, "directory "+o.Dir)
		claim(i, "bridge "+o.RealBridge)
		for _, r := range []string{o.PodCIDR, o.PlainPodCIDR, o.NodeExternalNet + ".0/24", o.LoadBalancerNet + ".0/24"} {
			ranges = append(ranges, netip.MustParsePrefix(r))
		}
		ranges = append(ranges, o.RealSubnet)
		if !o.RealSubnet.Contains(netip.MustParsePrefix(o.RealPodCIDR).Addr()) {
			t.Errorf("preset %d: real pods' range %s outside its subnet %s", i, o.RealPodCIDR, o.RealSubnet)
		}
	}
	for i, a := range ranges {
		for _, b := range ranges[i+1:] {
			if a.Overlaps(b) {
				t.Errorf("address ranges %s and %s overlap", a, b)
			}
		}
	}
}

// The ExternalIP joins the addresses kwok wrote; InternalIP (exec and logs) stays.
func TestSetExternalIPs(t *testing.T) {
	o := LocalOptions()
	o.Progress = io.Discard
	var nodes []runtime.Object
	for name := range o.nodeExternalIPs() {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
				{Type: corev1.NodeHostName, Address: name}}}})
	}
	kube := fake.NewClientset(nodes...)
	if err := New(o).setExternalIPs(context.Background(), kube); err != nil {
		t.Fatal(err)
	}
	n, err := kube.CoreV1().Nodes().Get(context.Background(), "kwok-zone-b-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "127.0.1.4"},
		{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: "kwok-zone-b-2"}}
	if !reflect.DeepEqual(n.Status.Addresses, want) {
		t.Errorf("addresses %v, want %v", n.Status.Addresses, want)
	}
}

// Without real nodes, no real node and two kwok.
func TestNoRealNodeManifest(t *testing.T) {
	o := LocalOptions()
	b, err := o.nodesManifest()
	if err != nil {
		t.Fatal(err)
	}
	if found := nodeNamed(t, b, RealNode); found != nil || len(o.kwokInstances()) != 2 {
		t.Fatalf("real node without RealNodes: %v, %d kwok", found, len(o.kwokInstances()))
	}
}

// With real nodes, one more node, labelled and tainted for them, managed by its own kwok that finds
// only its forwarding shims, with an ExternalIP after the plain node's.
func TestRealNodeManifest(t *testing.T) {
	o := LocalOptions()
	o.RealNodes = true
	b, err := o.nodesManifest()
	if err != nil {
		t.Fatal(err)
	}
	found := nodeNamed(t, b, RealNode)
	if found == nil || found.Labels[LabelTestBackend] != TestBackendReal || found.Labels[LabelKwok] != TestBackendReal ||
		len(found.Spec.Taints) != 1 || found.Spec.Taints[0].Key != LabelTestBackend {
		t.Fatalf("real node: %+v", found)
	}
	instances := o.kwokInstances()
	k := instances[len(instances)-1]
	if k.mode != TestBackendReal || k.cidr != o.RealPodCIDR || !o.RealSubnet.Contains(netip.MustParseAddr("198.18.1.1")) {
		t.Fatalf("real kwok: %+v", k)
	}
	if env := o.kwokSpec(k).env; !slices.Contains(env, "PATH="+o.shimDir(k)) {
		t.Fatalf("the real kwok finds more than its forwarding shims: %v", env)
	}
	if ips := o.nodeExternalIPs(); ips[RealNode] != fmt.Sprintf("127.0.1.%d", len(ips)) {
		t.Fatalf("external IPs %v", ips)
	}
}

// nodeNamed is the node of that name in a manifest, or nil.
func nodeNamed(t *testing.T, manifest []byte, name string) *corev1.Node {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		var n corev1.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		if n.Name == name {
			return &n
		}
	}
}
