package resources

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

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
	c.Spec.Monitoring.Port = 9300
	c.Spec.PodSpec = &v1alpha1.PodOverrides{Sidecars: []v1alpha1.Sidecar{{Container: corev1.Container{
		Name: v1alpha1.ExporterContainerName, Image: "x"}}}}
	if errs := Validate(c); len(errs) != 1 || errs[0].Type != "FieldValueDuplicate" {
		t.Errorf("a sidecar named like the exporter: %v", errs)
	}
}
