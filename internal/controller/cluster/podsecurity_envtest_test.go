package cluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/testcluster"
)

// The restricted sample's pods, as its StatefulSets would create them, go to the API server itself: its
// PodSecurity admission admits them in a namespace that enforces the baseline standard and refuses them
// under the restricted one for runAsNonRoot alone (docs/scheduling.md says why asd runs as root).
var _ = Describe("The restricted sample under the API server's PodSecurity admission", func() {
	ctx := context.Background()

	createPod := func(level string) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pss-" + level + "-",
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, ns) })
		c, err := testcluster.SampleNamed("acko_v1alpha1_aerospikecluster_restricted.yaml")
		Expect(err).NotTo(HaveOccurred())
		c.Namespace = ns.Name
		sts := resources.StatefulSet(c, c.RackPlan()[0], "h")
		pod := &corev1.Pod{ObjectMeta: *sts.Spec.Template.ObjectMeta.DeepCopy(), Spec: *sts.Spec.Template.Spec.DeepCopy()}
		pod.Namespace, pod.Name = ns.Name, sts.Name+"-0"
		// What the StatefulSet controller adds: a volume for each claim template.
		for _, claim := range sts.Spec.VolumeClaimTemplates {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name + "-" + pod.Name}}})
		}
		err = k8s.Create(ctx, pod)
		if err == nil {
			// envtest deletes no namespace's contents: the pod goes by hand, so that no later spec sees it.
			DeferCleanup(func() { _ = k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)) })
		}
		return err
	}

	It("admits its pods under baseline and refuses them under restricted for runAsNonRoot alone", func() {
		Expect(createPod("baseline")).To(Succeed())
		err := createPod("restricted")
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "restricted: %v", err)
		// One reason (the admission lists each after the colon, comma-separated): runAsNonRoot.
		Expect(err.Error()).To(MatchRegexp(`violates PodSecurity "restricted:latest": runAsNonRoot != true \([^)]*\)$`))
	})
})
