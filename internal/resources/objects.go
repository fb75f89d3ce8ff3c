package resources

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// namedPort is one Aerospike port with the name Services and containers give it.
type namedPort struct {
	name string
	port int32
}

// MetricsPortName is the exporter's port, on its container and on the headless Service.
const MetricsPortName = "metrics"

// aerospikePorts are the ports of every node: clients (service), replication (fabric), the mesh
// heartbeat and the admin port that replaced the info stanza in 8.1.
var aerospikePorts = []namedPort{
	{"service", config.ServicePort},
	{"fabric", config.FabricPort},
	{"heartbeat", config.HeartbeatPort},
	{"admin", config.AdminPort},
}

// ConfigMap holds the rendered aerospike.conf of one rack: the template under the key aerospike.conf,
// and each desired pod's own file, with its node id and external address (PodConfigFile; addresses
// holds the ones known, by pod).
func ConfigMap(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement, template string,
	addresses PodAddresses) *corev1.ConfigMap {
	data := map[string]string{config.FileName: template}
	for ordinal := range rack.Size {
		pod := c.PodName(rack.ID, ordinal)
		if key, content, ok := PodConfigFile(c, pod, template, addresses.Of(pod)); ok {
			data[key] = content
		}
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(c, c.ConfigMapName(rack.ID), c.RackSelectorLabels(rack.ID)),
		Data:       data,
	}
}

// HeadlessService gives every pod a stable DNS name, which the mesh seeds use. It publishes pods
// before they are Ready: a starting node must find its peers to become Ready at all.
func HeadlessService(c *v1alpha1.AerospikeCluster) *corev1.Service {
	ports := aerospikePorts
	if c.MonitoringEnabled() {
		ports = append(slices.Clone(ports), namedPort{MetricsPortName, c.ExporterPort()})
	}
	svc := service(c, c.HeadlessServiceName(), ports)
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.PublishNotReadyAddresses = true
	svc.Annotations = serviceAnnotations(c)
	listOwnedLabels(svc)
	return svc
}

// ClientService is the address clients seed from; they then talk to every node directly.
func ClientService(c *v1alpha1.AerospikeCluster) *corev1.Service {
	svc := service(c, c.ClientServiceName(), aerospikePorts[:1])
	svc.Annotations = serviceAnnotations(c)
	listOwnedLabels(svc)
	return svc
}

// serviceAnnotations are spec.podSpec.serviceAnnotations, nil when none.
func serviceAnnotations(c *v1alpha1.AerospikeCluster) map[string]string {
	if c.Spec.PodSpec == nil || len(c.Spec.PodSpec.ServiceAnnotations) == 0 {
		return nil
	}
	return maps.Clone(c.Spec.PodSpec.ServiceAnnotations)
}

// withLabels is extra with the operator's labels over them: selectors depend on the operator's.
func withLabels(extra, own map[string]string) map[string]string {
	out := maps.Clone(extra)
	if out == nil {
		return own
	}
	maps.Copy(out, own)
	return out
}

func service(c *v1alpha1.AerospikeCluster, name string, ports []namedPort) *corev1.Service {
	var extra map[string]string
	if c.Spec.PodSpec != nil {
		extra = c.Spec.PodSpec.ServiceLabels
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(c, name, withLabels(extra, c.SelectorLabels())),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: c.SelectorLabels(),
		},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: p.name, Port: p.port, TargetPort: intstr.FromInt32(p.port), Protocol: corev1.ProtocolTCP,
		})
	}
	return svc
}

// PodDisruptionBudget lets voluntary disruptions (node drains, and the operator's own evictions) take
// at most maxUnavailable Aerospike pods at a time: whenStable (replication-factor − 1, config.MaxDown)
// while the cluster is stable, and 0 while it migrates or is not stable; whenStable is kept in an
// annotation, so that the budget can follow the readings without the spec. It keeps the default
// unhealthyPodEvictionPolicy: a node that is not Ready must not be evicted for that.
func PodDisruptionBudget(c *v1alpha1.AerospikeCluster, maxUnavailable, whenStable int) *policyv1.PodDisruptionBudget {
	max := intstr.FromInt32(int32(maxUnavailable))
	meta := objectMeta(c, c.PodDisruptionBudgetName(), c.SelectorLabels())
	meta.Annotations = map[string]string{v1alpha1.AnnotationStableMaxUnavailable: strconv.Itoa(whenStable)}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: meta,
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &max,
			Selector:       &metav1.LabelSelector{MatchLabels: c.SelectorLabels()},
		},
	}
}

// HoldEveryPod turns the budget into one that allows no disruption of the pods there are: minAvailable
// = pods, an integer, which Kubernetes' disruption controller counts over the pods themselves. A budget by
// maxUnavailable counts the replicas of the pods' controllers, and pods with none (a StatefulSet deleted
// without its pods, to grow their claims) count for nothing: it would let every healthy pod go.
func HoldEveryPod(pdb *policyv1.PodDisruptionBudget, pods int) {
	pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable = nil, ptr.To(intstr.FromInt32(int32(pods)))
}

// StableMaxUnavailable reads the budget's maxUnavailable while the cluster is stable (false when the
// budget does not say: made by an older operator).
func StableMaxUnavailable(pdb *policyv1.PodDisruptionBudget) (int, bool) {
	n, err := strconv.Atoi(pdb.Annotations[v1alpha1.AnnotationStableMaxUnavailable])
	return n, err == nil && n >= 0
}

// PodMonitorGVK is the Prometheus Operator's PodMonitor, created when its CRDs exist.
var PodMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// PodMonitor asks a Prometheus Operator to scrape every pod's exporter (spec.monitoring), labelled so that
// a Prometheus selects it (spec.monitoring.podMonitor.labels).
func PodMonitor(c *v1alpha1.AerospikeCluster) *unstructured.Unstructured {
	pm := &v1alpha1.PodMonitorSpec{}
	if m := c.Spec.Monitoring; m != nil && m.PodMonitor != nil {
		pm = m.PodMonitor
	}
	meta := objectMeta(c, c.Name, withLabels(pm.Labels, c.SelectorLabels()))
	endpoint := map[string]any{"port": MetricsPortName, "path": "/metrics"}
	setString := func(key, v string) {
		if v != "" {
			endpoint[key] = v
		}
	}
	setString("interval", pm.Interval)
	setString("scrapeTimeout", pm.ScrapeTimeout)
	if len(pm.Relabelings) > 0 {
		endpoint["relabelings"] = relabelings(pm.Relabelings)
	}
	if len(pm.MetricRelabelings) > 0 {
		endpoint["metricRelabelings"] = relabelings(pm.MetricRelabelings)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"selector":            map[string]any{"matchLabels": stringMap(c.SelectorLabels())},
			"podMetricsEndpoints": []any{endpoint},
		},
	}}
	u.SetGroupVersionKind(PodMonitorGVK)
	u.SetNamespace(meta.Namespace)
	u.SetName(meta.Name)
	u.SetLabels(meta.Labels)
	listOwnedLabels(u)
	u.SetOwnerReferences(meta.OwnerReferences)
	return u
}

// listOwnedLabels lists the child's labels in its AnnotationOwnedLabels annotation, for a child whose
// labels come from the spec (serviceLabels, podMonitor.labels): an update then removes a label the spec
// no longer has, and keeps the labels others put on it. Called once the child's annotations are set.
func listOwnedLabels(obj client.Object) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.AnnotationOwnedLabels] = strings.Join(slices.Sorted(maps.Keys(obj.GetLabels())), ",")
	obj.SetAnnotations(annotations)
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// relabelings are the rules as the PodMonitor's JSON (what json.Marshal of the API type gives: the same
// field names and omissions).
func relabelings(rules []v1alpha1.RelabelConfig) []any {
	out := make([]any, 0, len(rules))
	for _, r := range rules {
		m := map[string]any{}
		if len(r.SourceLabels) > 0 {
			labels := make([]any, 0, len(r.SourceLabels))
			for _, l := range r.SourceLabels {
				labels = append(labels, l)
			}
			m["sourceLabels"] = labels
		}
		if r.Separator != nil {
			m["separator"] = *r.Separator
		}
		if r.TargetLabel != "" {
			m["targetLabel"] = r.TargetLabel
		}
		if r.Regex != "" {
			m["regex"] = r.Regex
		}
		if r.Modulus != 0 {
			m["modulus"] = int64(r.Modulus)
		}
		if r.Replacement != nil {
			m["replacement"] = *r.Replacement
		}
		if r.Action != "" {
			m["action"] = r.Action
		}
		out = append(out, m)
	}
	return out
}
