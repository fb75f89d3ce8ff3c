package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

// A pod of an older operator (no prepare-volumes container) whose asd runs on its claim: the claim is
// recorded InUse and kept; one recorded before keeps its method; a pod whose asd never started is
// left alone (nothing ran on its claim yet).
func TestClaimsInUseAreRecordedNotPrepared(t *testing.T) {
	c := testcluster.Build(testcluster.WithVolumes(testcluster.Volume("data", "/opt/aerospike/data", "1Gi", "")))
	pod := func(name string, started bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}}}}}
		if started {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}
		return p
	}
	claim := func(pod, method string) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: "data-" + pod,
			UID: types.UID("claim-" + pod)}}
		if method != "" {
			pvc.Annotations = map[string]string{ackov1alpha1.AnnotationVolumeInitialized: method}
		}
		return pvc
	}
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{claim("aero-0", ""), claim("aero-1", "HeaderCleanup"), claim("aero-2", "")}
	cl := fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).Build()
	r := &AerospikeClusterReconciler{Client: cl, APIReader: cl}
	st := newClusterState(c, time.Now())
	st.pods = map[string]*corev1.Pod{"aero-0": pod("aero-0", true), "aero-1": pod("aero-1", true), "aero-2": pod("aero-2", false)}
	if _, err := r.prepareVolumes(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	want := map[string]ackov1alpha1.InitializedVolume{
		"aero-0": {Name: "data", ClaimUID: "claim-aero-0", Method: ackov1alpha1.VolumeInUse},
		"aero-1": {Name: "data", ClaimUID: "claim-aero-1", Method: ackov1alpha1.VolumeInitHeaderCleanup},
	}
	for name, w := range want {
		if got := st.initialized[name]; len(got) != 1 || got[0] != w {
			t.Errorf("%s: recorded %v, want %v", name, got, w)
		}
	}
	if _, ok := st.initialized["aero-2"]; ok {
		t.Error("a pod whose asd never started had its claim recorded")
	}
	for pod, method := range map[string]string{"aero-0": "InUse", "aero-1": "HeaderCleanup", "aero-2": ""} {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := cl.Get(context.Background(), types.NamespacedName{Namespace: c.Namespace, Name: "data-" + pod}, pvc); err != nil {
			t.Fatal(err)
		}
		if got := pvc.Annotations[ackov1alpha1.AnnotationVolumeInitialized]; got != method {
			t.Errorf("claim of %s records %q, want %q", pod, got, method)
		}
	}
	if len(st.events) != 0 {
		t.Errorf("events %v: nothing was prepared", st.events)
	}
}
