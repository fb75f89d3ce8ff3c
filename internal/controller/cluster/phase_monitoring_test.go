package cluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/resources"
)

// podMonitorCRD is enough of the Prometheus Operator's CRD for the operator to create PodMonitors.
func podMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "podmonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "podmonitors", Kind: "PodMonitor", ListKind: "PodMonitorList", Singular: "podmonitor"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

var _ = Describe("spec.monitoring", func() {
	It("adds the exporter and a PodMonitor, and takes the PodMonitor away when turned off", func() {
		crd := podMonitorCRD()
		if err := k8s.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		ns, w := newNamespace()
		w.podMonitors = true
		startOperator(w, operations.Config{})
		c := sampleCluster(ns, "watched", 1)
		c.Spec.Monitoring = &ackov1alpha1.MonitoringSpec{Enabled: true, PodMonitor: &ackov1alpha1.PodMonitorSpec{
			Labels: map[string]string{"release": "prom", "team": "db"}}}
		key := create(c)
		waitRunning(key)
		pm := &unstructured.Unstructured{}
		pm.SetGroupVersionKind(resources.PodMonitorGVK)
		Eventually(func() error { return k8s.Get(context.Background(), key, pm) }, timeout, poll).Should(Succeed())
		Expect(pm.GetOwnerReferences()).To(ContainElement(HaveField("Name", "watched")))
		Expect(pm.GetLabels()).To(And(HaveKeyWithValue("release", "prom"), HaveKeyWithValue("team", "db")))

		By("a label taken out of podMonitor.labels leaves the PodMonitor")
		update(key, func(c *ackov1alpha1.AerospikeCluster) { delete(c.Spec.Monitoring.PodMonitor.Labels, "team") })
		Eventually(func() map[string]string {
			Expect(k8s.Get(context.Background(), key, pm)).To(Succeed())
			return pm.GetLabels()
		}, timeout, poll).ShouldNot(HaveKey("team"))
		Expect(pm.GetLabels()).To(HaveKeyWithValue("release", "prom"))
		waitRunning(key)

		before := podUIDs(key)
		update(key, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Monitoring.Enabled = false })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(context.Background(), key, pm))
		}, timeout, poll).Should(BeTrue())
		waitRunning(key)
		Expect(podUIDs(key)).NotTo(Equal(before), "turning monitoring off rolls the pods")
		Expect(fetch(key).Status.Pods["watched-0"].LastRestartReason).To(Equal(ackov1alpha1.RestartReasonPodSpecChanged))
	})
})
