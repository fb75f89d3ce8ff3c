package cluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

// Issue 38, sequence 1: the StatefulSet is deleted without its pods to grow their volumes, in the same
// edit as a scale-down (or while one steps). Created again, it must ask for every pod not yet removed
// through the door: with the desired size, the StatefulSet controller deleted the highest pods at once.
func TestAStatefulSetRecreatedToGrowVolumesKeepsItsPods(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  int32 // pods that run when the StatefulSet is deleted
		want  int32
		left  []string
		leave bool // the highest pod was recorded leaving and is terminating
	}{
		{"grow with 5 -> 3 in one edit", 5, 5, nil, false},
		{"grow while the scale-down steps (aero-4 gone through the door)", 4, 4, nil, false},
		{"a pod the door let go that terminates is not asked for again", 5, 4, []string{"aero-4"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build(sized(5)))
			for o := tc.pods; o < 5; o++ {
				f.must(f.c.Delete(f.ctx, &corev1.Pod{ObjectMeta: f.meta(ackov1alpha1.StatefulSetPodName("aero", o))}))
			}
			if tc.leave {
				f.record("aero-4", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove})
				f.pod("aero-4", func(p *corev1.Pod) { p.Finalizers = []string{"test/hold"} })
				f.must(f.c.Delete(f.ctx, &corev1.Pod{ObjectMeta: f.meta("aero-4")}))
			}
			f.edit(func(c *ackov1alpha1.AerospikeCluster) {
				c.Spec.Size = 3
				c.Spec.Storage = &ackov1alpha1.StorageSpec{Volumes: []ackov1alpha1.VolumeSpec{{Name: "data",
					Path: "/opt/aerospike/data", Size: resource.MustParse("20Gi")}}}
			})
			// growVolumes deleted it with orphan propagation: its pods run on.
			f.must(f.c.Delete(f.ctx, &appsv1.StatefulSet{ObjectMeta: f.meta("aero")}))
			st := f.observe()
			if _, err := f.r.applyChildren(f.ctx, st); err != nil {
				t.Fatal(err)
			}
			sts := &appsv1.StatefulSet{}
			f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero"}, sts))
			if got := ptr.Deref(sts.Spec.Replicas, 0); got != tc.want {
				t.Fatalf("StatefulSet created with %d replicas over %d pods, want %d", got, tc.pods, tc.want)
			}
		})
	}
}

// meta names an object of the cluster's namespace.
func (f *doorFixture) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: f.key.Namespace, Name: name}
}

// Issue 38, sequence 4: 2 pods at replication-factor 3 hold 2 copies of each partition, so one may be
// down. A scale-up to 5 must not open the budget to 2 before the new pods run (a drain in that window
// evicted both copies); it follows the pods as they come.
func TestTheBudgetCountsThePodsThatRun(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(2), replicationFactor(3)))
	f.edit(sized(5))
	st := f.observe()
	if _, err := f.r.applyChildren(f.ctx, st); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: st.cluster.PodDisruptionBudgetName()}, pdb))
	if got := pdb.Spec.MaxUnavailable.IntValue(); got != 1 {
		t.Fatalf("budget maxUnavailable %d over 2 running pods at replication-factor 3, want 1", got)
	}
	sts := &appsv1.StatefulSet{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero"}, sts))
	for o := int32(2); o < ptr.Deref(sts.Spec.Replicas, 0); o++ {
		f.addPod(sts, ackov1alpha1.StatefulSetPodName("aero", o))
	}
	f.prober.health.ExpectedSize = 5
	if got := f.observe().pdbMaxUnavailable(2); got != 2 {
		t.Fatalf("budget %d once the 5 pods run and the cluster is stable, want 2", got)
	}
}
