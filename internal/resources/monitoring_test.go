package resources

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/api/v1alpha1"
)

func TestMonitoringExporter(t *testing.T) {
	c := newCluster()
	off := StatefulSet(c, c.RackPlan()[0], "h")
	c.Spec.Monitoring = &v1alpha1.MonitoringSpec{Enabled: true}
	on := StatefulSet(c, c.RackPlan()[0], "h")
	ctrs := on.Spec.Template.Spec.Containers
	i := slices.IndexFunc(ctrs, func(c corev1.Container) bool { return c.Name == v1alpha1.ExporterContainerName })
	if i < 0 {
		t.Fatalf("no exporter in %v", ctrs)
	}
	exp := ctrs[i]
	if exp.Image != v1alpha1.DefaultExporterImage || len(exp.Ports) != 1 || exp.Ports[0].ContainerPort != 9145 ||
		exp.Ports[0].Name != "metrics" {
		t.Errorf("exporter %+v", exp)
	}
	env := map[string]string{}
	for _, e := range exp.Env {
		env[e.Name] = e.Value
	}
	if env["AS_HOST"] != "127.0.0.1" || env["AS_PORT"] != "3000" || env["AGENT_BIND_PORT"] != "9145" {
		t.Errorf("exporter env %v: it must read its own pod's node", env)
	}
	if on.Spec.Template.Annotations[v1alpha1.AnnotationPodSpecHash] == off.Spec.Template.Annotations[v1alpha1.AnnotationPodSpecHash] {
		t.Error("turning monitoring on must roll the pods (a pod spec change)")
	}
}

func TestMonitoringChildren(t *testing.T) {
	c := newCluster()
	c.Spec.Monitoring = &v1alpha1.MonitoringSpec{Enabled: true}
	svc := HeadlessService(c)
	if p := svc.Spec.Ports[len(svc.Spec.Ports)-1]; p.Name != "metrics" || p.Port != 9145 {
		t.Errorf("headless Service ports %v", svc.Spec.Ports)
	}
	pm := PodMonitor(c)
	if pm.GetName() != c.Name || len(pm.GetOwnerReferences()) != 1 || pm.GroupVersionKind() != PodMonitorGVK {
		t.Errorf("PodMonitor %v", pm.Object)
	}
}

// kubePrometheusStackSelector is the podMonitorSelector (and serviceMonitorSelector) a kube-prometheus-stack
// installed with its defaults gives its Prometheus: prometheus.prometheusSpec.podMonitorSelectorNilUsesHelmValues
// is true in its values.yaml, so templates/prometheus/prometheus.yaml selects matchLabels release: <the
// Helm release name>, in every namespace (podMonitorNamespaceSelector {}).
func kubePrometheusStackSelector(t *testing.T, release string) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"release": release}})
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// The PodMonitor carries the user's labels, so a default kube-prometheus-stack finds it (and without them
// it does not), with the scrape settings on its endpoint, and selects the cluster's pods.
func TestPodMonitorFoundByKubePrometheusStack(t *testing.T) {
	c := newCluster()
	c.Spec.Monitoring = &v1alpha1.MonitoringSpec{Enabled: true}
	sel := kubePrometheusStackSelector(t, "kube-prometheus-stack")
	if sel.Matches(labels.Set(PodMonitor(c).GetLabels())) {
		t.Fatal("an unlabelled PodMonitor matched: the test would prove nothing")
	}
	sep := ";"
	c.Spec.Monitoring.PodMonitor = &v1alpha1.PodMonitorSpec{
		Labels:   map[string]string{"release": "kube-prometheus-stack", "app.kubernetes.io/name": "spoofed"},
		Interval: "15s", ScrapeTimeout: "10s",
		Relabelings: []v1alpha1.RelabelConfig{{SourceLabels: []string{"__meta_kubernetes_pod_node_name"},
			TargetLabel: "node", Separator: &sep, Action: "replace"}},
		MetricRelabelings: []v1alpha1.RelabelConfig{{SourceLabels: []string{"__name__"}, Regex: "aerospike_latencies_.*", Action: "drop"}},
	}
	pm := PodMonitor(c)
	if !sel.Matches(labels.Set(pm.GetLabels())) {
		t.Errorf("PodMonitor labels %v do not match %v", pm.GetLabels(), sel)
	}
	if !containsAll(pm.GetLabels(), c.SelectorLabels()) {
		t.Errorf("PodMonitor labels %v lost the operator's", pm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	want := map[string]any{"port": "metrics", "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s",
		"relabelings": []any{map[string]any{"sourceLabels": []any{"__meta_kubernetes_pod_node_name"},
			"targetLabel": "node", "separator": ";", "action": "replace"}},
		"metricRelabelings": []any{map[string]any{"sourceLabels": []any{"__name__"}, "regex": "aerospike_latencies_.*", "action": "drop"}},
	}
	if len(endpoints) != 1 || !equality.Semantic.DeepEqual(endpoints[0], want) {
		t.Errorf("endpoints %v\nwant %v", endpoints, want)
	}
	podSel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	tmpl := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template
	if !labels.SelectorFromSet(podSel).Matches(labels.Set(tmpl.Labels)) {
		t.Errorf("PodMonitor selector %v does not select the pods %v", podSel, tmpl.Labels)
	}
	old := PodMonitor(newClusterWithMonitoring())
	if !NeedsUpdate(old, pm) {
		t.Error("a PodMonitor without the labels and settings must be updated")
	}
}

func newClusterWithMonitoring() *v1alpha1.AerospikeCluster {
	c := newCluster()
	c.Spec.Monitoring = &v1alpha1.MonitoringSpec{Enabled: true}
	return c
}

// The exporter takes the user's variables; the operator's own, which point it at its pod's node, win.
func TestExporterEnv(t *testing.T) {
	c := newClusterWithMonitoring()
	c.Spec.Monitoring.Env = []corev1.EnvVar{{Name: "METRIC_LABELS", Value: "team=storage"}, {Name: "AS_HOST", Value: "10.0.0.1"}}
	ctrs := StatefulSet(c, c.RackPlan()[0], "h").Spec.Template.Spec.Containers
	exp := ctrs[slices.IndexFunc(ctrs, func(c corev1.Container) bool { return c.Name == v1alpha1.ExporterContainerName })]
	env := map[string][]string{}
	for _, e := range exp.Env {
		env[e.Name] = append(env[e.Name], e.Value)
	}
	if !slices.Equal(env["METRIC_LABELS"], []string{"team=storage"}) || !slices.Equal(env["AS_HOST"], []string{"127.0.0.1"}) {
		t.Errorf("exporter env %v", env)
	}
}

// A label taken out of the spec (monitoring.podMonitor.labels, podSpec.serviceLabels) leaves the child
// that carried it (a Prometheus that selects on it must stop finding the PodMonitor); a label someone
// else put on the child stays.
func TestOwnedLabelRemoved(t *testing.T) {
	c := newClusterWithMonitoring()
	c.Spec.ExternalAccess = &v1alpha1.ExternalAccess{Type: v1alpha1.ExternalNodePort}
	if c.Spec.PodSpec == nil {
		c.Spec.PodSpec = &v1alpha1.PodOverrides{}
	}
	setLabels := func(labels map[string]string) {
		c.Spec.Monitoring.PodMonitor = &v1alpha1.PodMonitorSpec{Labels: labels}
		c.Spec.PodSpec.ServiceLabels = labels
	}
	builders := map[string]func() client.Object{
		"PodMonitor":       func() client.Object { return PodMonitor(c) },
		"headless Service": func() client.Object { return HeadlessService(c) },
		"client Service":   func() client.Object { return ClientService(c) },
		"per-pod Service":  func() client.Object { return PodService(c, c.Name+"-0") },
	}
	for name, build := range builders {
		t.Run(name, func(t *testing.T) {
			setLabels(map[string]string{"release": "prom", "team": "db"})
			existing := build()
			existing.SetLabels(withLabels(existing.GetLabels(), map[string]string{"argocd.argoproj.io/instance": "db"}))
			setLabels(map[string]string{"release": "prom"})
			desired := build()
			if !NeedsUpdate(existing, desired) {
				t.Fatal("a child with a label the spec no longer has must be updated")
			}
			ApplyOwnedFields(existing, desired)
			got := existing.GetLabels()
			if _, ok := got["team"]; ok {
				t.Errorf("label team stayed: %v", got)
			}
			if got["release"] != "prom" || got["argocd.argoproj.io/instance"] != "db" || !containsAll(got, desired.GetLabels()) {
				t.Errorf("labels %v", got)
			}
			if NeedsUpdate(existing, desired) {
				t.Error("the updated child still needs an update")
			}
		})
	}
}
