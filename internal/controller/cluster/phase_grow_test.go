package cluster

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

// growFixture is one pod of a cluster whose volume "data" the spec asks to be 2Gi, its claim, and the
// claim's StorageClass.
type growFixture struct {
	r   *AerospikeClusterReconciler
	st  *clusterState
	pod *corev1.Pod
	pvc *corev1.PersistentVolumeClaim
}

func newGrowFixture(t *testing.T, mode corev1.PersistentVolumeMode, expandable bool, started, request, capacity string) growFixture {
	t.Helper()
	c := testcluster.Build(testcluster.WithVolumes(testcluster.Volume("data", "/dev/xvdb", "2Gi", mode)))
	c.Spec.Storage.Volumes[0].StorageClassName = ptr.To("disk")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: "aero-0", UID: "pod-1",
		Annotations: map[string]string{ackov1alpha1.AnnotationVolumeSizes: "data=" + started}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-aero-0"}}}}}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: "data-aero-0", UID: "claim-1"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("disk"), Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}},
		Status: corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}}}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "disk"}, AllowVolumeExpansion: &expandable}
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	c2 := fake.NewClientBuilder().WithScheme(sch).WithObjects(pod, pvc, class).Build()
	return growFixture{r: &AerospikeClusterReconciler{Client: c2, APIReader: c2}, st: newClusterState(c, time.Now()), pod: pod, pvc: pvc}
}

func (f growFixture) claimRequest(t *testing.T) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := f.r.Get(context.Background(), client.ObjectKeyFromObject(f.pvc), pvc); err != nil {
		t.Fatal(err)
	}
	q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	return q.String()
}

func TestGrowClaims(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		mode                       corev1.PersistentVolumeMode
		expandable                 bool
		started, request, capacity string
		restart                    bool
		why, request2              string
	}{
		{"a claim asking for less is resized", corev1.PersistentVolumeBlock, true, "1Gi", "1Gi", "1Gi",
			false, "claim data-aero-0 resized to 2Gi", "2Gi"},
		{"a resize under way is waited for", corev1.PersistentVolumeBlock, true, "1Gi", "2Gi", "1Gi",
			false, "claim data-aero-0 holds 1Gi of 2Gi", "2Gi"},
		{"a grown device restarts asd", corev1.PersistentVolumeBlock, true, "1Gi", "2Gi", "2Gi", true, "", "2Gi"},
		{"a grown filesystem needs no restart", corev1.PersistentVolumeFilesystem, true, "1Gi", "2Gi", "2Gi", false, "", "2Gi"},
		{"a class that does not expand refuses, and the claim stays", corev1.PersistentVolumeBlock, false, "1Gi", "1Gi", "1Gi",
			false, `volume "data" cannot grow: StorageClass "disk" does not allow volume expansion (allowVolumeExpansion); ` +
				"create a new cluster and migrate the data", "1Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGrowFixture(t, tc.mode, tc.expandable, tc.started, tc.request, tc.capacity)
			restart, why, err := f.r.growClaims(context.Background(), f.st, f.pod)
			if err != nil || restart != tc.restart || why != tc.why {
				t.Errorf("growClaims = %v, %q, %v; want %v, %q", restart, why, err, tc.restart, tc.why)
			}
			if got := f.claimRequest(t); got != tc.request2 {
				t.Errorf("claim asks for %s, want %s", got, tc.request2)
			}
		})
	}
}

// A pod whose claim is deleted, or being deleted (kubernetes.io/pvc-protection holds it while the pod
// lives), has nothing to grow: growVolumes passes it, records nothing on it, and fails no reconcile
// (model seed 93623: a give-up's claim deleted, the operator killed before the pod's delete, and every
// reconcile failed here before the give-up could finish).
func TestGrowVolumesPassesAPodWhoseClaimIsGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone func(context.Context, client.Client, *corev1.PersistentVolumeClaim) error
	}{
		{"deleted", func(ctx context.Context, c client.Client, pvc *corev1.PersistentVolumeClaim) error {
			return c.Delete(ctx, pvc)
		}},
		{"being deleted", func(ctx context.Context, c client.Client, pvc *corev1.PersistentVolumeClaim) error {
			pvc.Finalizers = []string{"kubernetes.io/pvc-protection"}
			if err := c.Update(ctx, pvc); err != nil {
				return err
			}
			return c.Delete(ctx, pvc)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGrowFixture(t, corev1.PersistentVolumeBlock, true, "1Gi", "1Gi", "1Gi")
			ctx := context.Background()
			if err := tc.gone(ctx, f.r.Client, f.pvc); err != nil {
				t.Fatal(err)
			}
			f.pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			f.st.pods = map[string]*corev1.Pod{f.pod.Name: f.pod}
			if stop, err := f.r.growVolumes(ctx, f.st); stop || err != nil {
				t.Fatalf("growVolumes = %v, %v; want the pod passed", stop, err)
			}
			pod := &corev1.Pod{}
			if err := f.r.Get(ctx, client.ObjectKeyFromObject(f.pod), pod); err != nil {
				t.Fatal(err)
			}
			if got := pod.Annotations[ackov1alpha1.AnnotationVolumeSizes]; got != "data=1Gi" || f.st.grown[f.pod.Name] {
				t.Errorf("sizes recorded %q, grown %v: nothing may be recorded of a claim that is gone", got,
					f.st.grown[f.pod.Name])
			}
			if tc.name == "being deleted" {
				if got := f.claimRequest(t); got != "1Gi" {
					t.Errorf("a claim being deleted was resized to %s", got)
				}
			}
		})
	}
}

func TestClaimTemplatesSmaller(t *testing.T) {
	set := func(sizes ...string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		for i, size := range sizes {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: string(rune('a' + i))},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}})
		}
		return s
	}
	if !claimTemplatesSmaller(set("1Gi", "5Gi"), set("1Gi", "6Gi")) {
		t.Error("a larger template not seen")
	}
	if claimTemplatesSmaller(set("1Gi", "5Gi"), set("1Gi", "5Gi")) || claimTemplatesSmaller(set("2Gi"), set("1Gi")) {
		t.Error("an equal or smaller template taken for growth")
	}
}
