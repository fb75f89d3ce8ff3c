package cluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

var _ = Describe("Storage volumes", func() {
	var (
		ns  string
		w   *world
		op  *operator
		ctx = context.Background()
	)

	BeforeEach(func() {
		ns, w = newNamespace()
		op = startOperator(w, operations.Config{})
	})

	claim := func(name string) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{}
		ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pvc)).To(Succeed())
		return pvc
	}
	recorded := func(key types.NamespacedName, pod string) func() []ackov1alpha1.InitializedVolume {
		return func() []ackov1alpha1.InitializedVolume { return fetch(key).Status.Pods[pod].InitializedVolumes }
	}

	It("prepares each new claim once, never again for a recreated pod, and always for a new claim", func() {
		c := sampleCluster(ns, "vol", 2)
		c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{
			{Name: "data", Path: "/dev/xvdb", Size: resource.MustParse("10Gi"), VolumeMode: corev1.PersistentVolumeBlock},
			{Name: "work", Path: "/opt/aerospike/work", Size: resource.MustParse("1Gi"), InitMethod: ackov1alpha1.VolumeInitNone},
		}}
		key := create(c)
		waitRunning(key)

		data0, work0 := claim("data-vol-0"), claim("work-vol-0")
		By("the plan of each pod: the volume's method for its claim, recorded on the claim and in status")
		pod := &corev1.Pod{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "vol-0"}, pod)).To(Succeed())
		Expect(pod.Annotations[ackov1alpha1.AnnotationVolumePlan]).To(Equal(
			"data=HeaderCleanup:" + string(data0.UID) + " work=None:" + string(work0.UID)))
		Expect(data0.Annotations[ackov1alpha1.AnnotationVolumeInitialized]).To(Equal("HeaderCleanup"))
		Expect(work0.Annotations[ackov1alpha1.AnnotationVolumeInitialized]).To(Equal("None"))
		Eventually(recorded(key, "vol-0"), timeout, poll).Should(ConsistOf(
			ackov1alpha1.InitializedVolume{Name: "data", ClaimUID: string(data0.UID), Method: ackov1alpha1.VolumeInitHeaderCleanup},
			ackov1alpha1.InitializedVolume{Name: "work", ClaimUID: string(work0.UID), Method: ackov1alpha1.VolumeInitNone},
		))
		Expect(w.preparedRuns()).To(Equal(map[types.UID]int{data0.UID: 1, claim("data-vol-1").UID: 1}))
		Expect(eventMessages(key, ackov1alpha1.EventVolumeInitialized)).To(ContainElement(
			"Volume data of pod vol-0 (claim data-vol-0) prepared: HeaderCleanup"))

		By("a pod recreated on its claims prepares nothing")
		Expect(k8s.Delete(ctx, pod)).To(Succeed())
		Eventually(func() string {
			p := &corev1.Pod{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "vol-0"}, p); err != nil || p.UID == pod.UID {
				return ""
			}
			return p.Annotations[ackov1alpha1.AnnotationVolumePlan]
		}, timeout, poll).Should(Equal("data=None:" + string(data0.UID) + " work=None:" + string(work0.UID)))
		waitRunning(key)
		Expect(w.preparedRuns()[data0.UID]).To(Equal(1))
		Expect(recorded(key, "vol-0")()).To(ContainElement(HaveField("Method", ackov1alpha1.VolumeInitHeaderCleanup)))

		By("a new claim under the same name is prepared, and status names it")
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "vol-0"}, pod)).To(Succeed())
		data0 = claim("data-vol-0")
		Expect(k8s.Delete(ctx, data0)).To(Succeed())
		// No controller-manager here to release kubernetes.io/pvc-protection.
		Expect(client.IgnoreNotFound(k8s.Patch(ctx, data0.DeepCopy(),
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))).To(Succeed())
		Expect(k8s.Delete(ctx, pod)).To(Succeed())
		Eventually(func() types.UID {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "data-vol-0"}, pvc); err != nil {
				return ""
			}
			return pvc.UID
		}, timeout, poll).ShouldNot(Or(BeEmpty(), Equal(data0.UID)))
		newData := claim("data-vol-0")
		Eventually(recorded(key, "vol-0"), timeout, poll).Should(ContainElement(
			ackov1alpha1.InitializedVolume{Name: "data", ClaimUID: string(newData.UID), Method: ackov1alpha1.VolumeInitHeaderCleanup}))
		Expect(w.preparedRuns()).To(HaveKeyWithValue(newData.UID, 1))
		Expect(w.preparedRuns()[data0.UID]).To(Equal(1))
		waitRunning(key)
	})

	It("sends no request, no write, when a healthy cluster with storage is reconciled again", func() {
		c := sampleCluster(ns, "still", 3)
		c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{
			{Name: "data", Path: "/dev/xvdb", Size: resource.MustParse("10Gi"), VolumeMode: corev1.PersistentVolumeBlock}}}
		key := create(c)
		waitRunning(key)
		Eventually(recorded(key, "still-2"), timeout, poll).ShouldNot(BeEmpty())
		waitWritesSettled(op)
		before, requests := op.writes.count(), op.requests.Load()
		for range 10 {
			res, err := op.reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.RequeueAfter).To(BeZero(), "a steady cluster needs no periodic requeue")
		}
		Expect(op.writes.list()[before:]).To(BeEmpty())
		Expect(op.requests.Load()-requests).To(BeZero(), "the claims are read for new pods only")
	})
})
