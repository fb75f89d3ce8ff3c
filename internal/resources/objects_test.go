package resources

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/test/testcluster"
)

// The cluster tests start from, and its variations.
var (
	newCluster  = testcluster.Build
	withRacks   = testcluster.WithRacks
	withVolumes = testcluster.WithVolumes
	withPod     = testcluster.WithPod
	volume      = testcluster.Volume
)

// allChildren builds every child of c, as the reconciler would.
func allChildren(t *testing.T, c *v1alpha1.AerospikeCluster) []client.Object {
	t.Helper()
	plan := c.RackPlan()
	objs := make([]client.Object, 0, 3+2*len(plan))
	objs = append(objs, HeadlessService(c), ClientService(c), PodDisruptionBudget(c, 1, 1))
	for _, rack := range plan {
		conf, err := config.Render(c, rack, v1alpha1.DefaultClusterDomain)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, ConfigMap(c, rack, conf, nil), StatefulSet(c, rack, config.Hash(conf)))
	}
	return objs
}

func TestEveryChildIsOwnedAndLabelled(t *testing.T) {
	for _, c := range []*v1alpha1.AerospikeCluster{newCluster(), newCluster(withRacks(v1alpha1.Rack{ID: 1}))} {
		for _, obj := range allChildren(t, c) {
			refs := obj.GetOwnerReferences()
			if len(refs) != 1 {
				t.Fatalf("%T %s: owner references %v", obj, obj.GetName(), refs)
			}
			want := metav1.OwnerReference{APIVersion: "acko.io/v1alpha1", Kind: "AerospikeCluster", Name: "aero",
				UID: "uid-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
			if !ownerRefEqual(refs[0], want) {
				t.Errorf("%T %s: owner reference %+v, want %+v", obj, obj.GetName(), refs[0], want)
			}
			if obj.GetNamespace() != "db" {
				t.Errorf("%T %s: namespace %q", obj, obj.GetName(), obj.GetNamespace())
			}
			if !containsAll(obj.GetLabels(), c.SelectorLabels()) {
				t.Errorf("%T %s: labels %v lack %v", obj, obj.GetName(), obj.GetLabels(), c.SelectorLabels())
			}
		}
	}
}

func ownerRefEqual(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		ptr.Deref(a.Controller, false) == ptr.Deref(b.Controller, false) &&
		ptr.Deref(a.BlockOwnerDeletion, false) == ptr.Deref(b.BlockOwnerDeletion, false)
}

func TestChildNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster *v1alpha1.AerospikeCluster
		want    []string // headless, client, PDB, then ConfigMap and StatefulSet per rack
	}{
		{"single rack", newCluster(), []string{"aero-headless", "aero", "aero", "aero-config", "aero"}},
		{"multi rack", newCluster(withRacks(v1alpha1.Rack{ID: 2}, v1alpha1.Rack{ID: 1})), []string{
			"aero-headless", "aero", "aero", "aero-1-config", "aero-1", "aero-2-config", "aero-2",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := allChildren(t, tc.cluster)
			got := make([]string, 0, len(objs))
			for _, o := range objs {
				got = append(got, o.GetName())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("names = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConfigMap(t *testing.T) {
	c := newCluster(withRacks(v1alpha1.Rack{ID: 4}))
	c.Spec.Size = 2
	const template = "service {\n\tnode-id <per-pod>\n}\n"
	cm := ConfigMap(c, c.RackPlan()[0], template, nil)
	trailer := "# acko.io/config-hash " + config.Hash(template) + "\n"
	if want := map[string]string{
		"aerospike.conf": template,
		"aero-4-0.conf":  "service {\n\tnode-id A40000\n}\n" + trailer,
		"aero-4-1.conf":  "service {\n\tnode-id A40001\n}\n" + trailer,
	}; !maps.Equal(cm.Data, want) {
		t.Errorf("data = %v, want %v", cm.Data, want)
	}
	if cm.Labels[v1alpha1.LabelRack] != "4" {
		t.Errorf("labels = %v, want rack 4", cm.Labels)
	}
}

func TestServices(t *testing.T) {
	c := newCluster()
	headless := HeadlessService(c)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless: clusterIP %q publishNotReadyAddresses %v", headless.Spec.ClusterIP,
			headless.Spec.PublishNotReadyAddresses)
	}
	wantPorts := map[string]int32{"service": 3000, "fabric": 3001, "heartbeat": 3002, "admin": 3003}
	if got := portMap(headless.Spec.Ports); !maps.Equal(got, wantPorts) {
		t.Errorf("headless ports = %v, want %v", got, wantPorts)
	}
	client := ClientService(c)
	if client.Spec.Type != corev1.ServiceTypeClusterIP || client.Spec.ClusterIP != "" ||
		client.Spec.PublishNotReadyAddresses {
		t.Errorf("client service spec = %+v", client.Spec)
	}
	if got := portMap(client.Spec.Ports); !maps.Equal(got, map[string]int32{"service": 3000}) {
		t.Errorf("client ports = %v", got)
	}
	for _, svc := range []*corev1.Service{headless, client} {
		if !maps.Equal(svc.Spec.Selector, c.SelectorLabels()) {
			t.Errorf("%s selector = %v", svc.Name, svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort != intstr.FromInt32(p.Port) || p.Protocol != corev1.ProtocolTCP {
				t.Errorf("%s port %+v", svc.Name, p)
			}
		}
	}
}

func portMap(ports []corev1.ServicePort) map[string]int32 {
	m := map[string]int32{}
	for _, p := range ports {
		m[p.Name] = p.Port
	}
	return m
}

func TestPodDisruptionBudget(t *testing.T) {
	c := newCluster(withRacks(v1alpha1.Rack{ID: 1}, v1alpha1.Rack{ID: 2}))
	for _, n := range []int{0, 1, 2} {
		pdb := PodDisruptionBudget(c, n, 2)
		if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(int32(n)) ||
			pdb.Spec.MinAvailable != nil || pdb.Spec.UnhealthyPodEvictionPolicy != nil {
			t.Errorf("budget = %+v, want maxUnavailable %d and the default unhealthy pod eviction policy", pdb.Spec, n)
		}
		if stable, ok := StableMaxUnavailable(pdb); !ok || stable != 2 {
			t.Errorf("maxUnavailable while stable = %d %t, want 2", stable, ok)
		}
	}
	pdb := PodDisruptionBudget(c, 1, 1)
	// One budget over every rack: a drain may take one pod of the whole cluster, not one per rack.
	if !maps.Equal(pdb.Spec.Selector.MatchLabels, c.SelectorLabels()) {
		t.Errorf("selector = %v", pdb.Spec.Selector)
	}
}

func TestPodService(t *testing.T) {
	c := newCluster(withRacks(v1alpha1.Rack{ID: 2}), func(c *v1alpha1.AerospikeCluster) {
		c.Spec.ExternalAccess = &v1alpha1.ExternalAccess{Type: v1alpha1.ExternalNodePort}
	})
	svc := PodService(c, "aero-2-1")
	switch {
	case svc.Name != "aero-2-1" || svc.Labels[v1alpha1.LabelPodService] != "aero-2-1":
		t.Errorf("name %s labels %v", svc.Name, svc.Labels)
	case svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal:
		t.Errorf("type %s policy %s: a NodePort keeps traffic on the pod's node, whose address it advertises",
			svc.Spec.Type, svc.Spec.ExternalTrafficPolicy)
	case !svc.Spec.PublishNotReadyAddresses:
		t.Error("not published before Ready: clients learn a node from its peers as soon as it joins")
	case svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != "aero-2-1" || svc.Spec.Selector[v1alpha1.LabelInstance] != "aero":
		t.Errorf("selector %v", svc.Spec.Selector)
	case !maps.Equal(portMap(svc.Spec.Ports), map[string]int32{"service": 3000}):
		t.Errorf("ports %v", svc.Spec.Ports)
	case len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].Name != "aero":
		t.Errorf("owners %v", svc.OwnerReferences)
	}
}

// Each pod's own file: under <pod>.conf, or <pod>_<node>.conf when its address is its node's; none while
// its external address is not known.
func TestPodConfigFile(t *testing.T) {
	const template = "service {\n\tnode-id <per-pod>\n}\nnetwork {\n\tservice {\n\t\talternate-access-address <per-pod>\n" +
		"\t\talternate-access-port <per-pod>\n\t}\n}\n"
	addr := &PodAddress{Node: "n1", Address: "198.51.100.4", Port: 31001}
	for _, tc := range []struct {
		access  *v1alpha1.ExternalAccess
		addr    *PodAddress
		key     string
		content string
	}{
		{nil, nil, "aero-1.conf", "node-id A00001"},
		{&v1alpha1.ExternalAccess{Type: v1alpha1.ExternalNodePort}, nil, "", ""},
		{&v1alpha1.ExternalAccess{Type: v1alpha1.ExternalNodePort}, addr, "aero-1_n1.conf", "alternate-access-port 31001"},
		{&v1alpha1.ExternalAccess{Type: v1alpha1.ExternalHostPort}, addr, "aero-1_n1.conf", "alternate-access-address 198.51.100.4"},
		{&v1alpha1.ExternalAccess{Type: v1alpha1.ExternalLoadBalancer}, addr, "aero-1.conf", "alternate-access-address 198.51.100.4"},
	} {
		c := newCluster(func(c *v1alpha1.AerospikeCluster) { c.Spec.ExternalAccess = tc.access })
		key, content, ok := PodConfigFile(c, "aero-1", template, tc.addr)
		if key != tc.key || ok != (tc.key != "") || !strings.Contains(content, tc.content) {
			t.Errorf("%+v: key %q ok %v content:\n%s", tc.access, key, ok, content)
		}
	}
}

// The init container copies the file the operator writes for the pod, and a restart in place copies
// the same one (PodFileKeyOf reads it off the pod); a host port opens the service port on the node.
func TestInitContainerCopiesThePodsFile(t *testing.T) {
	for _, tc := range []struct {
		access  *v1alpha1.ExternalAccess
		command string
		key     string
		host    int32
	}{
		{nil, "/etc/aerospike-configmap/$(POD_NAME).conf", "aero-0.conf", 0},
		{&v1alpha1.ExternalAccess{Type: v1alpha1.ExternalLoadBalancer}, "/etc/aerospike-configmap/$(POD_NAME).conf", "aero-0.conf", 0},
		{&v1alpha1.ExternalAccess{Type: v1alpha1.ExternalNodePort}, "/etc/aerospike-configmap/$(POD_NAME)_$(NODE_NAME).conf", "aero-0_n7.conf", 0},
		{&v1alpha1.ExternalAccess{Type: v1alpha1.ExternalHostPort, HostPort: ptr.To[int32](4000)},
			"/etc/aerospike-configmap/$(POD_NAME)_$(NODE_NAME).conf", "aero-0_n7.conf", 4000},
	} {
		c := newCluster(func(c *v1alpha1.AerospikeCluster) { c.Spec.ExternalAccess = tc.access })
		tmpl := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template
		init := tmpl.Spec.InitContainers[0]
		if init.Command[1] != tc.command {
			t.Errorf("%+v: init copies %s, want %s", tc.access, init.Command[1], tc.command)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "aero-0"}, Spec: tmpl.Spec}
		pod.Spec.NodeName = "n7"
		if got := PodFileKeyOf(pod); got != tc.key {
			t.Errorf("%+v: PodFileKeyOf = %s, want %s", tc.access, got, tc.key)
		}
		if got := tmpl.Spec.Containers[0].Ports[0]; got.Name != "service" || got.HostPort != tc.host {
			t.Errorf("%+v: service port %+v, want host port %d", tc.access, got, tc.host)
		}
	}
}
